"""The service's shortcuts equal the long way: the encoded snapshot is the document the snapshot writer
makes, after any arrivals, departures and acknowledged steps; the extender's verdict cache stays within
its bound and never answers with a verdict made on another version of a PM."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.policies.base import make_policy
from origamig.runtime.plan_run import StepStatus
from origamig.serve.live import Live
from origamig.serve.plan_desk import PlanDesk
from origamig.serve.store import Store
from origamig.serve.verdicts import VerdictCache
from origamig.snapshot.document import load_snapshot, snapshot_document
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


def test_the_encoded_snapshot_follows_plans_step_by_step(tmp_path: Path) -> None:
    """Moves acknowledged one by one, a failed step undone, arrivals between them: after each, the
    encoded snapshot is the writer's document."""
    seed = load_snapshot(EXAMPLES / "fragmented-a100.json")  # its pending VM needs moves to be admitted
    for outcome in ("done", "failed"):
        policy = make_policy("origamig", deterministic=True, work_limit=100000)
        live = Live(Store.create(tmp_path / f"{outcome}.db", seed.document), policy)
        assert json.loads(live.snapshot_json()) == reference(live)  # rendered once before the moves
        with live.writing, live.lock:
            (work,) = live.runtime.check(20.0)  # the worker's check, in this process
            (plan,) = live.runtime.end_call(work, 20.0).plans
            live.commit()
        assert len(plan.steps) >= 2
        desk = PlanDesk(live)
        n = 0
        while plan.running:
            live.arrive({"id": f"a{n}", "cpu": 1, "ram_gb": 1, "gis": []})
            (step, *_) = plan.next_steps()
            last = step == len(plan.steps) - 1
            desk.acknowledge(plan.id, step, StepStatus(outcome if last else "done"))
            assert json.loads(live.snapshot_json()) == reference(live)
            n += 1
        assert plan.status == ("done" if outcome == "done" else "failed")
        live.store.close()
