"""Plans in time (docs/plans.md#in-time), on the runtime alone with a scripted policy: what a move
costs and holds, who waits for whom, and what a changed state does to a plan. Every state of every
run is judged by the independent checker, holds included (tests/runtime_driver.py)."""

from __future__ import annotations

import pytest

from origamig.call.kinds import CallKind
from origamig.cluster.datacenter import DataCenter
from origamig.policies.base import Work
from origamig.policies.moves import plan_moves
from origamig.policies.tc.compaction import TcRule, compact
from origamig.policies.tc.policy import TurkkanCompaction
from origamig.runtime.migration import MigrationModel
from origamig.runtime.plan_run import MoveState, PlanStatus
from tests.builders import at, pm, vm
from tests.runtime_driver import Driver, FakePolicy

LINK = 12.5e9  # bit/s of one PM's migration link
GI_S = 1.0  # create or destroy one GI (models/gpus/A100-40GB.toml)


def inter_s(spec) -> float:
    """A move between PMs: RAM + GI memory over the links, one GI created and destroyed per GI."""
    n_bytes = spec.ram_mb * 1e6 + sum(p.memory_gb * 1e9 for p in spec.gis)
    return n_bytes * 8 / LINK + 2 * GI_S * len(spec.gis)


def moving(target, at_s: float = 10.0, kind: CallKind = CallKind.CONSOLIDATION, **kw):
    """A scripted call at `at_s` whose plan is the executor's for `target` on the state then."""

    def call(dc: DataCenter, locked: frozenset[int]) -> Work:
        plan = plan_moves(dc, target)
        pms = frozenset(
            {pl.pm for pl in target.values()} | {dc.placement[v].pm for v in target if v in dc.placement}
        )
        return Work(kind, pms, dict(target), plan=plan, **kw)

    return {at_s: [call]}


A7, B7 = vm("a", ["7g.40gb"]), vm("b", ["7g.40gb"])


def test_a_move_between_pms_takes_its_copy_time_and_holds_its_destination() -> None:
    # a (7g.40gb: 28 cores, 112 GB) moves from pm0 GPU 0 to pm1 GPU 0 at 10 s.
    d = Driver([pm("pm0"), pm("pm1")], FakePolicy(calls=moving({"a": at(1, (0, 0))})), [(A7, at(0, (0, 0)))])
    d.run(until=10.0)
    held = d.dc.holds
    assert len(held) == 1
    [(spec, where)] = held.values()
    assert where == at(1, (0, 0)) and spec.cpu_m == A7.cpu_m and spec.ram_mb == A7.ram_mb
    assert d.dc.placement["a"] == at(0, (0, 0))  # it still runs at its source
    assert d.dc.free_cpu_m(1) == 80_000 - A7.cpu_m and d.dc.occupancy(1, 0) == 0xFF
    d.run()
    [(v, src, dst, start, end)] = d.moves()
    assert (v, src, dst, start) == ("a", 0, 1, 10.0)
    assert end == pytest.approx(10.0 + inter_s(A7))  # 152 GB at 12.5 Gbit/s + 2 s: 99.28 s
    assert d.dc.placement["a"] == at(1, (0, 0)) and not d.dc.holds and not d.dc.is_active(0)


def test_the_migration_model_sets_rates_and_gi_times() -> None:
    model = MigrationModel(bandwidth_gbit_s=25.0, gi_operation_s=0.0)
    d = Driver(
        [pm("pm0"), pm("pm1")], FakePolicy(calls=moving({"a": at(1, (0, 0))})), [(A7, at(0, (0, 0)))], model
    )
    d.run()
    [(_, _, _, start, end)] = d.moves()
    assert end - start == pytest.approx(152e9 * 8 / 25e9)
    with pytest.raises(Exception, match="bandwidth_gbit_s"):
        MigrationModel(bandwidth_gbit_s=0)


def test_a_tc_compaction_and_an_origamig_plan_of_the_same_moves_cost_the_same() -> None:
    # pm0 holds two 1g.5gb VMs on its two GPUs; pm1 two 3g.20gb (room at starts 0-3 of each GPU).
    # TC (the literal rule: two GPUs vacated) moves both small VMs to pm1; an OrigaMIG-kind call with
    # that very target must take the same simulated time and hold the same resources.
    s1, s2 = vm("s1", ["1g.5gb"]), vm("s2", ["1g.5gb"])
    c1, c2 = vm("c1", ["3g.20gb"]), vm("c2", ["3g.20gb"])
    placed = [(s1, at(0, (0, 0))), (s2, at(0, (1, 0))), (c1, at(1, (0, 4))), (c2, at(1, (1, 4)))]
    pms = [pm("pm0"), pm("pm1")]
    probe = Driver(pms, FakePolicy(), placed).dc
    target = compact(probe, TcRule.LITERAL).moves
    assert set(target) == {"s1", "s2"} and all(pl.pm == 1 for pl in target.values())

    tc = Driver(pms, TurkkanCompaction(period_s=100.0, tc_rule="literal"), placed)
    tc.run(until=2000.0)
    ours = Driver(pms, FakePolicy(calls=moving(target, at_s=100.0)), placed)
    ours.run()
    assert tc.moves() == ours.moves()
    assert [e[1:] for e in tc.log if e[0] == "move_started"] == [
        e[1:] for e in ours.log if e[0] == "move_started"
    ]
    # Both moves use the links of pm0 and pm1: the second waits for the first.
    (_, _, _, _, end1), (_, _, _, start2, end2) = ours.moves()
    assert start2 == end1 and end2 - start2 == pytest.approx(inter_s(s2))


def test_moves_on_disjoint_links_run_side_by_side() -> None:
    pms = [pm(f"pm{j}") for j in range(4)]
    placed = [(A7, at(0, (0, 0))), (B7, at(2, (0, 0)))]
    target = {"a": at(1, (0, 0)), "b": at(3, (0, 0))}
    d = Driver(pms, FakePolicy(calls=moving(target)), placed)
    d.run()
    assert len(d.plans()) == 2  # parts that share no PM are plans of their own
    (_, _, _, s1, e1), (_, _, _, s2, e2) = d.moves()
    assert s1 == s2 == 10.0 and e1 == e2 == pytest.approx(10.0 + inter_s(A7))


def test_a_vm_that_fits_with_no_move_is_not_queued_behind_an_evacuation() -> None:
    # One admission target: b evacuates pm0 to pm1 (99 s), and p starts on pm2 where it fits at once.
    pms = [pm(f"pm{j}") for j in range(3)]
    p = vm("p", ["1g.5gb"])
    policy = FakePolicy(
        where={"p": "defer"},
        calls=moving({"b": at(1, (0, 0)), "p": at(2, (0, 0))}, kind=CallKind.ADMISSION, admitted=("p",)),
    )
    d = Driver(pms, policy, [(B7, at(0, (0, 0)))])
    d.arrive_at(5.0, p)
    d.run()
    started = next(e for e in d.log if e[0] == "vm_started")
    assert started == ("vm_started", 10.0 + GI_S, "p")
    assert len(d.plans()) == 2


def test_an_arrival_during_a_move_uses_only_what_the_move_does_not_hold() -> None:
    # a moves pm0 GPU 0 → pm1 GPU 0; at 50 s (mid-move) n asks for a 7g.40gb: pm1 GPU 0 is held, so the
    # only place is pm1 GPU 1; a second one finds pm0 GPU 1.
    n1, n2 = vm("n1", ["7g.40gb"]), vm("n2", ["7g.40gb"])

    class FirstFree(FakePolicy):
        def arrive(self, dc, spec, now, locked):
            from origamig.policies.arrival_rule import first_fit
            from origamig.policies.base import Placed, Rejection

            hit = first_fit(dc, spec, locked)
            return hit if isinstance(hit, Rejection) else Placed(hit)

    policy = FirstFree(calls=moving({"a": at(1, (0, 0))}))
    d = Driver([pm("pm0", cpu=160), pm("pm1", cpu=160)], policy, [(A7, at(0, (0, 0)))])
    d.arrive_at(50.0, n1)
    d.arrive_at(51.0, n2)
    d.run()
    placed = {e[2]: e[3] for e in d.log if e[0] == "placed"}
    assert placed == {"n1": at(0, (1, 0)), "n2": at(1, (1, 0))}
    assert d.dc.placement["a"] == at(1, (0, 0))


def test_a_departure_removes_its_moves() -> None:
    # a leaves mid-move: the move is cancelled, its hold freed, the plan ends; b's later move stays.
    pms = [pm(f"pm{j}") for j in range(2)]
    placed = [(A7, at(0, (0, 0))), (B7, at(0, (1, 0)))]
    d = Driver(pms, FakePolicy(calls=moving({"a": at(1, (0, 0)), "b": at(1, (1, 0))})), placed)
    d.depart_at(50.0, "a")
    d.run(until=50.0)
    [plan] = d.plans()
    assert plan.state[1] == MoveState.REMOVED and "a" not in d.dc.vms
    assert plan.state[2] == MoveState.RUNNING  # b's move took the links at once
    d.run()
    assert plan.status == PlanStatus.DONE and d.dc.placement["b"] == at(1, (1, 0)) and not d.dc.holds


def test_a_move_whose_destination_was_taken_replans_the_rest() -> None:
    # a then b move pm0 → pm1 (one after the other: they share the links). While a moves, an arrival
    # x takes b's target (pm1 GPU 1, start 0, a 3g.20gb); when b's turn comes its plan is planned
    # again: b's 3g.20gb is refitted on pm1 by the default GI placement (GPU 0, start 4, beside a).
    a3, b3, x = vm("a", ["3g.20gb"]), vm("b", ["3g.20gb"]), vm("x", ["1g.5gb"])
    pms = [pm("pm0"), pm("pm1")]
    placed = [(a3, at(0, (0, 0))), (b3, at(0, (1, 0)))]
    policy = FakePolicy(where={"x": at(1, (1, 0))}, calls=moving({"a": at(1, (0, 0)), "b": at(1, (1, 0))}))
    d = Driver(pms, policy, placed)
    d.arrive_at(20.0, x)
    d.run()
    [plan] = d.plans()
    assert plan.replans == 1 and plan.status == PlanStatus.DONE
    assert d.dc.placement["b"] == at(1, (0, 4)) and d.dc.placement["x"] == at(1, (1, 0))
    assert MoveState.REPLACED in plan.state


def test_a_move_that_cannot_be_replanned_is_dropped() -> None:
    # As above, but x (a 7g.40gb) fills pm1 GPU 1 and y the rest of GPU 0: b's move has nowhere to go
    # on pm1; the plan ends aborted ("stale") and b stays where it runs.
    a3, b3, x, y = vm("a", ["3g.20gb"]), vm("b", ["3g.20gb"]), vm("x", ["7g.40gb"]), vm("y", ["3g.20gb"])
    where = {"x": at(1, (1, 0)), "y": at(1, (0, 4))}
    policy = FakePolicy(where=where, calls=moving({"a": at(1, (0, 0)), "b": at(1, (1, 0))}))
    d = Driver([pm("pm0"), pm("pm1")], policy, [(a3, at(0, (0, 0))), (b3, at(0, (1, 0)))])
    d.arrive_at(20.0, x)
    d.arrive_at(21.0, y)
    d.run()
    [plan] = d.plans()
    assert plan.status == PlanStatus.ABORTED and plan.cause == "stale"
    assert d.dc.placement["b"] == at(0, (1, 0)) and d.dc.placement["a"] == at(1, (0, 0))


def test_a_pending_vm_a_dropped_plan_was_to_start_keeps_its_turn() -> None:
    p, q, x = vm("p", ["7g.40gb"]), vm("q", ["1g.5gb"]), vm("x", ["7g.40gb"])
    policy = FakePolicy(
        where={"p": "defer", "q": "defer", "x": at(0, (0, 0))},
        calls=moving({"p": at(0, (0, 0))}, at_s=10.0, kind=CallKind.ADMISSION, admitted=("p",)),
    )
    d = Driver([pm("pm0")], policy)
    d.arrive_at(1.0, p)
    d.arrive_at(2.0, q)
    d.run(until=9.0)
    assert list(d.dc.pending) == ["p", "q"]
    # The call solves for 5 s; x arrives meanwhile and takes p's target: nothing of the target fits.
    policy.calls = {
        10.0: [
            lambda dc, locked: Work(
                CallKind.ADMISSION, frozenset({0}), {"p": at(0, (0, 0))}, admitted=("p",), modeled_s=5.0
            )
        ]
    }
    d.arrive_at(12.0, x)
    d.run()
    assert not d.plans() and list(d.dc.pending) == ["p", "q"]


def test_calls_keep_off_pms_with_moves_and_may_not_take_them() -> None:
    from origamig.runtime.lifecycle import ProtocolError

    pms = [pm(f"pm{j}") for j in range(3)]

    def greedy(dc: DataCenter, locked: frozenset[int]) -> Work:
        return Work(CallKind.CONSOLIDATION, frozenset({0, 1, 2}), {})

    calls = moving({"a": at(1, (0, 0))})
    calls[20.0] = [greedy]
    policy = FakePolicy(calls=calls)
    d = Driver(pms, policy, [(A7, at(0, (0, 0)))])
    with pytest.raises(ProtocolError, match="locked PMs"):
        d.run()
    assert policy.asked[-1] == (20.0, frozenset({0, 1}))


def test_a_check_put_off_while_moves_run_is_made_once_a_move_ends_even_by_a_departure() -> None:
    # A policy that, like TC, compacts only when no plan runs and asks again at once: its check at
    # 20 s finds the PMs busy, so the loop waits for a move to end — here a's move, cut short by a's
    # departure at 50 s — and then asks again.
    class OneAtATime(FakePolicy):
        next_t = 10.0

        def next_check(self, now: float) -> float | None:
            return max(self.next_t, now) if self.calls else None

        def work(self, dc, now, locked=frozenset()):
            self.asked.append((now, locked))
            if locked:
                return None
            self.next_t = now + 10.0
            (make,) = self.calls.pop(min(self.calls))
            return make(dc, locked)

    calls = moving({"a": at(1, (0, 0))})
    calls[11.0] = moving({"b": at(1, (1, 0))})[10.0]
    policy = OneAtATime(calls=calls)
    d = Driver([pm("pm0"), pm("pm1")], policy, [(A7, at(0, (0, 0))), (B7, at(0, (1, 0)))])
    policy.next_t = 10.0
    d.depart_at(50.0, "a")
    d.run()
    asked = dict(reversed(policy.asked))  # the first ask at each time
    assert sorted(asked) == [10.0, 20.0, 50.0]
    assert asked[20.0] and not asked[50.0]  # busy at 20 s, free at 50 s
    assert d.dc.placement["b"] == at(1, (1, 0))
