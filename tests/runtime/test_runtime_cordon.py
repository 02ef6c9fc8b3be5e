"""Cordoned PMs in the runtime (`Runtime.cordon`): nothing new lands on them — no arrival, no call, no
VM of a target adopted after the cordon, no parking move — while the VMs there stay, and a target
that moves VMs off them is adopted. Every state is judged by the independent checker
(tests/runtime_driver.py)."""

from __future__ import annotations

from origamig.call.kinds import CallKind
from origamig.plan.executor import Infeasible, plan_migrations
from origamig.plan.steps import CreateGi, Migrate, Start
from origamig.policies.base import Work, make_policy
from origamig.policies.moves import plan_moves
from tests.builders import at, datacenter, pm, vm
from tests.runtime.test_runtime_plans import moving
from tests.runtime_driver import Driver, FakePolicy


def test_arrivals_keep_off_a_cordoned_pm_until_it_is_uncordoned() -> None:
    # First fit would take pm0 (the lowest); cordoned, pm1 takes the first VM, and once pm1 is full
    # (one 7g.40gb per GPU) the next one waits rather than landing on pm0.
    d = Driver([pm("pm0"), pm("pm1")], make_policy("ff"))
    d.runtime.cordon(0)
    for n in range(3):
        d.arrive_at(1.0 + n, vm(f"v{n}", ["7g.40gb"]))
    d.run()
    assert {d.dc.placement[v].pm for v in d.dc.placement} == {1}
    assert ("v2" not in d.dc.placement) and not d.dc.vms_on(0)
    d.runtime.uncordon(0)
    d.arrive_at(10.0, vm("v3", ["7g.40gb"]))
    d.run()
    assert d.dc.placement["v3"].pm == 0


def test_calls_keep_off_a_cordoned_pm() -> None:
    policy = FakePolicy(calls={10.0: [lambda dc, locked: None]})
    d = Driver([pm("pm0"), pm("pm1")], policy)
    d.runtime.cordon(1)
    d.run()
    assert policy.asked == [(10.0, frozenset({1}))]
    assert d.runtime.locked(20.0) == frozenset({1})


def test_a_target_adopted_after_a_cordon_lands_nothing_there_and_moves_vms_off_cordoned_pms() -> None:
    a, b = vm("a", ["3g.20gb"]), vm("b", ["3g.20gb"])
    # One call (it solves 5 s) moves a from pm0 to pm1 and b from pm2 to pm0; pm1 is cordoned while
    # it solves: a stays where it is, b is still moved (off pm2, onto pm0, neither cordoned), and
    # pm2 cordoned too would not keep b from leaving it.
    target = {"a": at(1, (0, 0)), "b": at(0, (1, 0))}
    d = Driver(
        [pm("pm0"), pm("pm1"), pm("pm2")],
        FakePolicy(calls=moving(target, modeled_s=5.0)),
        [(a, at(0, (0, 0))), (b, at(2, (0, 0)))],
    )
    d.run(until=12.0)
    d.runtime.cordon(1)
    d.runtime.cordon(2)
    d.run()
    assert d.dc.placement["a"] == at(0, (0, 0))  # nothing landed on pm1
    assert d.dc.placement["b"] == at(0, (1, 0))  # b left the cordoned pm2
    assert [(v, src, dst) for v, src, dst, *_ in d.moves()] == [("b", 2, 0)]


def test_no_vm_parks_on_a_pm_kept_off() -> None:
    # Two VMs without GIs swap pm0 and pm1, each waiting for the other's CPU: one parks on a third PM.
    # With pm2 kept off, it parks on pm3; with both kept off, there is no plan.
    a, b = vm("a", cpu=6, ram_gb=8), vm("b", cpu=6, ram_gb=8)
    dc = datacenter([pm(f"pm{j}", [], cpu=8, ram_gb=16) for j in range(4)], [(a, at(0)), (b, at(1))])
    swap = {"a": at(1), "b": at(0)}
    plan = plan_migrations(dc, swap, keep_off=frozenset({2}))
    assert not isinstance(plan, Infeasible)
    landed = {s.to_pm for s in plan.steps if isinstance(s, Migrate)} | {
        s.pm for s in plan.steps if isinstance(s, CreateGi | Start)
    }
    assert "pm2" not in landed and "pm3" in landed
    assert isinstance(plan_migrations(dc, swap, keep_off=frozenset({2, 3})), Infeasible)


def test_a_call_ending_after_a_drain_leaves_the_vms_the_drain_moves_alone() -> None:
    # The call (solving 5 s) moves a to pm1; meanwhile a drain of pm0 — a call started and ended at
    # once, as the service runs one — moves a to pm2. The call's target is adopted without a.
    a = vm("a", ["3g.20gb"])
    d = Driver(
        [pm("pm0"), pm("pm1"), pm("pm2")],
        FakePolicy(calls=moving({"a": at(1, (0, 0))}, modeled_s=5.0)),
        [(a, at(0, (0, 0)))],
    )
    d.run(until=12.0)
    d.runtime.cordon(0)
    drained = {"a": at(2, (0, 0))}
    work = Work(CallKind.DRAIN, frozenset({0, 2}), drained, plan=plan_moves(d.dc, drained))
    d.runtime.start_call(work, 12.0)
    end = d.runtime.end_call(work, 12.0)
    assert [p.kind for p in end.plans] == [CallKind.DRAIN]
    d.run()
    assert d.dc.placement["a"] == at(2, (0, 0))
    assert [(v, src, dst) for v, src, dst, *_ in d.moves()] == [("a", 0, 2)]
