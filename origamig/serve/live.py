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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from origamig.cluster.datacenter import DataCenter
from origamig.errors import SnapshotError, UserError
from origamig.policies.base import Deferred, Placed, Policy, Rejection
from origamig.serve.requests import probe_document, read_vm_entry
from origamig.serve.store import Store, StoreError
from origamig.snapshot.document import Snapshot, parse_snapshot, placement_json, snapshot_document


class DuplicateVm(UserError):
    """A request whose VM id the service already knows (HTTP 409)."""


@dataclass(frozen=True)
class Arrival:
    """What became of a VM request: `placed` (with its snapshot placement), `pending` (waits for the
    optimizer) or `rejected` (fits nowhere and will not wait), and why."""

    vm: str
    status: str
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

    def __init__(self, store: Store, policy: Policy) -> None:
        self.store = store
        self.policy = policy
        document = store.document()
        try:
            snap = parse_snapshot(_switched_on(document))
        except SnapshotError as exc:
            raise StoreError([f"--state: {store.path}: {line}" for line in exc.problems]) from None
        self.entries: dict[str, dict[str, Any]] = {
            vm["id"]: {k: v for k, v in vm.items() if k != "placement"} for vm in document["vms"]
        }
        self.seed = dataclasses.replace(snap, document={k: v for k, v in document.items() if k != "vms"})
        self.dc: DataCenter = snap.datacenter()
        self.probe = probe_document(document)
        self.locked: frozenset[int] = frozenset()  # PMs that arrivals may not take
        self.lock = threading.RLock()

    @staticmethod
    def now() -> float:
        """The policy's clock: wall seconds (a restart keeps counting)."""
        return time.time()

    # --- requests --------------------------------------------------------------------------------
    def arrive(self, raw: Any) -> Arrival:
        """Place, queue or reject VM request `raw` (a snapshot VM entry without placement)."""
        vm = read_vm_entry(raw, self.probe)
        entry = copy.deepcopy(raw)
        with self.lock:
            dc = self.dc
            if vm.id in dc.vms or vm.id in dc.pending:
                raise DuplicateVm(f"id: {vm.id!r} is already known")
            decision = self.policy.arrive(dc, vm, self.now(), self.locked)
            if isinstance(decision, Rejection):
                return Arrival(vm.id, "rejected", reason=decision.reason)
            if isinstance(decision, Placed):
                dc.place(vm, decision.placement)
                where = placement_json(dc.pms, {vm.id: decision.placement})[vm.id]
            else:
                dc.add_pending(vm)
                where = None
            try:
                with self.store.transaction() as db:
                    self.store.add_vm(db, entry, where)
            except BaseException:
                dc.remove(vm.id) if vm.id in dc.vms else dc.drop_pending(vm.id)
                raise
            self.entries[vm.id] = entry
            if isinstance(decision, Deferred):
                return Arrival(vm.id, "pending", reason=decision.reason)
            return Arrival(vm.id, "placed", placement=where)

    def depart(self, vm_id: str) -> bool:
        """Remove VM `vm_id` (running or pending); False when the service does not know it."""
        with self.lock:
            dc = self.dc
            if vm_id not in dc.vms and vm_id not in dc.pending:
                return False
            with self.store.transaction() as db:
                self.store.remove_vm(db, vm_id)
            del self.entries[vm_id]
            if vm_id in dc.pending:
                dc.drop_pending(vm_id)
                return True
            dc.remove(vm_id)
            self.policy.depart(dc, vm_id, self.now())
            return True

    # --- reading ---------------------------------------------------------------------------------
    def document(self) -> dict[str, Any]:
        """The live cluster as a snapshot document (docs/formats.md#snapshot)."""
        with self.lock:
            doc = {**self.seed.document, "vms": [copy.deepcopy(e) for e in self.entries.values()]}
            placement = dict(self.dc.placement)
        return snapshot_document(dataclasses.replace(self.seed, document=doc), placement)

    def snapshot(self) -> Snapshot:
        """The live cluster as a validated `Snapshot` (read back from `document()`)."""
        return parse_snapshot(_switched_on(self.document()))


def _switched_on(document: Mapping[str, Any]) -> dict[str, Any]:
    """`document` with every PM switched on: the service switches PMs on and off as VMs come and
    go, as the simulator does (`sim/start.py`); `GET /v1/snapshot` says which ones host nothing."""
    doc = dict(document)
    doc["pms"] = [{k: v for k, v in pm.items() if k != "powered_off"} for pm in document.get("pms", [])]
    return doc
