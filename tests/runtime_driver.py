"""A minimal driver of the runtime for its own tests: the loop over a simulated clock with a simulated
controller, every effect logged, events pushed by hand (no metrics, no workload)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, PmSpec, VmSpec
from origamig.judge.check import check, check_counters
from origamig.policies.base import ArrivalDecision, Deferred, Placed, Rejection, Work
from origamig.runtime.events import ARRIVAL, DEPARTURE
from origamig.runtime.lifecycle import CallEnd, Runtime
from origamig.runtime.loop import Loop
from origamig.runtime.migration import MigrationModel, Move
from origamig.runtime.plan_run import PlanRun


class FakePolicy:
    """A policy that follows a script: where each VM goes, and the calls each check makes."""

    name = "fake"

    def __init__(
        self,
        where: dict[str, Placement | str] | None = None,
        calls: dict[float, list[Callable[[DataCenter, frozenset[int]], Work | None]]] | None = None,
    ) -> None:
        self.where = where or {}
        self.calls = {t: list(fs) for t, fs in (calls or {}).items()}
        self.asked: list[tuple[float, frozenset[int]]] = []
        self.ended: list[tuple[float, Work]] = []  # (time, call) as `finished` was told
        self.departed: list[str] = []

    def arrive(self, dc: DataCenter, vm: VmSpec, now: float, locked: frozenset[int]) -> ArrivalDecision:
        w = self.where.get(vm.id, "reject")
        if w == "defer":
            return Deferred("scripted")
        if isinstance(w, Placement):
            return Placed(w)
        return Rejection("scripted")

    def depart(self, dc: DataCenter, vm_id: str, now: float) -> None:
        self.departed.append(vm_id)

    def next_check(self, now: float) -> float | None:
        later = [t for t, fs in self.calls.items() if t >= now and fs]
        return min(later) if later else None

    def work(self, dc: DataCenter, now: float, locked: frozenset[int] = frozenset()) -> Work | None:
        self.asked.append((now, locked))
        makers = self.calls.get(now)
        while makers:
            work = makers.pop(0)(dc, locked)
            if work is not None:
                return work
        return None

    def finished(self, dc: DataCenter, work: Work, now: float) -> None:
        self.ended.append((now, work))

    def counters(self) -> dict[str, float]:
        return {}


class Driver:
    """Runs a runtime on a simulated clock, checking every state, logging every effect."""

    def __init__(
        self,
        pms: Iterable[PmSpec],
        policy: Any,
        placed: Iterable[tuple[VmSpec, Placement]] = (),
        model: MigrationModel | None = None,
    ) -> None:
        self.dc = DataCenter(list(pms))
        for spec, pl in placed:
            self.dc.place(spec, pl)
        self.policy = policy
        self.runtime = Runtime(self.dc, policy, self, model)
        self.loop = Loop(self.runtime)
        self.log: list[tuple[Any, ...]] = []
        self.arrivals: dict[int, VmSpec] = {}
        self.t = 0.0

    # --- what a test does -----------------------------------------------------------------------
    def arrive_at(self, t: float, vm: VmSpec) -> None:
        self.arrivals[id(vm)] = vm
        self.loop.queue.push(t, ARRIVAL, vm)

    def depart_at(self, t: float, vm_id: str) -> None:
        self.loop.queue.push(t, DEPARTURE, vm_id)

    def run(self, until: float = float("inf")) -> None:
        self.loop.settle(self.t)
        queue = self.loop.queue
        while queue and (queue.peek_time() or 0.0) <= until:
            t, kind, _, payload = queue.pop()
            self.t = t
            if kind == ARRIVAL:
                self.runtime.arrive(payload, t)
            elif kind == DEPARTURE:
                self.runtime.depart(payload, t)
            else:
                self.loop.handle(kind, payload, t, self.runtime.check, lambda w: w.modeled_s)
            problems = check(self.dc) + check_counters(self.dc)
            assert not problems, f"t={t}: {problems}"
            self.loop.settle(t)

    def plans(self) -> list[PlanRun]:
        return list(self.runtime.plans.plans.values())

    def moves(self) -> list[tuple[str | None, int | None, int | None, float | None, float | None]]:
        """(VM, from PM, to PM, start, end) of every VM move of every plan, in plan and move order."""
        out = []
        for p in self.plans():
            for m in p.moves:
                if m.vm is not None:
                    src = m.source.pm if m.source is not None else None
                    dst = m.target.pm if m.target is not None else None
                    out.append((m.vm, src, dst, p.started_s[m.n], p.ended_s_of[m.n]))
        return out

    # --- effects --------------------------------------------------------------------------------
    def placed(self, vm: VmSpec, placement: Placement, now: float) -> None:
        self.log.append(("placed", now, vm.id, placement))

    def deferred(self, vm: VmSpec, now: float) -> None:
        self.log.append(("deferred", now, vm.id))

    def departed(self, vm_id: str, placement: Placement | None, now: float) -> None:
        self.log.append(("departed", now, vm_id))

    def call_started(self, work: Work, now: float) -> None:
        self.log.append(("call_started", now, work.kind))

    def call_ended(self, work: Work, end: CallEnd, now: float) -> None:
        self.log.append(("call_ended", now, work.kind, tuple(p.id for p in end.plans)))

    def move_started(self, plan: PlanRun, move: Move, now: float) -> None:
        holds = {k: v for k, v in self.dc.holds.items() if k.startswith(f"plan {plan.id} move {move.n}")}
        self.log.append(("move_started", now, plan.id, move.n, move.vm, tuple(holds.values())))
        self.loop.move_started(plan, move, now)

    def vm_moved(self, plan: PlanRun, move: Move, now: float) -> None:
        self.log.append(("vm_moved", now, move.vm))

    def vm_started(self, plan: PlanRun, move: Move, now: float) -> None:
        self.log.append(("vm_started", now, move.vm))

    def move_ended(self, plan: PlanRun, move: Move, now: float) -> None:
        self.log.append(("move_ended", now, plan.id, move.n))

    def plan_ended(self, plan: PlanRun, now: float) -> None:
        self.log.append(("plan_ended", now, plan.id, plan.status))

    def touched(self, pms: Iterable[int]) -> None:
        """Nothing to record: this driver keeps no metrics of the PMs it changes."""
