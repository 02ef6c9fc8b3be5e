"""The same scenarios of plans in time (docs/plans.md#in-time), run against the simulator
(`sim/engine.py`) and against the service (`serve/live.py` on a replay clock with a simulated
controller, its plans read and acknowledged through its own desk): each driver gives the same moves
at the same times, the same holds and the same placements.

- a TC compaction and an OrigaMIG-kind plan that move the same VMs between the same PMs take the same
  time and hold the same resources;
- an arrival during a move uses only what the move does not hold;
- a VM that leaves takes its moves, the rest goes on;
- a move whose destination was taken meanwhile re-plans the rest of its plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from origamig.call.kinds import CallKind
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, PmSpec, VmSpec
from origamig.policies.base import Deferred, Placed, Rejection, Work
from origamig.policies.moves import moves_work, plan_moves
from origamig.policies.tc.compaction import TcRule, compact
from origamig.policies.tc.policy import TurkkanCompaction
from origamig.runtime.plan_run import PlanRun
from origamig.serve.live import SIMULATED, Live
from origamig.serve.replay import ReplayClock
from origamig.serve.store import Store
from origamig.sim.engine import Simulation
from origamig.sim.workload import Request
from origamig.snapshot.document import placement_json
from tests.builders import at, pm, vm

END_S = 2000.0
FOREVER_S = 1e9


@dataclass
class Scripted:
    """A policy of data (picklable): where each arrival goes, and the targets of calls at given times,
    each made a plan by the executor on the state of its check."""

    where: dict[str, Placement | str] = field(default_factory=dict)
    calls: dict[float, dict[str, Placement]] = field(default_factory=dict)
    name: str = "scripted"

    def arrive(self, dc: DataCenter, spec: VmSpec, now: float, locked: frozenset[int]):
        w = self.where.get(spec.id, "reject")
        if w == "defer":
            return Deferred("scripted")
        return Placed(w) if isinstance(w, Placement) else Rejection("scripted")

    def depart(self, dc: DataCenter, vm_id: str, now: float) -> None:
        """Nothing to forget: the scripted policy keeps no state of its own."""

    def next_check(self, now: float) -> float | None:
        later = [t for t in self.calls if t >= now]
        return min(later) if later else None

    def work(self, dc: DataCenter, now: float, locked: frozenset[int] = frozenset()) -> Work | None:
        target = self.calls.pop(now, None)
        if not target:
            return None
        admitted = tuple(v for v in target if v in dc.pending)
        return moves_work(CallKind.CONSOLIDATION, dc, target, plan_moves(dc, target), 0.0, admitted)

    def finished(self, dc: DataCenter, work: Work, now: float) -> None:
        """Nothing to record: the scenarios read the runtime's log, not the policy's."""

    def counters(self) -> dict[str, float]:
        return {}


@dataclass(frozen=True)
class Scenario:
    pms: list[PmSpec]
    initial: list[tuple[VmSpec, Placement, float]]  # running at 0, leaving at the time given
    arrivals: list[tuple[float, VmSpec, float]]  # (time, VM, lifetime once admitted)
    policy: Any


def outcome(plans: Mapping[int, PlanRun], dc: DataCenter) -> tuple[Any, ...]:
    """What a run did: every move (VM, from, to, start, end, state) of every plan, and the placement."""
    moves = []
    for p in plans.values():
        for m in p.moves:
            src = m.source.pm if m.source is not None else None
            dst = m.target.pm if m.target is not None else None
            moves.append((p.id, m.vm, src, dst, p.started_s[m.n], p.ended_s_of[m.n], p.state[m.n]))
    return tuple(moves), tuple(sorted(placement_json(dc.pms, dc.placement).items()))


def simulated(s: Scenario) -> tuple[tuple[Any, ...], list]:
    reqs = [Request(spec, t, life) for t, spec, life in s.arrivals]
    initial = [(Request(spec, 0.0, leave), pl) for spec, pl, leave in s.initial]
    held: list = []

    def sample(t: float, dc: DataCenter) -> None:
        held.append((t, sorted((k, v[1]) for k, v in dc.holds.items())))

    sim = Simulation(
        s.pms, reqs, s.policy, 0.0, END_S, deterministic=True, debug_check=True, initial=initial,
        samples=[float(t) for t in range(5, int(END_S), 10)], on_sample=sample,
    )  # fmt: skip
    sim.run()
    return outcome(sim.runtime.plans.plans, sim.dc), held


class InProcessChecks:
    """The replay clock's checks made in this process (the worker's are the parity test's)."""

    def __init__(self, live: Live) -> None:
        self.live = live

    def check(self, now: float) -> list[Work]:
        with self.live.writing, self.live.lock:
            return self.live.runtime.check(now)


def served(s: Scenario, tmp: Path) -> tuple[tuple[Any, ...], list]:
    doc: dict[str, Any] = {
        "version": 1,
        "pms": [
            {"id": p.id, "cpu": p.cpu, "ram_gb": p.ram_gb, "gpus": [g.name for g in p.gpus]} for p in s.pms
        ],
        "vms": [],
    }
    for spec, pl, _ in s.initial:
        where = placement_json(s.pms, {spec.id: pl})[spec.id]
        doc["vms"].append(_entry(spec) | {"placement": where})
    live = Live(Store.create(tmp / "state.db", doc), s.policy, controller=SIMULATED)
    clock = ReplayClock(live, InProcessChecks(live))  # type: ignore[arg-type]
    events: list[tuple[float, int, Any]] = [(leave, 0, spec.id) for spec, _, leave in s.initial]
    events += [(t, 1, spec) for t, spec, _ in s.arrivals]
    events += [(float(t), 2, None) for t in range(5, int(END_S), 10)]
    lives = {spec.id: life for _, spec, life in s.arrivals}
    held: list = []
    pending = sorted(events, key=lambda e: (e[0], e[1]))
    while pending and pending[0][0] < END_S:
        t, kind, what = pending.pop(0)
        moved = clock.advance(t)
        for v, started in moved.started:  # a VM a plan started leaves a lifetime after its start
            pending.append((started + lives[v], 0, v))
            pending.sort(key=lambda e: (e[0], e[1]))
        if kind == 0:
            live.depart(what)
        elif kind == 1:
            answer = live.arrive(_entry(what))
            if answer.status == "placed":
                pending.append((t + lives[what.id], 0, what.id))
                pending.sort(key=lambda e: (e[0], e[1]))
        else:
            with live.lock:
                held.append((t, sorted((k, v[1]) for k, v in live.dc.holds.items())))
    clock.advance(END_S)
    result = outcome(live.plans, live.dc)
    live.store.close()
    return result, held


def _entry(spec: VmSpec) -> dict[str, Any]:
    return {"id": spec.id, "cpu": spec.cpu, "ram_gb": spec.ram_gb, "gis": [p.name for p in spec.gis]}


# --- the scenarios -----------------------------------------------------------------------------
def same_moves_by_tc_or_by_a_call(rule_based: bool) -> Scenario:
    """Two 1g.5gb VMs leave pm0 for pm1: by TC's compaction (literal rule) or by a call whose target is
    that compaction's."""
    s1, s2 = vm("s1", ["1g.5gb"]), vm("s2", ["1g.5gb"])
    c1, c2 = vm("c1", ["3g.20gb"]), vm("c2", ["3g.20gb"])
    initial = [
        (s1, at(0, (0, 0)), FOREVER_S),
        (s2, at(0, (1, 0)), FOREVER_S),
        (c1, at(1, (0, 4)), FOREVER_S),
        (c2, at(1, (1, 4)), FOREVER_S),
    ]
    pms = [pm("pm0"), pm("pm1")]
    probe = DataCenter(pms)
    for spec, pl, _ in initial:
        probe.place(spec, pl)
    target = compact(probe, TcRule.LITERAL).moves  # what TC's first compaction moves
    assert set(target) == {"s1", "s2"}
    policy: Any = Scripted(calls={100.0: dict(target)})
    if rule_based:
        policy = TurkkanCompaction(period_s=100.0, tc_rule="literal")
    return Scenario(pms, initial, [], policy)


def arrival_during_a_move() -> Scenario:
    """a (7g.40gb) moves pm0 → pm1 GPU 0 at 10 s (99.28 s); n1 (7g) arrives at 50 s and its script
    puts it on pm1 GPU 1 — free — while pm1 GPU 0 is held."""
    a, n1 = vm("a", ["7g.40gb"]), vm("n1", ["7g.40gb"])
    policy = Scripted(where={"n1": at(1, (1, 0))}, calls={10.0: {"a": at(1, (0, 0))}})
    return Scenario([pm("pm0"), pm("pm1")], [(a, at(0, (0, 0)), FOREVER_S)], [(50.0, n1, FOREVER_S)], policy)


def departure_during_a_move() -> Scenario:
    """a and b both move pm0 → pm1 (one after the other: the links); a leaves at 50 s, mid-move."""
    a, b = vm("a", ["7g.40gb"]), vm("b", ["7g.40gb"])
    policy = Scripted(calls={10.0: {"a": at(1, (0, 0)), "b": at(1, (1, 0))}})
    initial = [(a, at(0, (0, 0)), 50.0), (b, at(0, (1, 0)), FOREVER_S)]
    return Scenario([pm("pm0"), pm("pm1")], initial, [], policy)


def stale_move_replans() -> Scenario:
    """a then b (3g.20gb) move pm0 → pm1; x takes b's target slots at 20 s: b is refitted on pm1."""
    a, b, x = vm("a", ["3g.20gb"]), vm("b", ["3g.20gb"]), vm("x", ["1g.5gb"])
    policy = Scripted(where={"x": at(1, (1, 0))}, calls={10.0: {"a": at(1, (0, 0)), "b": at(1, (1, 0))}})
    initial = [(a, at(0, (0, 0)), FOREVER_S), (b, at(0, (1, 0)), FOREVER_S)]
    return Scenario([pm("pm0"), pm("pm1")], initial, [(20.0, x, FOREVER_S)], policy)


SCENARIOS = {
    "tc compaction": lambda: same_moves_by_tc_or_by_a_call(True),
    "a call's plan": lambda: same_moves_by_tc_or_by_a_call(False),
    "arrival during a move": arrival_during_a_move,
    "departure during a move": departure_during_a_move,
    "stale move": stale_move_replans,
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_simulator_and_the_service_run_a_scenario_alike(name: str, tmp_path: Path) -> None:
    sim_result, sim_held = simulated(SCENARIOS[name]())
    api_result, api_held = served(SCENARIOS[name](), tmp_path)
    assert sim_result == api_result
    assert sim_held == api_held
    moves, _ = sim_result
    assert moves, "the scenario must move something"


def test_tc_and_a_call_moving_the_same_vms_cost_and_hold_the_same() -> None:
    (tc_moves, tc_end), tc_held = simulated(same_moves_by_tc_or_by_a_call(True))
    (call_moves, call_end), call_held = simulated(same_moves_by_tc_or_by_a_call(False))
    assert [m[1:] for m in tc_moves] == [m[1:] for m in call_moves] and tc_end == call_end
    assert tc_held == call_held and any(h for _, h in tc_held)


def test_each_scenario_shows_what_it_is_about() -> None:
    (moves, placed), held = simulated(arrival_during_a_move())
    assert dict(placed)["n1"]["gis"] == [{"gpu": 1, "start": 0}]
    assert any(h for t, h in held if 50 < t < 100)  # a's move held pm1 GPU 0 while n1 arrived
    (moves, placed), _ = simulated(departure_during_a_move())
    assert ("a" not in dict(placed)) and dict(placed)["b"]["pm"] == "pm1"
    assert any(m[1] == "a" and m[6] == "removed" for m in moves)
    (moves, placed), _ = simulated(stale_move_replans())
    assert dict(placed)["b"]["gis"] == [{"gpu": 0, "start": 4}] and any(m[6] == "replaced" for m in moves)
