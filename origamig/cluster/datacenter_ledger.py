"""The bookkeeping under every `DataCenter` mutation (its mixin `Ledger`): a VM's fit checked, what it
takes claimed and released in every O(1) counter, and a PM's record copied before it changes (copy on
write, with the journal of changed PMs)."""

from __future__ import annotations

from origamig.cluster.mig import geometry
from origamig.cluster.pm_record import GpuRecord, PmRecord
from origamig.cluster.records import Placement, PmSpec, VmSpec
from origamig.errors import PlacementError

JOURNAL_KEPT = 1 << 16  # entries of a state's journal before it starts a new one (`DataCenter.journal`)


class Ledger:
    """How `DataCenter` changes its records and counters (its attributes are set by `DataCenter`)."""

    pms: tuple[PmSpec, ...]
    _pm: list[PmRecord]
    _owned: set[int] | None
    _journal: list[int]
    vms: dict[str, VmSpec]
    placement: dict[str, Placement]
    holds: dict[str, tuple[VmSpec, Placement]]
    active_pms: int
    active_gpus: dict[str, int]
    placed_slices: dict[str, int]
    no_gpu_active: int
    no_gpu_cpu_m: int
    no_gpu_ram_mb: int

    def _writable(self, j: int) -> PmRecord:
        """PM j's record, to be changed: first copied when another state may share it (see `copy`),
        and without the answers remembered for its state as it was (`remembered`)."""
        if len(self._journal) >= JOURNAL_KEPT:
            self._journal = []
        self._journal.append(j)
        pm = self._pm[j]
        if self._owned is None or j in self._owned:
            pm.memo = {}
            return pm
        pm = self._pm[j] = pm.clone()
        self._owned.add(j)
        return pm

    def _as_placed(self, vm: VmSpec, pl: Placement) -> VmSpec:
        return vm.placed_on(self.pms[pl.pm], pl) if vm.alternatives and 0 <= pl.pm < len(self.pms) else vm

    def _check_fit(self, vm: VmSpec, pl: Placement) -> None:
        if not 0 <= pl.pm < len(self._pm):
            raise PlacementError(f"VM {vm.id}: PM index {pl.pm} does not exist")
        pm = self._pm[pl.pm]
        if len(pl.gis) != len(vm.gis):
            raise PlacementError(f"VM {vm.id}: {len(vm.gis)} GIs but {len(pl.gis)} slots")
        if pm.free_cpu_m < vm.cpu_m or pm.free_ram_mb < vm.ram_mb:
            raise PlacementError(f"VM {vm.id}: not enough free CPU/RAM on PM {pm.spec.id}")
        claimed: dict[int, int] = {}
        for prof, slot in zip(vm.gis, pl.gis, strict=True):
            if not 0 <= slot.gpu < len(pm.gpus):
                raise PlacementError(f"VM {vm.id}: GPU {slot.gpu} does not exist on PM {pm.spec.id}")
            gpu = pm.gpus[slot.gpu]
            if gpu.model.gpu_class != prof.gpu_class or not gpu.model.has_profile(prof.name):
                raise PlacementError(f"VM {vm.id}: {prof.name} cannot run on a {gpu.model.name}")
            if slot.start not in prof.starts:
                raise PlacementError(f"VM {vm.id}: {slot.start} is not a permitted start for {prof.name}")
            mask = prof.mask(slot.start)
            used = gpu.occ | claimed.get(slot.gpu, 0)
            if used & mask:
                raise PlacementError(f"VM {vm.id}: {prof.name}@{slot.start} overlaps on GPU {slot.gpu}")
            claimed[slot.gpu] = claimed.get(slot.gpu, 0) | mask

    def _claim(self, vm: VmSpec, pl: Placement, held: bool = False) -> None:
        pm = self._writable(pl.pm)
        if not pm.busy:
            self.active_pms += 1
            if not pm.gpus:
                self.no_gpu_active += 1
        if not pm.gpus:
            self.no_gpu_cpu_m += vm.cpu_m
            self.no_gpu_ram_mb += vm.ram_mb
        (pm.held if held else pm.vms)[vm.id] = None
        pm.free_cpu_m -= vm.cpu_m
        pm.free_ram_mb -= vm.ram_mb
        for n, (prof, slot) in enumerate(zip(vm.gis, pl.gis, strict=True)):
            gpu = pm.gpus[slot.gpu]
            h = gpu.model.gpu_class
            if not gpu.occ:
                self.active_gpus[h] += 1
            pm.free_mem -= gpu.geo.free_count[gpu.occ]
            gpu.occ |= prof.mask(slot.start)
            pm.free_mem += gpu.geo.free_count[gpu.occ]
            gpu.compute += prof.compute_slices
            if not held:
                gpu.owners[slot.start] = (vm.id, n)
            self.placed_slices[h] += prof.memory_slices
        if held:
            self.holds[vm.id] = (vm, pl)
        else:
            self.vms[vm.id] = vm
            self.placement[vm.id] = pl

    def _release(self, vm: VmSpec, pl: Placement, held: bool = False) -> None:
        pm = self._writable(pl.pm)
        for prof, slot in zip(vm.gis, pl.gis, strict=True):
            gpu = pm.gpus[slot.gpu]
            h = gpu.model.gpu_class
            pm.free_mem -= gpu.geo.free_count[gpu.occ]
            gpu.occ &= ~prof.mask(slot.start)
            pm.free_mem += gpu.geo.free_count[gpu.occ]
            gpu.compute -= prof.compute_slices
            if not held:
                del gpu.owners[slot.start]
            self.placed_slices[h] -= prof.memory_slices
            if not gpu.occ:
                self.active_gpus[h] -= 1
        pm.free_cpu_m += vm.cpu_m
        pm.free_ram_mb += vm.ram_mb
        if held:
            del pm.held[vm.id], self.holds[vm.id]
        else:
            del pm.vms[vm.id]
        if not pm.gpus:
            self.no_gpu_cpu_m -= vm.cpu_m
            self.no_gpu_ram_mb -= vm.ram_mb
        if not pm.busy:
            self.active_pms -= 1
            if not pm.gpus:
                self.no_gpu_active -= 1


def empty_record(p: PmSpec) -> PmRecord:
    """The record of PM `p` with nothing on it."""
    return PmRecord(
        spec=p,
        gpus=[GpuRecord(g, geometry(g)) for g in p.gpus],
        free_cpu_m=p.cpu_m,
        free_ram_mb=p.ram_mb,
        free_mem=sum(g.memory_slices for g in p.gpus),
    )
