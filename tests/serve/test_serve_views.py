"""The service's shortcuts equal the long way: the encoded snapshot is the document the snapshot writer
makes, after any arrivals and departures; the extender's verdict cache stays within its bound and
never answers with a verdict made on another version of a PM; a plan's steps judged on its own
servers get the verdicts of a replay over the whole cluster."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.bilp import Limits
from origamig.call.solve import solve_snapshot
from origamig.cluster.catalog import default_catalog
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import VmSpec
from origamig.judge.replay import ReplayResult, replay_plan
from origamig.policies.base import make_policy
from origamig.serve.fit import ARRIVAL_FITS, fit_on_pm
from origamig.serve.live import Live
from origamig.serve.optimizer import Optimizer
from origamig.serve.plans import LivePlan, placement_after, plan_vms, replay_on_live
from origamig.serve.store import Store
from origamig.serve.verdicts import VerdictCache
from origamig.snapshot.document import load_snapshot, parse_snapshot, snapshot_document
from tests.profiles import examples
from tests.serve_helpers import EXAMPLES

PROFILES = ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb")


def reference(live: Live) -> dict:
    """The snapshot as the writer (`snapshot_document`) makes it from the live records."""
    doc = {**live.seed.document, "vms": [dict(e) for e in live.entries.values()]}
    return snapshot_document(dataclasses.replace(live.seed, document=doc), live.dc.placement)


def test_the_encoded_snapshot_is_the_writers_document_after_any_changes(tmp_path: Path) -> None:
    seed = load_snapshot(EXAMPLES / "mixed-h100-a100.json")
    live = Live(Store.create(tmp_path / "s.db", seed.document), make_policy("origamig", check_interval_s=1e9))
    rng = random.Random(7)
    assert json.loads(live.snapshot_json()) == reference(live)
    for n in range(60):
        if rng.random() < 0.6 or not live.dc.vms:
            gis = [rng.choice(PROFILES)]
            live.arrive({"id": f"new{n}", "cpu": 4, "ram_gb": 16, "gis": gis, "gpu_model": "A100-80GB"})
        else:
            live.depart(rng.choice(sorted(live.entries)))
        if n % 7 == 0:
            assert json.loads(live.snapshot_json()) == reference(live)
    assert json.loads(live.snapshot_json()) == reference(live)
    live.store.close()


ops = st.lists(
    st.tuples(st.integers(0, 5), st.integers(0, 9), st.integers(0, 3), st.booleans()), max_size=200
)


@settings(max_examples=examples(60), deadline=None)
@given(ops, st.integers(1, 25))
def test_the_verdict_cache_is_bounded_and_never_stale(steps: list, bound: int) -> None:
    cache = VerdictCache(max_verdicts=bound)
    truth: dict[tuple[int, int], tuple[int, str]] = {}
    for shape, pm, version, write in steps:
        if write:
            verdict = f"{shape}/{pm}@{version}"
            cache.put(shape, pm, version, verdict)
            truth[(shape, pm)] = (version, verdict)
        else:
            got = cache.get(shape, pm, version)
            if got is not None:  # a hit is exactly the last verdict put for that shape, PM and version
                assert truth[(shape, pm)] == (version, got)
        assert len(cache) <= bound


# --- a plan's steps are judged on its own servers alone ------------------------------------------------
def full_replay(dc: DataCenter, plan: LivePlan, upto: int) -> ReplayResult:
    """The replay over every PM of the cluster (the reference the restricted one must equal)."""
    named = plan_vms(plan.steps)
    placement = {v: pl for v, pl in dc.placement.items() if v not in named}
    vms = {v: spec for v, spec in dc.vms.items() if v not in plan.admitted}
    pending = {v: spec for v, spec in {**dc.pending, **dc.vms}.items() if v in plan.admitted}
    for v, pl in plan.base.items():
        if v in dc.vms:
            placement[v] = pl
    return replay_plan(dc.pms, vms, placement, pending, plan.steps[:upto], intra_pm_moves=dc.intra_pm_moves)


@pytest.fixture(scope="module")
def mixed_plan() -> tuple[DataCenter, LivePlan]:
    doc = json.loads((EXAMPLES / "mixed-h100-a100.json").read_text())
    doc["pms"] = [{k: v for k, v in pm.items() if k != "powered_off"} for pm in doc["pms"]]  # as served
    snap = parse_snapshot(doc)
    out = solve_snapshot(snap, limits=Limits(deterministic=True, work_limit=100000))
    assert out.plan is not None and out.plan.steps
    dc = snap.datacenter()
    steps = tuple(s.to_dict() for s in out.plan.steps)
    moved = plan_vms(steps)
    pms = frozenset(dc.index[s[k]] for s in steps for k in ("pm", "from", "to") if k in s)
    admitted = tuple(v for v in moved if v in dc.pending)
    base = {v: pl for v, pl in dc.placement.items() if v in moved}
    return dc, LivePlan(1, "admission", 0.0, steps, base, admitted=admitted, pms=pms)


@settings(max_examples=examples(40), deadline=None)
@given(st.data())
def test_the_replay_on_the_plans_servers_equals_the_replay_on_all(
    mixed_plan: tuple, data: st.DataObject
) -> None:
    dc0, plan = mixed_plan
    dc = dc0.copy()
    # The live state moved on: acknowledged steps, VMs that left, VMs placed by others anywhere.
    done = data.draw(st.integers(0, len(plan.steps)))
    dc.apply_placement(placement_after(dc, plan, done))
    for v in data.draw(st.lists(st.sampled_from(sorted(dc.vms)), max_size=4, unique=True)):
        dc.remove(v)
    for n in range(data.draw(st.integers(0, 6))):
        vm = VmSpec(f"late{n}", 2000, 8000, (default_catalog().gpu("H100-80GB").profile("1g.10gb"),))
        j = data.draw(st.integers(0, len(dc.pms) - 1))
        hit = fit_on_pm(dc, j, vm, ARRIVAL_FITS["ff"])
        if not isinstance(hit, str):
            dc.place(vm, hit[1])
    for upto in range(len(plan.steps) + 1):
        mine, every = replay_on_live(dc, plan, upto), full_replay(dc, plan, upto)
        assert (mine.ok, mine.failed_step, mine.reason) == (every.ok, every.failed_step, every.reason)
        named = plan_vms(plan.steps)
        assert {v: p for v, p in mine.final_placement.items() if v in named} == {
            v: p for v, p in every.final_placement.items() if v in named
        }


def test_the_encoded_snapshot_follows_plans_step_by_step(tmp_path: Path) -> None:
    """Moves acknowledged one by one, a failed step undone, arrivals between them: after each, the
    encoded snapshot is the writer's document."""
    seed = load_snapshot(EXAMPLES / "fragmented-a100.json")  # its pending VM needs moves to be admitted
    policy = make_policy("origamig", deterministic=True, work_limit=100000)
    for outcome in ("done", "failed"):
        live = Live(Store.create(tmp_path / f"{outcome}.db", seed.document), policy)
        assert json.loads(live.snapshot_json()) == reference(live)  # rendered once before the moves
        opt = Optimizer(live)
        try:
            opt.check(20.0)
        finally:
            opt.stop()
        (plan,) = live.running_plans()
        assert len(plan.steps) >= 2
        for n in range(len(plan.steps)):
            live.arrive({"id": f"a{n}", "cpu": 1, "ram_gb": 1, "gis": []})
            result = outcome if n == len(plan.steps) - 1 else "done"
            live.acknowledge(plan.id, n, result)
            assert json.loads(live.snapshot_json()) == reference(live)
        assert live.plan(plan.id).status == ("done" if outcome == "done" else "failed")
        live.store.close()
