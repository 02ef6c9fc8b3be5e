"""`solve` on the cluster as it really is: the default goal admits every VM that fits, the plan has no
move nobody needs, mixed fleets and VMs that cannot move (docs/solving.md#goals, #one-plan).

Every plan is judged by the independent replay (judge/replay.py): each step valid, the final state
exactly the placement `solve` reports, no pinned VM migrated, no move inside a PM where the platform
cannot make one.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.bilp.backends.base import make_limits
from origamig.call.decision import parking_cost
from origamig.call.goals import CallWeights, Goal
from origamig.call.solve import Outcome, solve_snapshot
from origamig.judge.objective import evaluate
from origamig.judge.replay import replay_plan
from origamig.plan.executor import Infeasible, plan_migrations
from origamig.snapshot.document import Snapshot, load_snapshot, parse_snapshot
from tests.paths import ROOT
from tests.profiles import examples

MIXED = ROOT / "examples" / "mixed-h100-a100.json"
LIMITS = make_limits("highs", 20.0, None, True)
H, A = "H100-80GB", "A100-80GB"


def solve(snap: Snapshot, **options: Any) -> Outcome:
    return solve_snapshot(snap, solver="highs", limits=LIMITS, **options)


def assert_sound(snap: Snapshot, out: Outcome) -> None:
    """Valid at every step in the replay, ending in the reported placement; no VM started and then
    moved, none moved twice but for parking; the pinned VMs never in a migrate step."""
    running = {v: snap.vms[v] for v in snap.placement}
    pending = {v: snap.vms[v] for v in snap.pending}
    steps = out.plan.to_json() if out.plan else []
    result = replay_plan(
        snap.pms,
        running,
        snap.placement,
        pending,
        steps,
        target=out.placement,
        intra_pm_moves=snap.intra_pm_moves,
    )
    assert result.ok, result.reason
    assert dict(result.final_placement) == dict(out.placement)
    started = {s["vm"] for s in steps if s["op"] == "start"}
    moved = Counter(s["vm"] for s in steps if s["op"] == "migrate" and not s.get("parking"))
    assert not started & set(moved), "a VM started and then moved"
    assert all(n == 1 for n in moved.values()), moved
    pinned = {v for v, spec in snap.vms.items() if not spec.migratable}
    assert not pinned & {s["vm"] for s in steps if s["op"] == "migrate"}


def assert_no_move_can_go(snap: Snapshot, out: Outcome) -> None:
    """No moved VM can be put back where it was: the end state would break a constraint, have no
    valid order, or score less (Eq. 5 under the goal's weights, less parking)."""
    if out.plan is None:
        return
    dc = snap.datacenter()
    w = CallWeights(out.goal, snap.weights).consolidation(snap.pms)
    vms = dict(snap.vms)
    target = {v: pl for v, pl in out.placement.items() if dc.placement.get(v) != pl}

    def value(t: dict, plan: Any) -> float:
        end = {**dc.placement, **t}
        return evaluate(dc.pms, vms, end, dc.placement, w).value - parking_cost(plan, dc.vms, w)

    score = value(target, out.plan)
    for v in [v for v in target if v in dc.placement]:
        trial = {u: pl for u, pl in target.items() if u != v}
        try:
            plan = plan_migrations(dc, trial)
        except Exception:  # an end state that breaks a constraint: the move is needed
            continue
        if isinstance(plan, Infeasible):
            continue
        assert value(trial, plan) < score - 1e-6, f"the move of {v} is not needed"


# --- the two-server cases: big VMs that fit are admitted ------------------------------------------
def cluster(pms: list[dict[str, Any]], vms: list[dict[str, Any]]) -> Snapshot:
    return parse_snapshot({"version": 1, "pms": pms, "vms": vms})


def server(pm_id: str, off: bool = False) -> dict[str, Any]:
    return {
        "id": pm_id,
        "cpu": 192,
        "ram_gb": 2048,
        "gpus": [H] * 8,
        **({"powered_off": True} if off else {}),
    }


def seven(vm_id: str, n: int, pm: str | None = None, gpus: list[int] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    vm: dict[str, Any] = {
        "id": vm_id,
        "cpu": 21 * n,
        "ram_gb": 224 * n,
        "gis": ["7g.80gb"] * n,
        "gpu_model": H,
    }
    if pm is not None:
        vm["placement"] = {"pm": pm, "gis": [{"gpu": g, "start": 0} for g in gpus]}
    return vm


def test_big_vms_that_fit_are_admitted_by_default_and_turned_away_by_the_paper_weights() -> None:
    cases = {
        "3x 7g.80gb beside an empty, switched-off server": cluster(
            [server("h0"), server("h1", off=True)],
            [seven("busy", 6, "h0", [0, 1, 2, 3, 4, 5]), seven("new", 3)],
        ),
        "5x 7g.80gb on a server with 7 free GPUs": cluster(
            [server("h0")], [seven("one", 1, "h0", [0]), seven("new", 5)]
        ),
        "8x 7g.80gb while an empty server is free": cluster(
            [server("h0"), server("h1", off=True)], [seven("one", 1, "h0", [0]), seven("new", 8)]
        ),
    }
    for case, snap in cases.items():
        out = solve(snap)
        assert out.admitted == ("new",), (case, out.reasons)
        assert out.plan is not None and out.plan.cost.live_migrations == 0, case
        assert_sound(snap, out)
        paper = solve(snap, goal="paper")
        assert paper.rejected == ("new",), case
        assert paper.reasons["new"].startswith("admitting it does not pay under these weights"), case


# --- the mixed H100 / A100-80GB example -----------------------------------------------------------
def test_the_mixed_example_admits_every_vm_with_no_wasted_move() -> None:
    snap = load_snapshot(MIXED)
    out = solve(snap)
    assert set(out.admitted) == set(snap.pending) and not out.rejected and not out.waiting
    assert out.direct and out.plan is not None
    assert_sound(snap, out)
    assert_no_move_can_go(snap, out)
    models = {v: snap.pms[out.placement[v].pm].gpus[out.placement[v].gis[0].gpu].name for v in out.admitted}
    assert models["a100-4g"] == A and models["h100-1g20"] == H  # gpu_model given: a constraint
    flexible = [v for v in snap.pending if snap.vms[v].alternatives]
    assert sorted(flexible) == ["any-1g", "any-2g", "any-3g"]
    assert all(out.placement[v].gis for v in flexible)


def test_goal_admit_moves_no_more_than_the_whole_cluster_call_for_as_many_admissions() -> None:
    snap = load_snapshot(MIXED)
    auto = solve(snap, goal="admit")
    whole = solve(snap, goal="admit", neighborhood="all")
    assert len(auto.admitted) == len(whole.admitted) == len(snap.pending)
    assert auto.plan is not None and whole.plan is not None
    assert auto.plan.cost.live_migrations <= whole.plan.cost.live_migrations
    for out in (auto, whole):
        assert_sound(snap, out)


@pytest.mark.slow
def test_a_pinned_vm_never_moves_even_to_free_servers() -> None:
    snap = load_snapshot(MIXED)
    assert not snap.vms["dev-09"].migratable
    out = solve(snap, goal="consolidate")
    assert out.placement["dev-09"] == snap.placement["dev-09"]
    assert_sound(snap, out)


# --- random mixed clusters ---------------------------------------------------------------------------------
def random_cluster(seed: int) -> Snapshot:
    """3-5 servers of two H100s or two A100-80GBs; running VMs first fit (some pinned), 2-4 pending
    VMs, some without a GPU model; intra-PM moves on or off."""
    rng = random.Random(seed)
    profiles = {"1g.10gb": (1, 7), "2g.20gb": (2, 3), "3g.40gb": (4, 2), "4g.40gb": (4, 1), "7g.80gb": (8, 1)}
    pms = [
        {"id": f"s{j}", "cpu": 48, "ram_gb": 512, "gpus": [rng.choice([H, A])] * 2}
        for j in range(rng.randint(3, 5))
    ]
    used: dict[tuple[int, int], int] = {}
    vms: list[dict[str, Any]] = []
    for n in range(rng.randint(3, 9)):
        name = rng.choice(list(profiles))
        size, _ = profiles[name]
        starts = {"1g.10gb": range(7), "2g.20gb": (0, 2, 4), "3g.40gb": (0, 4)}.get(name, (0,))
        j = rng.randrange(len(pms))
        spot = next(
            ((k, z) for k in range(2) for z in starts if not used.get((j, k), 0) & (((1 << size) - 1) << z)),
            None,
        )
        if spot is None:
            continue
        k, z = spot
        used[(j, k)] = used.get((j, k), 0) | (((1 << size) - 1) << z)
        vm = {"id": f"r{n}", "cpu": 4, "ram_gb": 32, "gis": [name], "gpu_model": pms[j]["gpus"][0],
              "placement": {"pm": pms[j]["id"], "gis": [{"gpu": k, "start": z}]}}  # fmt: skip
        if rng.random() < 0.2:
            vm["migratable"] = False
        vms.append(vm)
    for n in range(rng.randint(2, 4)):
        vm = {"id": f"p{n}", "cpu": 4, "ram_gb": 32, "gis": [rng.choice(list(profiles))]}
        if rng.random() < 0.3:
            vm["gpu_model"] = rng.choice([H, A])
        vms.append(vm)
    return parse_snapshot({"version": 1, "pms": pms, "vms": vms, "intra_pm_moves": rng.random() < 0.5})


@settings(max_examples=examples(12), deadline=None)
@given(seed=st.integers(0, 100_000), goal=st.sampled_from(list(Goal)))
def test_every_plan_is_sound_and_has_no_move_nobody_needs(seed: int, goal: Goal) -> None:
    snap = random_cluster(seed)
    out = solve(snap, goal=goal)
    assert_sound(snap, out)
    if out.direct:
        assert_no_move_can_go(snap, out)
    if goal in (Goal.BALANCED, Goal.ADMIT):  # nothing that fits as the cluster is is turned away
        for v in out.rejected:
            assert "as that server is now" not in out.reasons[v], out.reasons[v]
