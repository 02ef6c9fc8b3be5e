"""The one mutable state: PMs, their GPUs, running and pending VMs, and O(1) counters.

Resources are integers: CPU in milli-cores (`cpu_m`), RAM in megabytes (`ram_mb`, 1 GB = 1000 MB),
slices as bit masks (see `mig.py`). PMs are addressed by index in data-center order; VMs by id.

Counters kept up to date by every mutation, in O(1) per GI:
free CPU/RAM per PM, occupancy and used compute slices per GPU, active PMs, and per compatibility
class h the active GPUs and placed memory slices, from which Γ_h (Eq. 17) follows; for the PMs
without GPUs (class `NO_GPU_CLASS`) the active PMs and the CPU/RAM of their VMs (Eq. 18).

A move under way holds what it needs at its destination while its VM still runs at the source
(`hold`/`unhold`): held CPU, RAM and slices count as used in every counter above, and a PM with a
hold is on, but no VM runs there (`vms`, `placement`, `gis_on` and `vms_on` show VMs only).

The class holds construction and the mutations; its reads are in `datacenter_reads.py`, the
bookkeeping under its mutations (fit, claim, release, copy on write) in `datacenter_ledger.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from origamig.cluster import state_transfer
from origamig.cluster.datacenter_ledger import Ledger, empty_record
from origamig.cluster.datacenter_reads import StateReads
from origamig.cluster.pm_record import PmRecord
from origamig.cluster.records import Placement, PmSpec, VmSpec
from origamig.cluster.state_transfer import StateChanges
from origamig.errors import PlacementError


class DataCenter(StateReads, Ledger):
    """Mutable placement state with O(1) counters. Copy it (`copy()`) before planning on it.

    `intra_pm_moves`: whether the platform can move a VM between GIs of one PM (a snapshot's
    `intra_pm_moves`); when it cannot, every move of a running VM goes to another PM.
    """

    def __init__(self, pms: Sequence[PmSpec], intra_pm_moves: bool = True) -> None:
        self.pms: tuple[PmSpec, ...] = tuple(pms)
        self.intra_pm_moves = intra_pm_moves
        self._pm: list[PmRecord] = [empty_record(p) for p in self.pms]
        self._owned: set[int] | None = None  # PMs whose records this state alone holds (None: all)
        self._journal: list[int] = []  # the PMs changed, in order (`journal`)
        self.index: dict[str, int] = {p.id: j for j, p in enumerate(self.pms)}
        if len(self.index) != len(self.pms):
            raise PlacementError("duplicate PM ids")
        self.vms: dict[str, VmSpec] = {}  # running VMs
        self.placement: dict[str, Placement] = {}
        self.pending: dict[str, VmSpec] = {}  # insertion order = oldest first
        # Moves under way (`hold`): key → what they hold (a record named by the key) and where.
        self.holds: dict[str, tuple[VmSpec, Placement]] = {}
        self.active_pms = 0
        self.active_gpus: dict[str, int] = {}
        self.placed_slices: dict[str, int] = {}
        self.class_slices: dict[str, int] = {}  # |U_h| per class
        self.class_pms: dict[str, list[int]] = {}  # PMs carrying at least one GPU of class h
        for j, p in enumerate(self.pms):
            for h in p.gpu_classes:
                self.class_pms.setdefault(h, []).append(j)
            for g in p.gpus:
                self.active_gpus.setdefault(g.gpu_class, 0)
                self.placed_slices.setdefault(g.gpu_class, 0)
                known = self.class_slices.setdefault(g.gpu_class, g.memory_slices)
                if known != g.memory_slices:
                    raise PlacementError(f"GPU class {g.gpu_class} mixes models with different slice counts")
        self.no_gpu_pms = [j for j, p in enumerate(self.pms) if not p.gpus]
        self.no_gpu_active = 0
        self.no_gpu_cpu_m = 0
        self.no_gpu_ram_mb = 0
        self._cmax = max((self.pms[j].cpu_m for j in self.no_gpu_pms), default=1)
        self._rmax = max((self.pms[j].ram_mb for j in self.no_gpu_pms), default=1)

    # --- mutation ----------------------------------------------------------------------------
    def add_pm(self, spec: PmSpec) -> int:
        """Add the empty PM `spec` after the others (its index, returned, is the last; no other PM's
        index changes), as if the state had been built with it. Copies made before keep their PMs,
        and the state starts a new journal (`journal`: every reader looks at every PM again).
        `PlacementError` for a known id or a GPU class of another geometry."""
        if spec.id in self.index:
            raise PlacementError(f"PM id {spec.id!r} is already known")
        for g in spec.gpus:
            known = self.class_slices.get(g.gpu_class, g.memory_slices)
            if known != g.memory_slices:
                raise PlacementError(f"GPU class {g.gpu_class} mixes models with different slice counts")
        j = len(self.pms)
        # New containers throughout: a copy shares the old ones (`copy`) and must not see the new PM.
        self.pms = (*self.pms, spec)
        self._pm = [*self._pm, empty_record(spec)]
        if self._owned is not None:
            self._owned.add(j)
        self.index = {**self.index, spec.id: j}
        self.class_pms = {h: list(pms) for h, pms in self.class_pms.items()}
        for h in spec.gpu_classes:
            self.class_pms.setdefault(h, []).append(j)
        self.active_gpus, self.placed_slices = dict(self.active_gpus), dict(self.placed_slices)
        self.class_slices = dict(self.class_slices)
        for g in spec.gpus:
            self.active_gpus.setdefault(g.gpu_class, 0)
            self.placed_slices.setdefault(g.gpu_class, 0)
            self.class_slices.setdefault(g.gpu_class, g.memory_slices)
        if not spec.gpus:
            self.no_gpu_pms = [*self.no_gpu_pms, j]
            self._cmax = max(self.pms[k].cpu_m for k in self.no_gpu_pms)
            self._rmax = max(self.pms[k].ram_mb for k in self.no_gpu_pms)
        self._journal = []
        return j

    def add_pending(self, vm: VmSpec) -> None:
        if vm.id in self.vms or vm.id in self.pending:
            raise PlacementError(f"VM id {vm.id!r} is already known")
        self.pending[vm.id] = vm

    def drop_pending(self, vm_id: str) -> VmSpec:
        return self.pending.pop(vm_id)

    def requeue(self, vms: Sequence[VmSpec]) -> None:
        """Put `vms` back at the head of the pending queue, in their order (a plan that was to start
        them ended first: they keep their turn)."""
        for vm in vms:
            if vm.id in self.vms or vm.id in self.pending:
                raise PlacementError(f"VM id {vm.id!r} is already known")
        self.pending = {**{vm.id: vm for vm in vms}, **self.pending}

    def fits(self, vm: VmSpec, placement: Placement) -> bool:
        """Whether `vm` (not running) fits at `placement` on the state as it is."""
        try:
            self._check_fit(self._as_placed(vm, placement), placement)
        except PlacementError:
            return False
        return True

    def place(self, vm: VmSpec, placement: Placement, *, checked: bool = False) -> None:
        """Start `vm` at `placement` (a pending VM leaves the queue). Validates everything first, unless
        `checked`: the placement was already judged against this state by the rules of `judge/check.py`
        (a snapshot's, by its reader). A VM that may run on several GPU classes is kept as it runs
        there (`VmSpec.placed_on`)."""
        if vm.id in self.vms:
            raise PlacementError(f"VM {vm.id!r} is already running")
        vm = self._as_placed(vm, placement)
        if not checked:
            self._check_fit(vm, placement)
        self.pending.pop(vm.id, None)
        self._claim(vm, placement)

    def hold(self, key: str, spec: VmSpec, placement: Placement) -> None:
        """Reserve, for a move under way, what `spec` takes at `placement`: its CPU, RAM and GI slices
        count as used (and the PM as on) while no VM runs there, until `unhold(key)`. A move holds the
        destination of a VM that still runs at its source, and GIs left on a host (docs/plans.md#holds).
        `PlacementError` when it does not fit, or `key` holds already."""
        if key in self.holds:
            raise PlacementError(f"hold {key!r} exists already")
        spec = replace(spec, id=key, alternatives=())
        self._check_fit(spec, placement)
        self._claim(spec, placement, held=True)

    def unhold(self, key: str) -> tuple[VmSpec, Placement]:
        """Release hold `key`; what it held and where."""
        spec, pl = self.holds[key]
        self._release(spec, pl, held=True)
        return spec, pl

    def remove(self, vm_id: str) -> Placement:
        """A running VM departs; returns where it was."""
        vm = self.vms[vm_id]
        pl = self.placement[vm_id]
        self._release(vm, pl)
        del self.vms[vm_id]
        del self.placement[vm_id]
        return pl

    def move(self, vm_id: str, placement: Placement) -> None:
        """Move a running VM to `placement` atomically (no intermediate state is modelled here)."""
        vm = self.vms[vm_id]
        old = self.placement[vm_id]
        order = dict(self._pm[old.pm].vms)
        self._release(vm, old)
        try:
            self._check_fit(vm, placement)
        except PlacementError:
            self._claim(vm, old)
            self._writable(old.pm).vms = order  # a failed move keeps the PM's VM order
            raise
        self._claim(vm, placement)

    def apply_placement(self, target: Mapping[str, Placement]) -> None:
        """Set every VM of `target` to its placement there (running ones move, pending ones start).

        All or nothing: if any placement breaks a constraint, the state is restored and
        `PlacementError` is raised. An id that is neither running nor pending is an error.
        """
        unknown = [v for v in target if v not in self.vms and v not in self.pending]
        if unknown:
            raise PlacementError(f"cannot apply a placement for unknown VMs: {', '.join(sorted(unknown))}")
        moving = [v for v in target if v in self.vms and self.placement[v] != target[v]]
        starting = [v for v in target if v in self.pending]
        old = {v: self.placement[v] for v in moving}
        for v in moving:
            self._release(self.vms[v], old[v])
        claimed: list[str] = []
        try:
            for v in moving:
                self._check_fit(self.vms[v], target[v])
                self._claim(self.vms[v], target[v])
                claimed.append(v)
            for v in starting:
                vm = self._as_placed(self.pending[v], target[v])
                self._check_fit(vm, target[v])
                self._claim(vm, target[v])
                claimed.append(v)
        except PlacementError:
            for v in claimed:
                self._release(self.vms[v], self.placement[v])
                if v in starting:
                    del self.vms[v], self.placement[v]
            for v in moving:
                self._claim(self.vms[v], old[v])
            raise
        for v in starting:
            del self.pending[v]

    def reorder_as_applied(self, moving: Sequence[str], starting: Sequence[str]) -> None:
        """Put running VMs in the order `apply_placement` of their moves would have left them in:
        each PM's VMs keep their order but for `moving`, then `starting`, which come last, in that
        order; `starting` also come last among the running VMs. For a state that made the same moves
        one at a time (a plan run step by step), so that what is built from it next (a call's region)
        sees the same order. Counters are not touched."""
        for v in (*moving, *starting):
            pm = self._writable(self.placement[v].pm)
            del pm.vms[v]
            pm.vms[v] = None
        for v in starting:
            self.vms[v] = self.vms.pop(v)
            self.placement[v] = self.placement.pop(v)

    def copy(self) -> DataCenter:
        """An independent copy — plan on it, not on the live state. O(|M| + |VMs|) references: the two
        states share every PM's record until one of them changes it (copy on write, `_writable`)."""
        new = DataCenter.__new__(DataCenter)
        new.__dict__.update(self.__dict__)
        new._pm = list(self._pm)
        self._owned = set()  # from now on both states copy a PM before they change it
        new._owned = set()
        new._journal = []
        new.vms = dict(self.vms)
        new.placement = dict(self.placement)
        new.pending = dict(self.pending)
        new.holds = dict(self.holds)
        new.active_gpus = dict(self.active_gpus)
        new.placed_slices = dict(self.placed_slices)
        return new

    def differing_pms(self, other: DataCenter) -> list[int]:
        """The PMs whose records this state and `other` (a copy of it, or the state it was copied
        from) do not share: those one of them changed since the copy. A walk of identities, O(|M|)."""
        pairs = zip(self._pm, other._pm, strict=True)
        return [j for j, (mine, theirs) in enumerate(pairs) if mine is not theirs]

    def changes_to(self, placement: Mapping[str, Placement]) -> dict[str, Placement]:
        """The entries of `placement` that differ from this state: the VMs it moves or starts.
        (A placement taken from a copy of this state shares its records: `is` settles most entries.)"""
        here = self.placement.get
        return {v: pl for v, pl in placement.items() if (now := here(v)) is not pl and now != pl}

    def with_placement(self, placement: Mapping[str, Placement]) -> DataCenter:
        """A copy with every running VM at its place in `placement` (a VM not in it gone, pending VMs
        in it started); it shares what did not change, so its cost follows the changes."""
        out = self.copy()
        for v in [v for v in self.placement if v not in placement]:
            out.remove(v)
        out.apply_placement(self.changes_to(placement))
        return out

    def with_changes(self, changes: Mapping[str, Placement]) -> DataCenter:
        """A copy with the running or pending VMs of `changes` at their places there, the others where
        they are: its cost follows the changes, not the cluster."""
        out = self.copy()
        out.apply_placement(self.changes_to(changes))
        return out

    # --- changes, to send a state to where a copy of it is (cluster/state_transfer.py) ----------
    def changes_on(self, pms: Iterable[int]) -> StateChanges:
        """This state's PMs `pms` (every PM it changed since some copy was made: its `journal` from
        that point) and what goes with them, for `apply_changes` on that copy."""
        return state_transfer.changes_on(self, pms)

    def apply_changes(self, changes: StateChanges) -> None:
        """Become the state `changes` were taken from, this being a copy of it from before them (a
        `KeyError` when it is not: a VM the changes keep is unknown here)."""
        state_transfer.apply_changes(self, changes)

    def __getstate__(self) -> state_transfer.Pickled:
        """Pickled in pieces (`state_transfer.pickled`); read back the same, orders included."""
        return state_transfer.pickled(self)

    def __setstate__(self, state: state_transfer.Pickled) -> None:
        state_transfer.unpickle_into(self, state)
