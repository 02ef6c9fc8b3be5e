"""The life cycle of a placement policy, written once for every driver: the simulator and the service.

A `Runtime` holds the state (`DataCenter`), the policy and the calls running, and runs the policy's
life cycle through its Protocol (`policies/base.py`):

- `arrive`: the policy places the request, defers it to the pending queue, or rejects it; a placement
  on a PM a running call holds is a broken Protocol (`ProtocolError`), whoever drives the policy;
- `depart`: the VM leaves the state, then the policy is told;
- `check`: the policy is asked for work while it returns some (`collect_calls`), each call started
  on PMs no other running call holds;
- `end_call`: the pending VMs the call gave up on leave the queue; an applied call's target (the VMs
  still there) takes effect — at once, or already, step by step; the policy is told it finished.

What differs between drivers goes through a small `Effects` interface: the simulator records metrics
and schedules events (call ends at their modeled time, departures at the end of a lifetime); the
service stores every change and hands an applied call out as a plan, step by step. Same-time order
is the simulator's (`sim/events.py`), which the service's replay steps too (`serve/replay.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, VmSpec
from origamig.policies.base import ArrivalDecision, Deferred, Placed, Policy, Work


class ProtocolError(RuntimeError):
    """A policy broke the Protocol: it placed a VM or started a call on a PM a running call holds."""


@dataclass(frozen=True)
class CallEnd:
    """What ending a call did: the pending VMs it dropped, and of its target (VMs still present) the
    VMs it admitted, where it put every VM, and where the VMs it moved were before."""

    rejected: tuple[str, ...] = ()
    admitted: tuple[str, ...] = ()
    target: Mapping[str, Placement] = field(default_factory=dict)
    previous: Mapping[str, Placement] = field(default_factory=dict)


class Effects(Protocol):
    """What a driver does with the events of the life cycle (each after the state changed)."""

    def placed(self, vm: VmSpec, placement: Placement, now: float) -> None: ...

    def deferred(self, vm: VmSpec, now: float) -> None: ...

    def departed(self, vm_id: str, placement: Placement, now: float) -> None: ...

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

    def __init__(self, dc: DataCenter, policy: Policy, effects: Effects) -> None:
        self.dc = dc
        self.policy = policy
        self.effects = effects
        self.calls: list[tuple[Work, frozenset[int]]] = []  # the calls running, in start order, and their PMs
        self.solving: frozenset[int] = frozenset()  # PMs of calls chosen but still solving elsewhere
        self.locked: frozenset[int] = frozenset()  # the PMs the running and solving calls hold

    def __getstate__(self) -> dict[str, object]:
        """Pickled (a simulation's checkpoint) without its effects: the driver binds itself again."""
        return {**self.__dict__, "effects": None}

    # --- requests ------------------------------------------------------------------------------
    def arrive(self, vm: VmSpec, now: float) -> ArrivalDecision:
        """The policy's decision on an arriving VM, carried out on the state."""
        decision = self.policy.arrive(self.dc, vm, now, self.locked)
        if isinstance(decision, Placed):
            pl = decision.placement
            if pl.pm in self.locked:
                raise ProtocolError(f"{self.policy.name} placed {vm.id} on locked PM {pl.pm} at t={now}")
            self.dc.place(vm, pl)
            self.effects.placed(vm, pl, now)
        elif isinstance(decision, Deferred):
            self.dc.add_pending(vm)
            self.effects.deferred(vm, now)
        return decision

    def record(self, vm: VmSpec, placement: Placement, now: float) -> None:
        """A VM that others placed (a scheduler bound it, or it already runs): on the state as it is.
        The policy hears of it as of an arrival with every PM held, so that its rule places it nowhere
        and only its bookkeeping sees it."""
        self.policy.arrive(self.dc, vm, now, frozenset(range(len(self.dc.pms))))
        self.dc.place(vm, placement)
        self.effects.placed(vm, placement, now)

    def depart(self, vm_id: str, now: float) -> Placement:
        """A running VM leaves; where it was."""
        pl = self.dc.remove(vm_id)
        self.policy.depart(self.dc, vm_id, now)
        self.effects.departed(vm_id, pl, now)
        return pl

    # --- calls ---------------------------------------------------------------------------------
    def next_check(self, now: float) -> float | None:
        return self.policy.next_check(now)

    def check(self, now: float) -> list[Work]:
        """The calls of one check, started (in this process)."""
        works = collect_calls(self.policy, self.dc, now, self.locked)
        for work in works:
            self.start(work, now)
        return works

    def hold_solving(self, pms: frozenset[int]) -> None:
        """A call chosen in another process holds its PMs while it solves there (until `start` or
        `release_solving`), so that arrivals meanwhile keep off them."""
        self.solving = self.solving | pms
        self._relock()

    def release_solving(self) -> None:
        self.solving = frozenset()
        self._relock()

    def _relock(self) -> None:
        self.locked = self.solving.union(*(held for _, held in self.calls))

    def start(self, work: Work, now: float, holds: frozenset[int] | None = None) -> None:
        """Start a call: it holds `holds` (default: its PMs) until it ends."""
        held = work.pms if holds is None else holds
        if clash := sorted(held & (self.locked - self.solving)):
            raise ProtocolError(f"{self.policy.name} started a call on locked PMs {clash} at t={now}")
        self.calls.append((work, held))
        self._relock()
        self.effects.call_started(work, now)

    @property
    def running(self) -> list[Work]:
        """The calls running, in start order."""
        return [w for w, _ in self.calls]

    def end_call(self, work: Work, now: float, apply: bool = True, applied: bool | None = None) -> CallEnd:
        """End running call `work`: drop the pending VMs it gave up on; when it is applied, its target —
        the VMs still running or pending — takes effect (`apply`: here, at once; else it already did,
        step by step); the policy is told. `applied=False` ends an applied call as not applied (its
        plan failed or was cancelled)."""
        started = work
        if applied is not None and applied != work.applied:
            work = replace(work, applied=applied)
        dc = self.dc
        rejected = tuple(v for v in work.rejected if v in dc.pending)
        for v in rejected:
            dc.drop_pending(v)
        end = CallEnd(rejected)
        if work.applied:
            target = {v: pl for v, pl in work.target.items() if v in dc.vms or v in dc.pending}
            previous = {v: dc.placement[v] for v in target if v in dc.placement}
            admitted = tuple(v for v in target if v in dc.pending)
            if apply:
                dc.apply_placement(target)
            end = CallEnd(rejected, admitted, target, previous)
        self.calls = [(w, held) for w, held in self.calls if w is not started]
        self._relock()
        self.effects.call_ended(work, end, now)
        self.policy.finished(dc, work, now)
        return end
