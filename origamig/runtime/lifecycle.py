"""The life cycle of a placement policy, written once for every driver: the simulator and the service.

A `Runtime` holds the state (`DataCenter`), the policy, the calls solving and the plans running
(`PlanBook`), and runs the policy's life cycle through its Protocol (`policies/base.py`):

- `arrive`: the policy places the request, defers it to the pending queue, or rejects it. Arrivals
  use every resource that no move under way holds (docs/plans.md#holds), off cordoned PMs only.
- `record`: a VM that others placed (a scheduler bound it): where a move under way holds what it
  needs, that move yields (if nothing of it was carried out yet) and its plan is planned again.
- `depart`: the VM leaves the state with its moves, then the policy is told.
- `check`: the policy is asked for work while it returns some (`collect_calls`), each call off the
  PMs that running plans' moves touch (or that back off); the calls then solve. Solving holds nothing.
- `end_call`: the call's solve has ended: the pending VMs it gave up on leave the queue, its target
  is adopted on the live state as it is now (`PlanBook.adopt`) and its plans start; the policy is told.
- `step_done` / `move_done`: the controller carried out a step (the platform, one at a time) or all
  of a move's steps (a simulated controller, at the move's modeled end).
- `cordon` / `uncordon`: PMs nothing new lands on — no arrival, no call (calls keep off them as off
  busy PMs), no VM of a target adopted later, no parking move; the VMs there stay until they leave or
  a plan moves them off (a drain: a call whose target a rule computed, started and ended at once).

What differs between drivers goes through a small `Effects` interface: the simulator records metrics
and schedules events (call ends at their modeled time, move ends, departures); the service stores
every change and hands each step out to the platform. Same-time order is `runtime/events.py`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, VmSpec
from origamig.errors import PlacementError
from origamig.policies.base import ArrivalDecision, Deferred, Placed, Policy, Work
from origamig.runtime.migration import MigrationModel
from origamig.runtime.plan_book import PlanBook
from origamig.runtime.plan_run import PlanEffects, PlanRun


class ProtocolError(RuntimeError):
    """A policy broke the Protocol: it started a call on a PM a running plan's moves touch."""


@dataclass(frozen=True)
class CallEnd:
    """What ending a call did: the pending VMs it dropped, the plans its target became (none when it
    was not applied or nothing of it fits the live state any more), and the VMs those will start."""

    rejected: tuple[str, ...] = ()
    plans: tuple[PlanRun, ...] = ()
    admitted: tuple[str, ...] = ()
    target: Mapping[str, Placement] = field(default_factory=dict)


class Effects(PlanEffects, Protocol):
    """What a driver does with the events of the life cycle (each after the state changed)."""

    def placed(self, vm: VmSpec, placement: Placement, now: float) -> None: ...

    def deferred(self, vm: VmSpec, now: float) -> None: ...

    def departed(self, vm_id: str, placement: Placement | None, now: float) -> None: ...

    def call_started(self, work: Work, now: float) -> None: ...

    def call_ended(self, work: Work, end: CallEnd, now: float) -> None: ...


def collect_calls(
    policy: Policy, dc: DataCenter, now: float, locked: frozenset[int] = frozenset()
) -> list[Work]:
    """One check: ask `policy` for work while it returns some, each call's PMs held from the next
    ask on (calls of one check run side by side on disjoint PMs). Raises `ProtocolError` when a call
    takes a held PM."""
    works: list[Work] = []
    held = locked
    while (work := policy.work(dc, now, held)) is not None:
        if clash := sorted(work.pms & held):
            raise ProtocolError(f"{policy.name} started a call on locked PMs {clash} at t={now}")
        works.append(work)
        held = held | work.pms
    return works


class Runtime:
    """A policy's life cycle on one state, its effects supplied by the driver."""

    def __init__(
        self,
        dc: DataCenter,
        policy: Policy,
        effects: Effects,
        model: MigrationModel | None = None,
        confirm_orphans: bool = False,
    ) -> None:
        self.dc = dc
        self.policy = policy
        self.effects = effects
        self.plans = PlanBook(dc, effects, model, confirm_orphans)
        self.solving: list[Work] = []  # the calls solving, in start order

    def __getstate__(self) -> dict[str, object]:
        """Pickled (a simulation's checkpoint) without its effects: the driver binds itself again."""
        return {**self.__dict__, "effects": None}

    def bind(self, effects: Effects) -> None:
        """Drive the effects of `effects` (after a checkpoint was read back)."""
        self.effects = effects
        self.plans.effects = effects

    def locked(self, now: float) -> frozenset[int]:
        """The PMs the next calls keep off (running plans' moves, PMs backing off, cordoned PMs)."""
        return self.plans.busy_pms(now) | self.plans.cordoned

    @property
    def cordoned(self) -> frozenset[int]:
        """The PMs nothing new lands on (module doc)."""
        return self.plans.cordoned

    def cordon(self, j: int) -> None:
        """Nothing new lands on PM j from now on (module doc)."""
        self.plans.cordoned = self.plans.cordoned | {j}
        self.effects.touched([j])

    def uncordon(self, j: int) -> None:
        self.plans.cordoned = self.plans.cordoned - {j}
        self.effects.touched([j])

    # --- requests ------------------------------------------------------------------------------
    def arrive(self, vm: VmSpec, now: float) -> ArrivalDecision:
        """The policy's decision on an arriving VM (off cordoned PMs), carried out on the state."""
        decision = self.policy.arrive(self.dc, vm, now, self.plans.cordoned)
        if isinstance(decision, Placed):
            self.dc.place(vm, decision.placement)
            self.effects.placed(vm, decision.placement, now)
        elif isinstance(decision, Deferred):
            self.dc.add_pending(vm)
            self.effects.deferred(vm, now)
        return decision

    def record(self, vm: VmSpec, placement: Placement, now: float) -> None:
        """A VM that others placed (a scheduler bound it, or it already runs): on the state as it is,
        moves under way yielding what it needs (`PlanBook.yield_to`). The policy hears of it as of an
        arrival with every PM held, so that its rule places it nowhere and only its bookkeeping sees
        it. `PlacementError` when it does not fit even so."""
        if not self.dc.fits(vm, placement):
            self.plans.yield_to(vm, placement, now)
        self.dc.place(vm, placement)
        self.policy.arrive(self.dc, vm, now, frozenset(range(len(self.dc.pms))))
        self.effects.placed(vm, placement, now)
        self.plans.advance(now)

    def depart(self, vm_id: str, now: float) -> Placement | None:
        """A VM leaves — running, pending, or about to be started by a plan; where it ran (None when it
        did not run)."""
        self.plans.vm_leaves(vm_id, now)
        dc = self.dc
        pl: Placement | None = None
        if vm_id in dc.pending:
            dc.drop_pending(vm_id)
        elif vm_id in dc.vms:
            pl = dc.remove(vm_id)
        self.policy.depart(dc, vm_id, now)
        self.effects.departed(vm_id, pl, now)
        self.plans.advance(now)
        return pl

    # --- calls ---------------------------------------------------------------------------------
    def next_check(self, now: float) -> float | None:
        return self.policy.next_check(now)

    def check(self, now: float) -> list[Work]:
        """The calls of one check, chosen in this process and started (solving)."""
        works = collect_calls(self.policy, self.dc, now, self.locked(now))
        for work in works:
            self.start_call(work, now)
        return works

    def start_call(self, work: Work, now: float) -> None:
        """A call starts solving (it holds nothing meanwhile)."""
        self.solving.append(work)
        self.effects.call_started(work, now)

    def end_call(self, work: Work, now: float) -> CallEnd:
        """Solving call `work` ended: drop the pending VMs it gave up on, adopt its target on the live
        state (its plans start), tell the policy (`applied` only when some part of it was adopted)."""
        self.solving = [w for w in self.solving if w is not work]
        dc = self.dc
        rejected = tuple(v for v in work.rejected if v in dc.pending)
        for v in rejected:
            dc.drop_pending(v)
        end = CallEnd(rejected)
        told = work
        if work.applied:
            runs = tuple(self.plans.adopt(work, now))
            if not runs:
                told = replace(work, applied=False)
            moves = [m for r in runs for m in r.moves]
            target = {m.vm: m.target for m in moves if m.vm is not None and m.target is not None}
            admitted = tuple(v for r in runs for v in r.admitted)
            end = CallEnd(rejected, runs, admitted, target)
        self.effects.call_ended(told, end, now)
        self.policy.finished(dc, told, now)
        self.plans.advance(now)
        return end

    # --- plans ---------------------------------------------------------------------------------
    def move_done(self, plan_id: int, n: int, now: float) -> None:
        """Every step left of move n of plan `plan_id` was carried out (a simulated controller)."""
        run = self.plans.plans[plan_id]
        if run.running:
            self.plans.move_done(run, n, now)
        self.plans.advance(now)

    def step_done(self, plan_id: int, step: int, now: float) -> None:
        """Step `step` of plan `plan_id` was carried out (the platform's acknowledgement)."""
        self.plans.step_done(self.plans.plans[plan_id], step, now)
        self.plans.advance(now)


__all__ = ["CallEnd", "Effects", "PlacementError", "ProtocolError", "Runtime", "collect_calls"]
