"""`solve` admits everything admissible: successive calls, their chained plan, goals, reasons.

Every plan here is judged by the independent replay (judge/replay.py): each step valid, and the
final state exactly the placement `solve` reports (docs/solving.md#the-call-loop).
"""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.product.solve_admission import held_out_cluster
from origamig.bilp.backends.base import make_limits
from origamig.call.goals import Goal
from origamig.call.solve import Outcome, solve_snapshot
from origamig.judge.replay import replay_plan
from origamig.plan.executor import Plan, chain_plans, plan_migrations
from origamig.plan.steps import PowerOff, PowerOn
from origamig.snapshot.document import Snapshot, load_snapshot, parse_snapshot
from tests.builders import A30, A100, at, datacenter, pm, vm
from tests.paths import ROOT

H100_CLUSTER = ROOT / "examples" / "fleets" / "h100-cluster.json"
LIMITS = make_limits("highs", 20.0, None, True)


def solve(snap: Snapshot, **options: Any) -> Outcome:
    return solve_snapshot(snap, solver="highs", limits=LIMITS, **options)


def assert_replays(snap: Snapshot, out: Outcome) -> None:
    """The plan is valid at every step and ends exactly in the reported placement."""
    running = {v: snap.vms[v] for v in snap.placement}
    pending = {v: snap.vms[v] for v in snap.pending}
    steps = out.plan.to_json() if out.plan else []
    result = replay_plan(snap.pms, running, snap.placement, pending, steps, target=out.placement)
    assert result.ok, result.reason
    assert dict(result.final_placement) == dict(out.placement)


def test_the_h100_example_admits_both_pending_vms_where_one_call_admits_one() -> None:
    snap = load_snapshot(H100_CLUSTER)
    out = solve(snap)
    assert out.admitted == ("new-0", "new-1") and not out.waiting and not out.rejected
    assert [c.neighborhood.kind for c in out.calls][:2] == ["admission", "admission"]
    assert_replays(snap, out)
    single = solve(snap, calls=1)
    assert single.admitted == ("new-0",) and single.waiting == ("new-1",)
    assert single.reasons["new-1"] == "outside the call budget (--calls 1): no call reached it"


@pytest.mark.parametrize(("servers", "seed"), [(12, 0), (12, 1), (40, 0)])
def test_held_out_clusters_admit_all_eight_pending_vms_with_a_valid_plan(servers: int, seed: int) -> None:
    snap = parse_snapshot(held_out_cluster(servers, seed))
    assert len(snap.pending) == 8
    out = solve(snap)
    assert len(out.admitted) == 8, out.reasons
    assert_replays(snap, out)


def test_a_call_budget_leaves_the_rest_waiting_with_that_reason() -> None:
    snap = parse_snapshot(held_out_cluster(12, 0))  # needs two admission calls
    out = solve(snap, calls=1)
    assert len(out.calls) == 1 and 0 < len(out.admitted) < 8
    assert out.waiting and not out.rejected
    for v in out.waiting:
        assert out.reasons[v] == "outside the call budget (--calls 1): no call reached it"
    assert_replays(snap, out)


def _doc(pms: list[dict[str, Any]], vms: list[dict[str, Any]]) -> Snapshot:
    return parse_snapshot({"version": 1, "pms": pms, "vms": vms})


A30_PM = {"cpu": 80, "ram_gb": 512, "gpus": ["A30-24GB"]}


def test_the_issues_a30_case_admits_the_pending_vm_with_one_move() -> None:
    # A VM with two 1g.6gb at starts 1 and 2 of the only A30 with room; a pending 2g.12gb needs two
    # aligned free slices: the VM's GIs must shift (over their own slots, in turns if need be).
    full = [{"gpu": 0, "start": 0}]
    snap = _doc(
        [{"id": "p0", **A30_PM}, {"id": "p1", **A30_PM}],
        [
            {"id": "a", "cpu": 8, "ram_gb": 32, "gis": ["1g.6gb", "1g.6gb"],
             "placement": {"pm": "p0", "gis": [{"gpu": 0, "start": 1}, {"gpu": 0, "start": 2}]}},
            {"id": "big", "cpu": 8, "ram_gb": 32, "gis": ["4g.24gb"], "placement": {"pm": "p1", "gis": full}},
            {"id": "new", "cpu": 8, "ram_gb": 32, "gis": ["2g.12gb"]},
        ],
    )  # fmt: skip
    for solver in ("highs", "cpsat"):
        for goal in Goal:
            out = solve_snapshot(snap, solver=solver, limits=make_limits(solver, 20.0, None, True), goal=goal)
            assert out.status == "improved" and out.admitted == ("new",), (solver, goal, out.note)
            assert {m.vm for m in out.plan.moves if m.from_pm is not None} == {"a"}  # type: ignore[union-attr]
            assert_replays(snap, out)


def test_goal_admit_moves_nothing_and_goal_consolidate_switches_off_at_least_as_much() -> None:
    snap = load_snapshot(H100_CLUSTER)
    results = {}
    for goal in Goal:
        out = solve(snap, goal=goal)
        assert out.admitted == ("new-0", "new-1"), goal
        assert_replays(snap, out)
        results[goal] = out
    admit = results[Goal.ADMIT]
    assert admit.plan is not None and admit.plan.cost.live_migrations == 0
    assert all(c.neighborhood.kind == "admission" for c in admit.calls)

    def on(out: Outcome) -> tuple[int, int]:
        hosts = {pl.pm for pl in out.placement.values()}
        gpus = {(pl.pm, s.gpu) for pl in out.placement.values() for s in pl.gis}
        return len(hosts), len(gpus)

    assert on(results[Goal.CONSOLIDATE]) <= on(results[Goal.PAPER]) <= on(admit)


def test_a_pending_vm_without_cpu_anywhere_is_rejected_with_that_reason() -> None:
    snap = _doc(
        [{"id": "p0", "cpu": 8, "ram_gb": 64, "gpus": ["A30-24GB"]}],
        [
            {"id": "a", "cpu": 6, "ram_gb": 16, "gis": ["1g.6gb"],
             "placement": {"pm": "p0", "gis": [{"gpu": 0, "start": 0}]}},
            {"id": "new", "cpu": 4, "ram_gb": 16, "gis": ["1g.6gb"]},
        ],
    )  # fmt: skip
    out = solve(snap)
    assert out.rejected == ("new",)
    assert out.reasons["new"].startswith(
        "no server has 4 cores and 16 GB of RAM free (most free: p0 with 2 cores"
    )


def test_a_pending_vm_without_a_free_start_is_rejected_with_that_reason() -> None:
    # A30: 1g.6gb at 0 and 2g.12gb at 2 leave slice 1, where no 2g.12gb can start, and no repacking helps.
    snap = _doc(
        [{"id": "p0", **A30_PM}],
        [
            {"id": "a", "cpu": 4, "ram_gb": 16, "gis": ["1g.6gb", "2g.12gb"],
             "placement": {"pm": "p0", "gis": [{"gpu": 0, "start": 0}, {"gpu": 0, "start": 2}]}},
            {"id": "new", "cpu": 4, "ram_gb": 16, "gis": ["2g.12gb"]},
        ],
    )  # fmt: skip
    out = solve(snap)
    assert out.rejected == ("new",)
    assert out.reasons["new"] == (
        "no A30-24GB GPU on a server with 4 cores and 16 GB free has a free start for 2g.12gb, "
        "even after repacking the 1 servers of its call"
    )


def test_chained_plans_switch_a_server_off_only_if_it_ends_empty() -> None:
    # Plan 1 empties pm1 (v moves to pm0); plan 2, from the state plan 1 leaves, starts w on pm1.
    v, w = vm("v", ["1g.5gb"]), vm("w", ["1g.5gb"])
    dc = datacenter([pm("pm0", [A100]), pm("pm1", [A100]), pm("pm2", [A30])], [(v, at(1, (0, 3)))], [w])
    first = plan_migrations(dc, {"v": at(0, (0, 0))})
    assert isinstance(first, Plan) and PowerOff("pm1") in first.steps
    middle = dc.copy()
    middle.apply_placement({"v": at(0, (0, 0))})
    second = plan_migrations(middle, {"w": at(1, (0, 0))})
    assert isinstance(second, Plan) and PowerOn("pm1") in second.steps
    end = middle.copy()
    end.apply_placement({"w": at(1, (0, 0))})
    chained = chain_plans(dc, [first, second], end)
    power = [s for s in chained.steps if isinstance(s, PowerOn | PowerOff)]
    assert power == [PowerOn("pm0")]
    result = replay_plan(dc.pms, dc.vms, dc.placement, dc.pending, chained.to_json(), target=end.placement)
    assert result.ok, result.reason
    assert chained.cost.migrations == 1 and chained.cost.starts == 1
