"""The live cluster behind the service: the stored state as a `DataCenter`, driven by the runtime
(`runtime/lifecycle.py`) exactly as the simulator drives it, and this module as its effects.

Every change takes `writing` (one change at a time) and the state `lock`, runs on the runtime, and
collects what it changed (`Dirty`); the change is then committed to the store in one transaction,
and only then reported. A store failure puts the whole live state back as the store has it (the
last committed state) and is reported as the failure it is. The plans' own routes are in
`plan_desk.py`; the extender's reads in `k8s.py`.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from origamig.call.kinds import CallKind
from origamig.cluster.records import Placement, VmSpec
from origamig.policies.base import Deferred, Policy, Rejection, Work
from origamig.runtime.lifecycle import CallEnd
from origamig.runtime.migration import MigrationModel, Move
from origamig.runtime.plan_run import PlanRun
from origamig.runtime.remote_check import Recording
from origamig.serve import found_gis
from origamig.serve.arrivals import (
    Arrival,
    ArrivalStatus,
    DuplicateVm,
    check_request_keys,
    placed_by_others,
)
from origamig.serve.events_log import plan_created
from origamig.serve.events_log import plan_ended as log_plan_ended
from origamig.serve.live_load import SIMULATED as SIMULATED
from origamig.serve.live_load import Loaded, load
from origamig.serve.plan_gain import snapshot_gain
from origamig.serve.plan_retention import retire_ended_plans
from origamig.serve.plans import held_resources, to_store
from origamig.serve.platform import MoveRules
from origamig.serve.requests import read_vm_entry
from origamig.serve.store import Store
from origamig.serve.verdicts import VerdictCache
from origamig.snapshot.document import placement_json

REJECTED_BY_CALL = "an optimizer {kind} call left it out (it left the pending queue)"
PLATFORM = "platform"  # who carries out the plans' steps (`--controller`): the platform, or SIMULATED


@dataclass
class Dirty:
    """What a change did that the store must learn: placements set (None: pending again), plans
    changed, VMs rejected by a call (with why), the seed's PMs, the GIs found on hosts."""

    placements: dict[str, Placement | None] = field(default_factory=dict)
    plans: set[int] = field(default_factory=set)
    rejected: dict[str, str] = field(default_factory=dict)
    seed: bool = False  # the fleet changed (a server added, cordoned or uncordoned)
    found: bool = False  # the GIs found on hosts changed

    def __bool__(self) -> bool:
        return bool(self.placements or self.plans or self.rejected or self.seed or self.found)


class Live:
    """The stored state, in memory, the runtime that drives the policy on it, and its clock's loop."""

    def __init__(
        self,
        store: Store,
        policy: Policy,
        step_timeout_s: float | None = None,
        controller: str = PLATFORM,
        migration: MigrationModel | None = None,
    ) -> None:
        self.store = store
        self.step_timeout_s = step_timeout_s  # a step not acknowledged in time aborts its plan
        self.controller = controller
        self.migration = migration
        self.lock = threading.RLock()  # the in-memory state: held briefly, by readers too
        self.writing = threading.RLock()  # one change at a time, held until it is committed
        # The policy's clock: wall seconds (a restart keeps counting), or a replay's simulated ones.
        self.now: Callable[[], float] = time.time
        self.verdicts = VerdictCache()  # the extender's, with the PM's version
        self.recording: Recording | None = None  # arrivals and departures while a check solves elsewhere
        self.modeled_s: dict[int, float] = {}  # plan → the modeled time of the call that made it
        self.started_log: list[tuple[str, float]] | None = None  # VMs plans started (a replay reads it)
        self.dirty = Dirty()
        self.move_rules = MoveRules()  # what the platform cannot move (`serve/platform.py`)
        self.intra_pm_moves: bool | None = None  # `--intra-pm-moves` (None: the seed's)
        self.generation = 0  # bumped when the fleet is read anew (`rebuild`)
        self._fresh_policy = pickle.dumps(policy)  # the policy as it starts: a rebuild's, as a restart's
        self._load(policy)

    def _load(self, policy: Policy) -> None:
        """The live state as the store has it (at start, and after a store failure)."""
        self._take(self._read(policy))

    def _read(self, policy: Policy) -> Loaded:
        """The state of the store, built aside (`serve/live_load.py`)."""
        return load(
            self.store,
            policy,
            self,
            controller=self.controller,
            migration=self.migration,
            platform=self.move_rules.platform,
            intra_pm_moves=self.intra_pm_moves,
            now=self.now,
        )

    def _take(self, loaded: Loaded) -> None:
        """Make `loaded` the live state (with the state lock held, or before any reader runs)."""
        self.seed = loaded.seed
        self.dc = loaded.dc
        self.view = loaded.view
        self.request_context = loaded.request_context
        self.most_gis = loaded.most_gis
        self.class_members = loaded.class_members
        self.pm_version = [0] * len(self.dc.pms)  # bumped whenever a PM's resources change (`touched`)
        self.runtime = loaded.runtime
        self.loop = loaded.loop
        self.modeled_s = loaded.modeled_s
        self.rejected = loaded.rejected
        self.frozen = loaded.frozen  # ended plans that name a removed server: as last shown
        self.found = loaded.found  # GIs found on hosts (`serve/found_gis.py`)
        self.move_rules = loaded.move_rules
        self.dirty = Dirty()

    def refleet(self, write: Callable[[sqlite3.Connection], None], now: float) -> None:
        """Change the stored fleet with `write` (in one transaction) and read the whole state back
        from the store as a restart does, with a fresh policy: PMs are numbered anew (a server was
        removed). Call with `writing` held; readers go on while the state is read. A state that cannot
        be read back changes nothing. Calls solving are dropped (they were chosen on the fleet as it
        was); the PMs backing off keep backing off."""
        backoff = {self.dc.pms[j].id: b for j, b in self.runtime.plans.backoff.items()}
        with self.store.transaction() as db:
            write(db)
            loaded = self._read(pickle.loads(self._fresh_policy))  # reads the change not yet committed
        index = loaded.dc.index
        loaded.runtime.plans.backoff = {index[p]: b for p, b in backoff.items() if p in index}
        with self.lock:
            self._take(loaded)
            self.verdicts = VerdictCache()  # its PM numbers are the old fleet's
            self.generation += 1  # a check solving now is dropped (`Optimizer.check`)
            self.recording = None
            self.loop.settle(now)

    @property
    def policy(self) -> Policy:
        return self.runtime.policy

    @property
    def plans(self) -> dict[int, PlanRun]:
        return self.runtime.plans.plans

    # --- the runtime's effects (the store learns them at `commit`) ------------------------------
    def placed(self, vm: VmSpec, placement: Placement, now: float) -> None:
        self.touched([placement.pm])

    def deferred(self, vm: VmSpec, now: float) -> None:
        """Nothing more to do: the request's row is written by `arrive`."""

    def departed(self, vm_id: str, placement: Placement | None, now: float) -> None:
        if placement is not None:
            self.touched([placement.pm])

    def call_started(self, work: Work, now: float) -> None:
        """Nothing to store: a call solving holds nothing."""

    def call_ended(self, work: Work, end: CallEnd, now: float) -> None:
        kind, reasons = work.kind, work.reasons
        for v in end.rejected:
            why = f"an optimizer {kind} call left it out: {reasons[v]}" if v in reasons else ""
            self.dirty.rejected[v] = why or REJECTED_BY_CALL.format(kind=kind)
        for run in end.plans:
            # Its gain in the snapshot objective's units, with the seed's weights (`plan_gain.py`).
            part = {m.vm: m.target for m in run.moves if m.vm is not None and m.target is not None}
            made = dataclasses.replace(work, target=part, pms=run.all_pms())
            run.gain = snapshot_gain(self.dc, made, self.seed.weights, run.reserved)
            self.modeled_s[run.id] = work.modeled_s
            self.dirty.plans.add(run.id)
            plan_created(run)

    def move_started(self, plan: PlanRun, move: Move, now: float) -> None:
        self.dirty.plans.add(plan.id)
        self.loop.move_started(plan, move, now)

    def vm_moved(self, plan: PlanRun, move: Move, now: float) -> None:
        assert move.vm is not None
        self.dirty.placements[move.vm] = self.dc.placement[move.vm]
        self.dirty.plans.add(plan.id)

    def vm_started(self, plan: PlanRun, move: Move, now: float) -> None:
        self.vm_moved(plan, move, now)
        if self.started_log is not None and move.vm is not None:
            self.started_log.append((move.vm, now))

    def move_ended(self, plan: PlanRun, move: Move, now: float) -> None:
        self.dirty.plans.add(plan.id)

    def plan_ended(self, plan: PlanRun, now: float) -> None:
        self.dirty.plans.add(plan.id)
        log_plan_ended(plan)

    def touched(self, pms: Iterable[int]) -> None:
        """PMs whose resources changed: extender answers cached for them are stale."""
        for j in pms:
            self.pm_version[j] += 1

    # --- committing -----------------------------------------------------------------------------
    def commit(self) -> None:
        """Write what the change did to the store (call with `writing` held). A store failure puts the
        live state back as the store has it, and is raised."""
        dirty, self.dirty = self.dirty, Dirty()
        if not dirty:
            return
        dc = self.dc
        try:
            with self.store.transaction() as db:
                for v, pl in dirty.placements.items():
                    if v in dc.vms or v in dc.pending or self.runtime.plans.reserves(v):
                        where = placement_json(dc.pms, {v: pl})[v] if pl is not None else None
                        self.store.set_placement(db, v, where)
                for v, why in dirty.rejected.items():
                    self.store.reject_vm(db, v, why)
                for i in sorted(dirty.plans):
                    self.store.put_plan(db, i, to_store(self.plans[i], dc, self.modeled_s.get(i, 0.0)))
                if dirty.seed:
                    self.store.put_meta(db, "seed", self.seed.document)
                if dirty.found:
                    self.store.put_meta(db, found_gis.META_KEY, found_gis.stored(self.found.values()))
        except BaseException:
            self.reload()
            raise
        for v, why in dirty.rejected.items():
            self.view.remove(v)
            self.rejected[v] = why
        if any(not self.plans[i].running for i in dirty.plans):
            self.retire_ended_plans()

    def retire_ended_plans(self) -> None:
        """Drop the oldest ended plans beyond those kept, from memory and the state
        (`plan_retention.py`; a plan that has just ended is among the newest, and stays)."""
        with self.lock:
            for i in retire_ended_plans(self.plans, self.store, shown=self.frozen):
                self.modeled_s.pop(i, None)

    def reload(self) -> None:
        """Put the live state back as the store has it (after a failed commit)."""
        with self.lock:
            self._load(self.policy)
            self.touched(range(len(self.dc.pms)))

    # --- requests --------------------------------------------------------------------------------
    def arrive(self, raw: Any) -> Arrival:
        """Place, queue or reject VM request `raw` (a snapshot VM entry without placement), or record
        a VM placed by others (`serve/arrivals.py`)."""
        check_request_keys(raw)
        vm = read_vm_entry(raw, self.request_context, self.most_gis)
        entry = copy.deepcopy({k: v for k, v in raw.items() if k not in ("pm", "placement")})
        with self.writing:
            with self.lock:
                dc = self.dc
                if vm.id in dc.vms or vm.id in dc.pending or self.runtime.plans.reserves(vm.id):
                    raise DuplicateVm(f"id: {vm.id!r} is already known")
                now = self.now()
                if "pm" in raw or "placement" in raw:
                    self._record(vm, raw, now)
                    decision: Any = None
                else:
                    decision = self.runtime.arrive(vm, now)
                if isinstance(decision, Rejection):
                    return Arrival(vm.id, ArrivalStatus.REJECTED, reason=decision.reason)
                placed = dc.placement.get(vm.id)
                where = placement_json(dc.pms, {vm.id: placed})[vm.id] if placed is not None else None
                self.view.add(entry)
                if self.recording is not None:
                    self.recording.arrived(vm, now)
            try:  # outside the state lock: readers go on while the change is made durable
                with self.store.transaction() as db:
                    self.store.add_vm(db, entry, where)
                self.commit()
            except BaseException:
                self.reload()
                raise
            with self.lock:
                self.rejected.pop(vm.id, None)
        if isinstance(decision, Deferred):
            return Arrival(vm.id, ArrivalStatus.PENDING, reason=decision.reason)
        return Arrival(vm.id, ArrivalStatus.PLACED, placement=where)

    def _record(self, vm: VmSpec, raw: dict[str, Any], now: float) -> None:
        """Record VM `vm`, placed by others (`serve/arrivals.py`); given with an exact `placement`, it
        takes over the GIs found on its host at its slots (`POST /v1/pms/{id}/lgi`): they were its."""
        taken = found_gis.under(self.found.values(), raw.get("placement"), vm)
        for gi in taken:
            self.dc.unhold(gi.key)
        try:
            self.runtime.record(vm, placed_by_others(self.runtime, raw, vm), now)
        except BaseException:
            for gi in taken:
                found_gis.hold(self.dc, gi)
            raise
        for gi in taken:
            del self.found[gi.key]
            self.dirty.found = True

    def depart(self, vm_id: str) -> bool:
        """Remove VM `vm_id` (running, pending, or to be started by a plan); False when the service
        does not know it."""
        with self.writing:
            with self.lock:
                dc = self.dc
                if vm_id not in dc.vms and vm_id not in dc.pending and not self.runtime.plans.reserves(vm_id):
                    return False
            with self.store.transaction() as db:  # durable first; the in-memory state follows
                self.store.remove_vm(db, vm_id)
            with self.lock:
                self.view.remove(vm_id)
                now = self.now()
                self.runtime.depart(vm_id, now)
                if self.recording is not None:
                    self.recording.departed(vm_id, now)
                self.loop.settle(now)
            self.commit()
            return True

    # --- reading ---------------------------------------------------------------------------------
    def vm_status(self, vm_id: str) -> dict[str, Any] | None:
        """`{"id", "status": running | pending | rejected, "placement" | "reason"}`, None if unknown; a
        VM a plan is about to start is pending, with that plan."""
        with self.lock:
            dc = self.dc
            if vm_id in dc.placement:
                where = placement_json(dc.pms, {vm_id: dc.placement[vm_id]})[vm_id]
                return {"id": vm_id, "status": "running", "placement": where}
            if vm_id in dc.pending:
                return {"id": vm_id, "status": "pending"}
            starting = self.runtime.plans.reserves(vm_id)
            if starting:
                return {"id": vm_id, "status": "pending", "plan": starting}
            if vm_id in self.rejected:
                return {"id": vm_id, "status": "rejected", "reason": self.rejected[vm_id]}
        return None

    def counts(self) -> dict[str, Any]:
        """The service's counts for `GET /v1/status`: VMs by state, plans by state, why plans aborted,
        what moves under way hold, and the PMs backing off after an abort."""
        from origamig.serve.plans import end_counts

        with self.lock:
            book = self.runtime.plans
            states, causes = end_counts(book.plans.values(), self.frozen.values())
            now = self.now()
            reserved = sum(len(p.reserved) for p in book.running())
            drains = [p for p in book.running() if p.kind == CallKind.DRAIN]
            return {
                "pms": len(self.dc.pms),
                "cordoned": sorted(self.dc.pms[j].id for j in book.cordoned),
                "draining": [
                    {"pm": self.dc.pms[j].id, "plan": p.id}
                    for p in drains
                    for j in sorted({m.source.pm for m in p.moves if m.source is not None})
                ],
                "vms": {
                    "running": len(self.dc.vms),
                    "pending": len(self.dc.pending) + reserved,
                    "rejected": len(self.rejected),
                },
                "plans": states,
                "aborted_causes": causes,
                "held": held_resources(self.dc, list(book.plans.values())) | {"found_gis": len(self.found)},
                "held_pms": len({pl.pm for _, pl in self.dc.holds.values()}),
                "backoff": [
                    {"pm": self.dc.pms[j].id, "until_s": b.until, "aborts_in_a_row": b.level + 1}
                    for j, b in sorted(book.backoff.items())
                    if b.until > now
                ],
            }

    def snapshot_json(self) -> bytes:
        """The live cluster as a snapshot document (docs/formats.md#snapshot), JSON-encoded."""
        with self.lock:
            return self.view.render(self.dc)

    @property
    def entries(self) -> Mapping[str, Mapping[str, Any]]:
        """Every VM entry the service holds, in arrival order (read only: change it through `view`)."""
        return self.view.entries
