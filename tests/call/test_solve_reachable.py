"""Every optimum `solve` returns has a plan: tiny snapshots against brute force, both solvers.

The brute force (`test_bilp_model._all_placements`) lists every feasible target of a tiny region;
the executor says which of them can be reached by an always-valid plan, and what its parking moves
cost. A call with no-good cuts (docs/solving.md#no-good-cuts) must end at the best *reachable* value
(the current state counts as reachable), and whatever it applies must replay valid, step by step,
in the independent replay (judge/replay.py).
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from origamig.bilp import NoGood, restrict, solve_region
from origamig.call.decision import Status, decide, parking_cost
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, Weights
from origamig.judge.objective import evaluate
from origamig.judge.replay import replay_plan
from origamig.plan.executor import Plan, plan_migrations
from tests.bilp.test_bilp_model import EXACT, _all_placements, _tiny
from tests.profiles import examples

NO_GOODS = 5


def _brute(dc: DataCenter, w: Weights) -> tuple[float, float, list[dict[str, Placement]]]:
    """(value now, best reachable value after parking costs, every feasible target)."""
    region = restrict(dc, [0, 1], ["new"])
    ids = list(region.vms)
    now = evaluate(dc.pms, region.vms, dc.placement, dc.placement, w, region.pms, ids).value
    best, targets = now, []
    for t in _all_placements(dc, region, ids):
        targets.append(t)
        changed = {v: pl for v, pl in t.items() if dc.placement.get(v) != pl}
        if not changed:
            continue
        plan = plan_migrations(dc, changed)
        if isinstance(plan, Plan):
            value = evaluate(dc.pms, region.vms, t, dc.placement, w, region.pms, ids).value
            best = max(best, value - parking_cost(plan, dc.vms, w))
    return now, best, targets


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10**6),
    migration=st.sampled_from([0.0, 10.0, 40.0]),
    free_start=st.sampled_from([1.0, 3.0]),
)
def test_both_solvers_end_at_the_best_reachable_value_with_a_valid_plan(
    seed: int, migration: float, free_start: float
) -> None:
    dc = _tiny(seed)
    w = Weights(migration=migration, free_start=free_start)
    now, best, targets = _brute(dc, w)
    # Each cut excludes at least the target it was made for: with one per feasible target, a call
    # can always pass every unreachable optimum (a solver may meet more than NO_GOODS of them).
    limit = max(NO_GOODS, len(targets))
    for solver in ("highs", "cpsat"):
        d = decide(dc, [0, 1], ["new"], w, solver, EXACT, no_good_limit=limit)
        assert d.status is not Status.PLAN_INFEASIBLE or best == now, (solver, d.reason)
        assert d.status in (Status.IMPROVED, Status.UNCHANGED, Status.PLAN_INFEASIBLE), (solver, d.status)
        if not d.applied:
            assert best == now, (solver, d.status, best, now)
            continue
        assert d.plan is not None and d.after is not None
        assert d.after.value - d.parking_cost == best, (solver, d.after.value, d.parking_cost, best)
        steps = d.plan.to_json()
        replay = replay_plan(dc.pms, dc.vms, dc.placement, dc.pending, steps, target=d.changed)
        assert replay.ok, (solver, replay.reason)


def _same_on(target: Mapping[str, Placement], cut: NoGood, dc: DataCenter) -> bool:
    """Does `target` place the cut's VMs as the cut's target does, with the same GIs (profile and
    start) on every GPU those VMs use? (written here from the row's meaning, not from the code)"""
    for v in cut.vms:
        a, b = target.get(v), cut.target.get(v)
        if a is None or b is None or a.pm != b.pm or [s.gpu for s in a.gis] != [s.gpu for s in b.gis]:
            return False
    specs = {**dc.vms, **dc.pending}

    def on(t: Mapping[str, Placement], j: int, k: int) -> list[tuple[str, int]]:
        return sorted(
            (specs[v].gis[n].name, s.start)
            for v, pl in t.items()
            if pl.pm == j
            for n, s in enumerate(pl.gis)
            if s.gpu == k
        )

    gpus = {(cut.target[v].pm, s.gpu) for v in cut.vms for s in cut.target[v].gis}
    return all(on(target, j, k) == on(cut.target, j, k) for j, k in gpus)


# Tiny instances whose optimum (default weights) moves or admits a VM: a cut names VMs that change.
CHANGING = [0, 4, 9]


@pytest.mark.parametrize("seed", CHANGING)
@pytest.mark.parametrize("solver", ["highs", "cpsat"])
def test_a_no_good_cut_removes_exactly_the_targets_placing_its_vms_that_way(seed: int, solver: str) -> None:
    dc = _tiny(seed)
    w = Weights()
    region = restrict(dc, [0, 1], ["new"])
    ids = list(region.vms)
    first = solve_region(dc, [0, 1], ["new"], w, solver=solver, limits=EXACT)
    movers = tuple(v for v, pl in first.target.items() if dc.placement.get(v) != pl)
    assert movers
    cut = NoGood(dict(first.target), movers)
    second = solve_region(dc, [0, 1], ["new"], w, solver=solver, limits=EXACT, no_goods=[cut])
    assert second.result.proved_optimal
    assert not _same_on(second.target, cut, dc)
    _, _, targets = _brute(dc, w)
    allowed = [t for t in targets if not _same_on(t, cut, dc)]
    best = max(evaluate(dc.pms, region.vms, t, dc.placement, w, region.pms, ids).value for t in allowed)
    assert second.result.objective == best


def test_a_cut_that_would_exclude_the_current_placement_is_refused() -> None:
    dc = _tiny(1)
    cut = NoGood(dict(dc.placement), tuple(dc.placement))
    with pytest.raises(ValueError, match="current placement"):
        solve_region(dc, [0, 1], ["new"], Weights(), no_goods=[cut])
