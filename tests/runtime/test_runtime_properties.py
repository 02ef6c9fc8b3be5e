"""Invariants of plans in time under random load: every state of a run — each move holding its
destination while its VM still holds its source, arrivals and departures meanwhile — satisfies the
CPU, RAM and slice constraints (the independent checker after every event, holds included), and the
runtime's books close: no hold outlives its move, no pending VM is lost."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.call.kinds import CallKind
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, VmSpec
from origamig.policies.arrival_rule import first_fit
from origamig.policies.base import Deferred, Placed, Rejection, Work, make_policy
from origamig.policies.moves import plan_moves
from origamig.runtime.migration import MigrationModel
from origamig.runtime.plan_run import ENDED_MOVES
from origamig.sim.engine import Simulation
from origamig.sim.workload import Request
from tests.profiles import examples
from tests.strategies import pm_lists, vm_specs

H = 3600.0


@st.composite
def streams(draw: st.DrawFn) -> list[Request]:
    """Busy streams: up to 60 VMs in an hour, living 5 to 60 minutes (churn makes room to move into)."""
    n = draw(st.integers(10, 60))
    out = []
    for i in range(n):
        spec = draw(vm_specs(vm_id=f"v{i}"))
        arrival = draw(st.floats(0, H, allow_nan=False))
        lifetime = draw(st.floats(300, H, allow_nan=False))
        out.append(Request(spec, arrival, lifetime))
    return out


class RandomMover:
    """Arrivals by first fit (deferred when nothing fits); every minute a call moves a few random
    running VMs to random places that fit the state without them, and starts pending VMs that fit:
    plans with starts, moves between and inside PMs, parking — off the PMs with moves under way."""

    name = "random-mover"

    def __init__(self, seed: int) -> None:
        import random

        self.rng = random.Random(seed)

    def arrive(self, dc: DataCenter, vm: VmSpec, now: float, locked: frozenset[int]):
        hit = first_fit(dc, vm, locked)
        return Deferred("waits") if isinstance(hit, Rejection) else Placed(hit)

    def depart(self, dc: DataCenter, vm_id: str, now: float) -> None:
        """Nothing to forget: the random mover keeps no state of its own."""

    def next_check(self, now: float) -> float:
        return (now // 60 + 1) * 60

    def work(self, dc: DataCenter, now: float, locked: frozenset[int] = frozenset()) -> Work | None:
        if locked:
            return None  # one call's plans at a time
        probe = dc.copy()
        target: dict[str, Placement] = {}
        running = sorted(probe.placement)
        for v in self.rng.sample(running, min(3, len(running))):
            spec = probe.vms[v]
            old = probe.remove(v)
            choices = [j for j in range(len(dc.pms)) if self.rng.random() < 0.7]
            hit = first_fit(probe, spec, frozenset(range(len(dc.pms))) - frozenset(choices))
            new = old if isinstance(hit, Rejection) else hit
            probe.place(spec, new)
            if new != old:
                target[v] = new
        admitted = []
        for v, spec in list(probe.pending.items()):
            hit = first_fit(probe, spec)
            if not isinstance(hit, Rejection):
                probe.place(spec, hit)
                target[v] = hit
                admitted.append(v)
        if not target:
            return None
        plan = plan_moves(dc, target)
        if plan is None:
            return None
        pms = frozenset(
            {pl.pm for pl in target.values()} | {dc.placement[v].pm for v in target if v in dc.placement}
        )
        return Work(CallKind.ADMISSION, pms, target, admitted=tuple(admitted), plan=plan, modeled_s=5.0)

    def finished(self, dc: DataCenter, work: Work, now: float) -> None:
        """Nothing to record: the properties are checked on the state, not on the policy."""

    def counters(self) -> dict[str, float]:
        return {}


@settings(max_examples=examples(40), deadline=None)
@given(
    pms=pm_lists(2, 4),
    requests=streams(),
    seed=st.integers(0, 2**16),
    bandwidth=st.sampled_from([0.05, 1.0, 12.5]),  # slow links keep moves running across many events
)
def test_random_plans_in_time_keep_every_state_valid(pms, requests, seed, bandwidth) -> None:
    sim = Simulation(
        pms, requests, RandomMover(seed), 0.0, 2 * H, deterministic=True, debug_check=True,
        migration=MigrationModel(bandwidth_gbit_s=bandwidth),
    )  # fmt: skip
    sim.run()
    _books_close(sim)
    if len(requests) >= 30 and bandwidth < 1:
        assert sim.runtime.plans.plans, "a busy run must make plans"


def _books_close(sim: Simulation) -> None:
    """No hold outlives its move; a deferred request is admitted, rejected or still pending."""
    book = sim.runtime.plans
    for plan in book.plans.values():
        if not plan.running:
            assert all(s in ENDED_MOVES for s in plan.state)
            assert not plan.reserved
    running = {(p.id, m.n) for p in book.running() for m in p.running_moves()}
    assert all(any(k.startswith(f"plan {p} move {n}") for p, n in running) for k in sim.dc.holds)
    reserved = {v for p in book.running() for v in p.reserved}
    assert set(sim.pending) == set(sim.dc.pending) | reserved


POLICIES = {
    "tc": {"period_s": 600.0, "tc_rule": "literal"},
    "fgd": {"period_s": 600.0, "ratio": 0.2},
    "grmu": {"consolidate": True, "period_s": 600.0},
}


@settings(max_examples=examples(30), deadline=None)
@given(
    pms=pm_lists(2, 4),
    requests=streams(),
    policy=st.sampled_from(sorted(POLICIES)),
    bandwidth=st.sampled_from([0.05, 1.0, 12.5]),  # slow links keep moves running across many events
)
def test_every_state_of_a_run_with_moves_is_valid(pms, requests, policy, bandwidth) -> None:
    model = MigrationModel(bandwidth_gbit_s=bandwidth)
    sim = Simulation(
        pms, requests, make_policy(policy, **POLICIES[policy]), 0.0, 3 * H, debug_check=True, migration=model
    )
    sim.run()
    _books_close(sim)


@settings(max_examples=examples(6), deadline=None)
@given(pms=pm_lists(2, 3), requests=streams(), bandwidth=st.sampled_from([0.05, 12.5]))
def test_origamig_plans_in_time_keep_every_state_valid(pms, requests, bandwidth) -> None:
    policy = make_policy("origamig", deterministic=True, work_limit=20000, check_interval_s=60.0)
    model = MigrationModel(bandwidth_gbit_s=bandwidth)
    sim = Simulation(pms, requests, policy, 0.0, 3 * H, deterministic=True, debug_check=True, migration=model)
    sim.run()
    _books_close(sim)
