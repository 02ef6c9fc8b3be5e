"""A drain: where the VMs of one PM go so that it empties — a call whose target a rule computes
(docs/service.md#the-fleet-as-it-changes), handed to the runtime as a `Work` of kind `drain` that runs
as every plan does (docs/plans.md#in-time).

The rule: the drained PM's running VMs, largest first (GI memory slices, then cores, then RAM; ties
by id), each where the arrival rule `fit` (the policy's own, `arrival_rule.choose_pm`) puts it among
the PMs not `closed` (the drained PM itself, cordoned PMs, the PMs calls keep off), on the state the
earlier ones leave. A VM the platform cannot move (`migratable` false) stays, and so does one that
fits no open PM now. The executor plans the moves; no VM parks on a closed PM.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from origamig.call.kinds import CallKind
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, VmSpec
from origamig.plan.executor import Infeasible, plan_migrations
from origamig.policies.arrival_rule import PmFit, choose_pm, pms_of
from origamig.policies.base import Rejection, Work
from origamig.policies.moves import moves_work


@dataclass(frozen=True)
class Drain:
    """What a drain of one PM does: the call to run (None when nothing moves), the VMs that stay
    because they are pinned, and those that stay because no open PM has room for them (with why)."""

    work: Work | None
    pinned: tuple[str, ...] = ()
    no_room: Mapping[str, str] = field(default_factory=dict)

    @property
    def target(self) -> Mapping[str, Placement]:
        return self.work.target if self.work is not None else {}


def _size(vm: VmSpec) -> tuple[int, int, int, str]:
    return (-sum(p.memory_slices for p in vm.gis), -vm.cpu_m, -vm.ram_mb, vm.id)


def drain(dc: DataCenter, j: int, closed: frozenset[int], fit: PmFit) -> Drain:
    """The drain of PM j on `dc` (module doc); `closed` holds the PMs nothing may land on (j too)."""
    began = time.perf_counter()
    closed = closed | {j}
    probe = dc.copy()
    target: dict[str, Placement] = {}
    pinned: list[str] = []
    no_room: dict[str, str] = {}
    for vm in sorted((dc.vms[v] for v in dc.vms_on(j)), key=_size):
        if not vm.migratable:
            pinned.append(vm.id)
            continue
        hit = choose_pm(probe, vm, closed, fit)
        if isinstance(hit, Rejection):
            no_room[vm.id] = _why_no_room(probe, vm, closed, hit)
            continue
        target[vm.id] = hit
        probe.move(vm.id, hit)
    if not target:
        return Drain(None, tuple(pinned), no_room)
    plan = plan_migrations(dc, target, keep_off=closed)
    if isinstance(plan, Infeasible):
        for v in target:
            no_room[v] = f"no plan moves it off now ({plan.reason})"
        return Drain(None, tuple(pinned), no_room)
    work = moves_work(CallKind.DRAIN, dc, target, plan, time.perf_counter() - began)
    return Drain(work, tuple(pinned), no_room)


def _why_no_room(dc: DataCenter, vm: VmSpec, closed: frozenset[int], rejection: Rejection) -> str:
    """Why `vm` fits no open PM: every PM that could host it is closed, or the rule's reason."""
    if all(k in closed for k in pms_of(dc, vm)):
        return "every other server that could host it is cordoned or held by a running plan"
    return f"no other open server has room for it now ({rejection.reason})"
