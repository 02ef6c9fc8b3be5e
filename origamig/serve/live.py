"""The live cluster behind the service: the stored state as a `DataCenter`, driven by a policy through
its Protocol (`policies/base.py`) exactly as the simulator drives it.

Every change takes the lock, is checked on the `DataCenter` first (which refuses anything that breaks
a constraint), then committed to the store, and only then reported; a store failure undoes it.
"""

from __future__ import annotations

import copy
import dataclasses
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from origamig.call.kinds import CallKind
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import GiSlot, Placement, VmSpec
from origamig.errors import PlacementError, SnapshotError, UserError
from origamig.policies.base import ArrivalDecision, Deferred, Placed, Policy, Rejection, Work
from origamig.policies.runtime import CallEnd, Runtime
from origamig.serve.fit import arrival_fit, fit_on_pm
from origamig.serve.plan_retention import retire_ended_plans
from origamig.serve.plans import (
    ACKNOWLEDGED,
    AbortCause,
    LivePlan,
    PlanStatus,
    StepStatus,
    end_counts,
    finished,
    leftovers,
    placement_after,
    step_problem,
)
from origamig.serve.requests import EntryContext, RequestError, most_gis, read_vm_entry
from origamig.serve.snapshot_view import SnapshotView
from origamig.serve.store import Store, StoreError
from origamig.serve.verdicts import VerdictCache
from origamig.snapshot.document import parse_snapshot, placement_json

REJECTED_BY_CALL = "an optimizer {kind} call left it out (it left the pending queue)"


class DuplicateVm(UserError):
    """A request whose VM id the service already knows (HTTP 409)."""


class UnknownPlan(UserError):
    """A plan id (or step number) the service does not have (HTTP 404)."""


class StepConflict(UserError):
    """An acknowledgement of a step that is not the plan's next one (HTTP 409)."""


class Conflict(UserError):
    """A request that the live state refuses as it is (HTTP 409): a VM placed by others that does
    not fit where it is said to run."""


# The fields of a VM request (`POST /v1/vms`): a snapshot VM entry (docs/formats.md#snapshot) and,
# for a VM placed by others, the node it is bound to (`pm`) or its whole placement.
REQUEST_KEYS = (
    "id",
    "cpu",
    "ram_gb",
    "gis",
    "gpu_model",
    "accept_weight",
    "migration_penalty",
    "migratable",
    "pm",
    "placement",
)


class ArrivalStatus(StrEnum):
    """What became of a VM request."""

    PLACED = "placed"  # with its snapshot placement
    PENDING = "pending"  # waits for the optimizer
    REJECTED = "rejected"  # fits nowhere and will not wait


@dataclass(frozen=True)
class Arrival:
    """What became of a VM request, where it runs when placed, and why it was not."""

    vm: str
    status: ArrivalStatus
    placement: Mapping[str, Any] | None = None
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.vm, "status": self.status}
        if self.placement is not None:
            out["placement"] = self.placement
        if self.reason:
            out["reason"] = self.reason
        return out


class Live:
    """The stored state, in memory, and the policy that places arrivals on it."""

    def __init__(self, store: Store, policy: Policy, step_timeout_s: float | None = None) -> None:
        self.store = store
        self.step_timeout_s = step_timeout_s  # a running plan's next step not acknowledged in time aborts it
        document = store.document()
        try:
            snap = parse_snapshot(_switched_on(document))
        except SnapshotError as exc:
            raise StoreError([f"--state: {store.path}: {line}" for line in exc.problems]) from None
        self.seed = dataclasses.replace(snap, document={k: v for k, v in document.items() if k != "vms"})
        self.dc: DataCenter = snap.datacenter()
        # Every VM entry (arrival order), and `GET /v1/snapshot` kept encoded.
        entries = ({k: v for k, v in vm.items() if k != "placement"} for vm in document["vms"])
        self.view = SnapshotView(self.seed.document, self.dc.pms, entries)
        self.request_context = EntryContext.of(snap)  # what each VM request is read against
        self.most_gis = most_gis(self.dc.pms)  # a request for more GIs is refused at once
        # The PMs of each GPU class (the PMs never change while the service runs): the extender's test
        # that a node can host a pod at all.
        self.class_members = {h: frozenset(pms) for h, pms in self.dc.class_pms.items()}
        self.lock = threading.RLock()  # the in-memory state: held briefly, by readers too
        self.writing = threading.RLock()  # one change at a time, held until it is committed (then `lock`)
        self.pm_version = [0] * len(self.dc.pms)  # bumped whenever a PM's VMs change (`touched`)
        self.verdicts = VerdictCache()  # the extender's, with the PM's version
        # The policy's clock: wall seconds (a restart keeps counting), or a replay's simulated ones.
        self.now: Callable[[], float] = time.time
        # The policy's life cycle (policies/runtime.py), with this live state as its effects.
        self.runtime = Runtime(self.dc, policy, self)
        self.plans: dict[int, LivePlan] = {p["id"]: LivePlan.from_store(p, self.dc) for p in store.plans()}
        self.rejected: dict[str, str] = store.rejected()  # VM id → why the optimizer gave up on it
        self.works: dict[int, Work] = {}  # the call behind each running plan
        # Arrivals and departures seen while a call runs elsewhere, replayed on the policy it returns.
        self.recording: list[tuple[str, Any, float]] | None = None
        for plan in self.plans.values():  # after a restart, a running plan holds its PMs again
            if plan.status == PlanStatus.RUNNING:
                stub = Work(
                    plan.kind, plan.pms, {}, plan.admitted, plan.rejected, reasons=plan.rejected_reasons
                )
                self.works[plan.id] = stub
                self.runtime.start(stub, self.now(), plan.pms)

    @property
    def policy(self) -> Policy:
        return self.runtime.policy

    @policy.setter
    def policy(self, policy: Policy) -> None:
        self.runtime.policy = policy

    @property
    def locked(self) -> frozenset[int]:
        """PMs that arrivals may not take: those the running calls hold (their plans' PMs, a replay's
        call its neighborhood until its modeled end)."""
        return self.runtime.locked

    def running_plans(self) -> list[LivePlan]:
        return [p for p in self.plans.values() if p.status == PlanStatus.RUNNING]

    # --- the runtime's effects (the store is written around each change, below) ----------------
    def placed(self, vm: VmSpec, placement: Placement, now: float) -> None:
        self.touched(placement.pm)

    def deferred(self, vm: VmSpec, now: float) -> None:
        """Nothing more to do: the request's row is written by `arrive`."""

    def departed(self, vm_id: str, placement: Placement, now: float) -> None:
        self.touched(placement.pm)

    def call_started(self, work: Work, now: float) -> None:
        """Nothing more to do: an applied call's plan was stored by `adopt`."""

    def call_ended(self, work: Work, end: CallEnd, now: float) -> None:
        self._store_rejections(end.rejected, work.kind, work.reasons)

    # --- requests --------------------------------------------------------------------------------
    def arrive(self, raw: Any) -> Arrival:
        """Place, queue or reject VM request `raw` (a snapshot VM entry without placement), or record
        a VM placed by others: `"pm"` (the node a scheduler bound it to: the rule chooses its GIs'
        starts there) or `"placement"` (a VM already running, recorded as given). A VM placed by
        others that does not fit the live state is a `Conflict` (HTTP 409)."""
        if isinstance(raw, dict):
            unknown = sorted(k for k in raw if k not in REQUEST_KEYS)
            if unknown:
                known = ", ".join(REQUEST_KEYS)
                raise RequestError([f"{k}: not a field of a VM request (fields: {known})" for k in unknown])
            if "pm" in raw and "placement" in raw:
                raise RequestError('pm: give "pm" (the node it is bound to) or "placement", not both')
        vm = read_vm_entry(raw, self.request_context, self.most_gis)
        entry = copy.deepcopy({k: v for k, v in raw.items() if k not in ("pm", "placement")})
        with self.writing:
            with self.lock:
                dc = self.dc
                if vm.id in dc.vms or vm.id in dc.pending:
                    raise DuplicateVm(f"id: {vm.id!r} is already known")
                now = self.now()
                decision: ArrivalDecision
                if "pm" in raw or "placement" in raw:
                    given = self._placed_by_others(raw, vm)
                    self.runtime.record(vm, given, now)
                    decision = Placed(given)
                else:
                    decision = self.runtime.arrive(vm, now)
                if isinstance(decision, Rejection):
                    return Arrival(vm.id, ArrivalStatus.REJECTED, reason=decision.reason)
                where = (
                    placement_json(dc.pms, {vm.id: decision.placement})[vm.id]
                    if isinstance(decision, Placed)
                    else None
                )
                self.view.add(entry)
            try:  # outside the state lock: readers go on while the change is made durable
                with self.store.transaction() as db:
                    self.store.add_vm(db, entry, where)
            except BaseException:
                with self.lock:
                    self.view.remove(vm.id)
                    if vm.id in dc.vms:
                        self.touched(dc.remove(vm.id).pm)
                    else:
                        dc.drop_pending(vm.id)
                raise
            with self.lock:
                self.rejected.pop(vm.id, None)
                if self.recording is not None:
                    self.recording.append(("arrive", vm, now))
        if isinstance(decision, Deferred):
            return Arrival(vm.id, ArrivalStatus.PENDING, reason=decision.reason)
        return Arrival(vm.id, ArrivalStatus.PLACED, placement=where)

    def _placed_by_others(self, raw: dict[str, Any], vm: VmSpec) -> Placement:
        """Where a VM placed by others runs: at `raw["placement"]` as given, or on `raw["pm"]` where
        the arrival rule puts its GIs; `RequestError` (400) for a malformed field, `Conflict` (409)
        when it does not fit the live state there."""
        dc = self.dc
        if "pm" in raw:
            j = self._pm_index(raw["pm"], "pm")
            hit = fit_on_pm(dc, j, vm, arrival_fit(self.policy))
            if isinstance(hit, str):
                raise Conflict(f"pm: {vm.id} does not fit {dc.pms[j].id} now: {hit}")
            return hit[1]
        pl = self._read_placement(raw["placement"], vm)
        probe = dc.copy()
        try:
            probe.place(vm, pl)
        except PlacementError as exc:
            raise Conflict([f"placement: {line}" for line in exc.problems]) from None
        return pl

    def _pm_index(self, name: Any, where: str) -> int:
        if not isinstance(name, str) or name not in self.dc.index:
            raise RequestError(f"{where}: {name!r} is not a PM of the service")
        return self.dc.index[name]

    def _read_placement(self, raw: Any, vm: VmSpec) -> Placement:
        """`{"pm": <id>, "gis": [{"gpu", "start"}, ...]}` (docs/formats.md#snapshot) as a Placement."""
        if not isinstance(raw, dict) or not isinstance(raw.get("gis"), list):
            raise RequestError('placement: expected {"pm": <PM id>, "gis": [{"gpu": .., "start": ..}]}')
        j = self._pm_index(raw.get("pm"), "placement.pm")
        if len(raw["gis"]) != len(vm.gis):
            raise RequestError(f"placement.gis: {len(raw['gis'])} slots for the VM's {len(vm.gis)} GIs")
        slots = []
        for n, slot in enumerate(raw["gis"]):
            gpu = slot.get("gpu") if isinstance(slot, dict) else None
            start = slot.get("start") if isinstance(slot, dict) else None
            if not all(
                isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= 1024 for x in (gpu, start)
            ):
                raise RequestError(f'placement.gis[{n}]: expected {{"gpu": <index>, "start": <slice>}}')
            slots.append(GiSlot(gpu, start))  # type: ignore[arg-type]
        return Placement(j, tuple(slots))

    def depart(self, vm_id: str) -> bool:
        """Remove VM `vm_id` (running or pending); False when the service does not know it."""
        with self.writing:
            with self.lock:
                dc = self.dc
                if vm_id not in dc.vms and vm_id not in dc.pending:
                    return False
            # Made durable first; the in-memory state follows once it is (`writing` keeps others out).
            with self.store.transaction() as db:
                self.store.remove_vm(db, vm_id)
            with self.lock:
                self.view.remove(vm_id)
                if vm_id in dc.pending:
                    dc.drop_pending(vm_id)
                else:
                    now = self.now()
                    self.runtime.depart(vm_id, now)
                    if self.recording is not None:
                        self.recording.append(("depart", vm_id, now))
            return True

    def touched(self, *pms: int) -> None:
        """PMs whose VMs changed: extender answers cached for them are stale."""
        for j in pms:
            self.pm_version[j] += 1

    # --- the optimizer's calls -------------------------------------------------------------------
    def adopt(self, policy: Policy, works: list[Work], now: float, hold: bool = False) -> list[Work]:
        """Take the policy back from a check made on a copy of the state (the arrivals and departures
        seen meanwhile are told to it again, in order) and start its calls: an applied call becomes a
        running plan that holds the PMs its steps name (with `hold`, a replay's, its neighborhood as
        well); a call without a plan ends now — or, with `hold`, when its modeled time has passed
        (`serve/replay.py` ends it), holding its neighborhood meanwhile, as in the simulator. The
        calls without a plan that are still running are returned. Call with `writing` and `lock`
        held."""
        every_pm = frozenset(range(len(self.dc.pms)))
        for kind, what, t in self.recording or ():
            if kind == "arrive":  # for the policy's bookkeeping only (the VM was placed): with every
                policy.arrive(self.dc, what, t, every_pm)  # PM held, its rule looks at none
            else:
                policy.depart(self.dc, what, t)
        self.recording = None
        self.policy = policy
        held: list[Work] = []
        for work in works:
            plan = self._plan_of(work, now, hold)
            if plan is not None:
                self.plans[plan.id] = plan
                self.works[plan.id] = work
                self.runtime.start(work, now, plan.pms)
                continue
            # An applied call without steps to run changes nothing: it ends as not applied.
            ended = replace(work, applied=False) if work.applied else work
            if hold:
                self.runtime.start(ended, now)
                held.append(ended)
            else:
                self.runtime.start(ended, now, frozenset())
                self.runtime.end_call(ended, now, apply=False)
        return held

    def _plan_of(self, work: Work, now: float, hold: bool) -> LivePlan | None:
        """The running plan of an applied call (stored), or None when it has no steps to run."""
        steps = tuple(s.to_dict() for s in work.plan.steps) if work.plan is not None else ()
        if not (work.applied and steps):
            return None
        dc = self.dc
        # A plan holds the PMs its steps name; a replay's also holds its call's neighborhood, as
        # the simulator does until the call ends (its steps are acknowledged then).
        pms = set(work.pms) if hold else set()
        pms.update(dc.index[s[k]] for s in steps for k in ("pm", "from", "to") if k in s)
        moved = {str(s["vm"]) for s in steps if "vm" in s}
        rejected = tuple(v for v in work.rejected if v in dc.pending)
        plan = LivePlan(
            id=max(self.plans, default=0) + 1,
            kind=work.kind,
            created_s=now,
            steps=steps,
            base={v: pl for v, pl in dc.placement.items() if v in moved},
            admitted=tuple(v for v in work.admitted if v in dc.pending),
            rejected=rejected,
            rejected_reasons={v: work.reasons[v] for v in rejected if v in work.reasons},
            pms=frozenset(pms),
            gain=work.call.gain if work.call is not None else None,
            modeled_s=work.modeled_s,
            step_since_s=now,
        )
        with self.store.transaction() as db:
            self.store.put_plan(db, plan.id, plan.to_store(dc))
        return plan

    def plan(self, plan_id: int) -> LivePlan:
        """The plan, its next step checked against the live state first: a step that no longer fits,
        or that waited longer than the step timeout, aborts the plan (the optimizer then replans from
        the real state). An ended plan is read without waiting for the changes under way."""
        with self.lock:
            plan = self.plans.get(plan_id)
        if plan is None:
            raise UnknownPlan(f"plan: {plan_id} is not a plan of the service")
        if plan.status != PlanStatus.RUNNING:
            return plan  # an ended plan never changes again
        with self.writing, self.lock:
            plan = self.plans[plan_id]
            n = plan.next_step
            if n is not None and self._timed_out(plan):
                return self._end(
                    plan,
                    PlanStatus.ABORTED,
                    f"step {n} was not acknowledged within {self.step_timeout_s:g} s",
                    AbortCause.TIMEOUT,
                )
            if n is not None:
                problem = step_problem(self.dc, plan, n)
                if problem is not None:
                    why = f"step {n} no longer fits the live state: {problem}"
                    plan = self._end(plan, PlanStatus.ABORTED, why, AbortCause.STALE)
            return plan

    def _timed_out(self, plan: LivePlan) -> bool:
        limit = self.step_timeout_s
        return limit is not None and self.now() - plan.step_since_s > limit

    def expire(self) -> None:
        """Abort the running plan whose next step waited longer than the step timeout (its PMs are
        freed; called by the optimizer's loop)."""
        with self.writing, self.lock:
            for plan in self.running_plans():
                if self._timed_out(plan):
                    self.plan(plan.id)

    def cancel(self, plan_id: int) -> LivePlan:
        """A client cancels a running plan: later steps are never handed out and its PMs are free;
        the VMs stay where its acknowledged steps left them. `PlanEnded` (409) once it has ended."""
        with self.writing, self.lock:
            plan = self.plan(plan_id)
            if plan.status != PlanStatus.RUNNING:
                raise StepConflict(f"plan: {plan_id} has already ended ({plan.status})")
            return self._end(plan, PlanStatus.CANCELLED, "cancelled by a client")

    def acknowledge(self, plan_id: int, n: int, result: StepStatus) -> LivePlan:
        """Step n of the plan was carried out (`done`) or not (`failed`): the state moves only on
        `done`, after the step is checked once more; `failed` aborts the rest of the plan. The same
        acknowledgement again (a step already done, the step that failed) changes nothing; another
        result for it is a conflict."""
        with self.writing, self.lock:
            plan = self.plan(plan_id)
            if not 0 <= n < len(plan.steps):
                raise UnknownPlan(f"step: plan {plan_id} has no step {n} (steps 0 to {len(plan.steps) - 1})")
            recorded = plan.step_status(n)
            if recorded in ACKNOWLEDGED:
                if recorded == result:
                    return plan
                raise StepConflict(f"step: {n} of plan {plan_id} was acknowledged {recorded.value!r} already")
            if plan.next_step != n:
                state = f"its next step is {plan.next_step}" if plan.next_step is not None else plan.status
                raise StepConflict(f"step: {n} is not the next step of plan {plan_id} ({state})")
            if result == StepStatus.FAILED:
                return self._end(plan, PlanStatus.FAILED, f"step {n} failed")
            dc = self.dc
            target = placement_after(dc, plan, n + 1)
            changed = dc.changes_to(target)
            plan = replace(plan, done=n + 1, step_since_s=self.now())
            if plan.done == len(plan.steps):
                plan = finished(plan, PlanStatus.DONE)
            before = {v: dc.placement.get(v) for v in changed}
            dc.apply_placement(changed)
            self.touched(*{pl.pm for pl in changed.values()}, *{pl.pm for pl in before.values() if pl})
            try:
                with self.store.transaction() as db:
                    where = placement_json(dc.pms, changed)
                    for v in changed:
                        self.store.set_placement(db, v, where[v])
                    self.store.put_plan(db, plan.id, plan.to_store(dc))
            except BaseException:
                self._undo(before)
                raise
            self.plans[plan.id] = plan
            if plan.status == PlanStatus.DONE:
                self._finished(plan, applied=True)
            return plan

    def _undo(self, before: Mapping[str, Placement | None]) -> None:
        """Put VMs back where they were (`None`: pending, queued again) after the store refused a change."""
        dc = self.dc
        for v, pl in before.items():
            if pl is None:
                vm = dc.vms[v]
                dc.remove(v)
                dc.add_pending(vm)
        dc.apply_placement({v: pl for v, pl in before.items() if pl is not None})
        self.touched(*range(len(dc.pms)))

    def _end(
        self, plan: LivePlan, status: PlanStatus, reason: str, cause: AbortCause = AbortCause.NONE
    ) -> LivePlan:
        orphans, idle = leftovers(self.dc, plan)
        plan = replace(finished(plan, status, reason, cause), orphan_gis=orphans, idle_pms=idle)
        with self.store.transaction() as db:
            self.store.put_plan(db, plan.id, plan.to_store(self.dc))
        self.plans[plan.id] = plan
        self._finished(plan, applied=False)
        return plan

    def _store_rejections(self, vms: tuple[str, ...], kind: CallKind, reasons: Mapping[str, str]) -> None:
        """Pending VMs a call gave up on (already out of the queue) are stored as rejected, each with
        its reason (`call/reasons.py`)."""
        if not vms:
            return
        why = {v: f"an optimizer {kind} call left it out: {reasons[v]}" if v in reasons else "" for v in vms}
        why = {v: text or REJECTED_BY_CALL.format(kind=kind) for v, text in why.items()}
        with self.store.transaction() as db:
            for v in vms:
                self.store.reject_vm(db, v, why[v])
        for v in vms:
            self.view.remove(v)
            self.rejected[v] = why[v]

    def _finished(self, plan: LivePlan, applied: bool) -> None:
        """A plan has ended: its call ends (its steps already moved the state, one at a time; a done
        plan leaves its VMs in the order the simulator's one-go apply would)."""
        work = self.works.pop(plan.id, None)
        if applied and work is not None:
            target = [v for v in work.target if v in self.dc.placement]
            moving = [v for v in target if v in plan.base and plan.base[v] != work.target[v]]
            starting = [v for v in target if v in plan.admitted]
            self.dc.reorder_as_applied(moving, starting)
        if work is not None:
            self.runtime.end_call(work, self.now(), apply=False, applied=work.applied and applied)
        retire_ended_plans(self.plans, self.store)  # the newest ended plans are kept (plan_retention.py)

    # --- reading ---------------------------------------------------------------------------------
    def vm_status(self, vm_id: str) -> dict[str, Any] | None:
        """`{"id", "status": running | pending | rejected, "placement" | "reason"}`, None if unknown."""
        with self.lock:
            dc = self.dc
            if vm_id in dc.placement:
                where = placement_json(dc.pms, {vm_id: dc.placement[vm_id]})[vm_id]
                return {"id": vm_id, "status": "running", "placement": where}
            if vm_id in dc.pending:
                return {"id": vm_id, "status": "pending"}
            if vm_id in self.rejected:
                return {"id": vm_id, "status": "rejected", "reason": self.rejected[vm_id]}
        return None

    def counts(self) -> dict[str, Any]:
        """The service's counts for `GET /v1/status`: VMs by state, plans by state, why plans aborted."""
        with self.lock:
            states, causes = end_counts(self.plans.values())
            return {
                "pms": len(self.dc.pms),
                "vms": {
                    "running": len(self.dc.vms),
                    "pending": len(self.dc.pending),
                    "rejected": len(self.rejected),
                },
                "plans": states,
                "aborted_causes": causes,
                "held_pms": len(self.locked),
            }

    def snapshot_json(self) -> bytes:
        """The live cluster as a snapshot document (docs/formats.md#snapshot), JSON-encoded."""
        with self.lock:
            return self.view.render(self.dc)

    @property
    def entries(self) -> Mapping[str, Mapping[str, Any]]:
        """Every VM entry the service holds, in arrival order (read only: change it through `view`)."""
        return self.view.entries


def _switched_on(document: Mapping[str, Any]) -> dict[str, Any]:
    """`document` with every PM switched on: the service switches PMs on and off as VMs come and
    go, as the simulator does (`sim/start.py`); `GET /v1/snapshot` says which ones host nothing."""
    doc = dict(document)
    doc["pms"] = [{k: v for k, v in pm.items() if k != "powered_off"} for pm in document.get("pms", [])]
    return doc
