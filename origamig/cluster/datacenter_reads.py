"""The reads of a `DataCenter` (its mixin `StateReads`): free resources, GPUs' slices, the VMs and
holds on a PM, Γ_h, each an O(1) read of the records and counters; and answers remembered per PM state."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterator
from typing import TypeVar

from origamig.cluster.catalog import GpuModel
from origamig.cluster.mig import Geometry
from origamig.cluster.pm_record import PmRecord
from origamig.cluster.records import NO_GPU_CLASS, Placement, VmSpec

_T = TypeVar("_T")

MEMO_PER_PM = 64  # answers kept per PM state (`DataCenter.remembered`); more clear the memo


class StateReads:
    """What `DataCenter` answers about its state (its attributes are set by `DataCenter`)."""

    _pm: list[PmRecord]
    _journal: list[int]
    vms: dict[str, VmSpec]
    placement: dict[str, Placement]
    active_gpus: dict[str, int]
    placed_slices: dict[str, int]
    class_slices: dict[str, int]
    class_pms: dict[str, list[int]]
    no_gpu_active: int
    no_gpu_cpu_m: int
    no_gpu_ram_mb: int
    _cmax: int
    _rmax: int

    def free_cpu_m(self, j: int) -> int:
        return self._pm[j].free_cpu_m

    def free_ram_mb(self, j: int) -> int:
        return self._pm[j].free_ram_mb

    def remembered(self, j: int, key: Hashable, compute: Callable[[], _T]) -> _T:
        """`compute()`, a pure function of PM j's present state and `key`, remembered with that state:
        asked again before the PM changes, the answer is not computed again (copies that share the
        PM's record share its answers; a change to the PM forgets them)."""
        memo = self._pm[j].memo
        if key in memo:
            return memo[key]
        value = compute()
        if len(memo) >= MEMO_PER_PM:
            memo.clear()
        memo[key] = value
        return value

    def journal(self) -> list[int]:
        """The PMs this state changed, in the order it changed them (repeats included), since the list
        began. An index over PMs keeps the list and how far it read: entries past that are the PMs to
        look at again. The list is this state's alone (a copy starts its own) and is started over after
        `JOURNAL_KEPT` entries, so a reader holding a list other than this one reads every PM again."""
        return self._journal

    def free_memory_slices(self, j: int) -> int:
        """Free memory slices over all GPUs of PM j (an O(1) read)."""
        return self._pm[j].free_mem

    def vms_on(self, j: int) -> list[str]:
        """Running VMs on PM j, in the order they were placed."""
        return list(self._pm[j].vms)

    def vm_count(self, j: int) -> int:
        return len(self._pm[j].vms)

    def is_active(self, j: int) -> bool:
        """PM j hosts a VM or a move's hold: it is switched on."""
        return self._pm[j].busy

    def holds_on(self, j: int) -> list[str]:
        """The keys of the holds on PM j, in the order they were made."""
        return list(self._pm[j].held)

    def gpu_count(self, j: int) -> int:
        return len(self._pm[j].gpus)

    def gpu_model(self, j: int, k: int) -> GpuModel:
        return self._pm[j].gpus[k].model

    def gpu_geometry(self, j: int, k: int) -> Geometry:
        return self._pm[j].gpus[k].geo

    def occupancy(self, j: int, k: int) -> int:
        """Bit mask of the used memory slices of GPU k of PM j."""
        return self._pm[j].gpus[k].occ

    def used_compute(self, j: int, k: int) -> int:
        return self._pm[j].gpus[k].compute

    def gis_on(self, j: int, k: int) -> dict[int, tuple[str, int]]:
        """start slice → (VM id, GI index) of the VMs' GIs on GPU k of PM j (held slices are in
        `occupancy` only)."""
        return dict(self._pm[j].gpus[k].owners)

    def cf(self, j: int, k: int) -> int:
        g = self._pm[j].gpus[k]
        return g.geo.cf(g.occ)

    def free_slices(self, j: int, k: int) -> int:
        g = self._pm[j].gpus[k]
        return g.geo.free_count[g.occ]

    def gpu_active(self, j: int, k: int) -> bool:
        return self._pm[j].gpus[k].occ != 0

    def gamma(self, gpu_class: str) -> int:
        """Γ_h (Eq. 17), or Γ_0 (Eq. 18) for `NO_GPU_CLASS`: an O(1) read of the counters."""
        if gpu_class == NO_GPU_CLASS:
            need = max(math.ceil(self.no_gpu_cpu_m / self._cmax), math.ceil(self.no_gpu_ram_mb / self._rmax))
            return self.no_gpu_active - need
        need = math.ceil(self.placed_slices[gpu_class] / self.class_slices[gpu_class])
        return self.active_gpus[gpu_class] - need

    @property
    def classes(self) -> list[str]:
        """Compatibility classes present, plus `NO_GPU_CLASS` when some PM has no GPU."""
        return list(self.class_pms)

    def running(self) -> Iterator[tuple[VmSpec, Placement]]:
        for vm_id, pl in self.placement.items():
            yield self.vms[vm_id], pl

    def fits_resources(self, vm: VmSpec, j: int) -> bool:
        pm = self._pm[j]
        return pm.free_cpu_m >= vm.cpu_m and pm.free_ram_mb >= vm.ram_mb
