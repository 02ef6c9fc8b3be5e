"""Algorithm 1's count tests: does a VM fit a PM, do some PMs' VMs fit others, by counts.

"Fits" reads CPU, RAM and free memory and compute slices per GPU and ignores start slices — a
rearrangement can change them; the GIs go largest first to GPUs of their class with enough free
memory and compute slices.
"""

from __future__ import annotations

from collections.abc import Sequence

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import VmSpec


def _sorted_gis(vm: VmSpec) -> list:
    return sorted(vm.gis, key=lambda p: (-p.memory_slices, -p.compute_slices, p.name))


def fits_counts(dc: DataCenter, vm: VmSpec, j: int, empty: bool = False) -> bool:
    """Does `vm` fit PM j by counts (CPU, RAM, free memory and compute slices per GPU), as some class
    it may run on?"""
    return any(_fits_counts(dc, variant, j, empty) for variant in vm.variants())


def _fits_counts(dc: DataCenter, vm: VmSpec, j: int, empty: bool) -> bool:
    pm = dc.pms[j]
    cpu = pm.cpu_m if empty else dc.free_cpu_m(j)
    ram = pm.ram_mb if empty else dc.free_ram_mb(j)
    if cpu < vm.cpu_m or ram < vm.ram_mb:
        return False
    if not empty and dc.free_memory_slices(j) < vm.memory_slices:
        return False  # every GI takes its memory slices from some GPU: the per-GPU test would fail
    free_mem = [g.memory_slices if empty else dc.free_slices(j, k) for k, g in enumerate(pm.gpus)]
    free_comp = [
        g.compute_slices if empty else g.compute_slices - dc.used_compute(j, k) for k, g in enumerate(pm.gpus)
    ]
    for prof in _sorted_gis(vm):
        for k, g in enumerate(pm.gpus):
            if (
                g.gpu_class == prof.gpu_class
                and free_mem[k] >= prof.memory_slices
                and (free_comp[k] >= prof.compute_slices)
            ):
                free_mem[k] -= prof.memory_slices
                free_comp[k] -= prof.compute_slices
                break
        else:
            return False
    return True


def can_empty(dc: DataCenter, sources: Sequence[int], receivers: Sequence[int]) -> bool:
    """Count test: do all VMs of `sources` fit the free resources of `receivers` (starts ignored)?"""
    cpu = {j: dc.free_cpu_m(j) for j in receivers}
    ram = {j: dc.free_ram_mb(j) for j in receivers}
    mem = {(j, k): dc.free_slices(j, k) for j in receivers for k in range(dc.gpu_count(j))}
    comp = {
        (j, k): dc.gpu_model(j, k).compute_slices - dc.used_compute(j, k)
        for j in receivers
        for k in range(dc.gpu_count(j))
    }
    vms = [dc.vms[v] for s in sources for v in dc.vms_on(s)]
    vms.sort(key=lambda vm: (-vm.memory_slices, -vm.cpu_m, vm.id))
    return all(_place_counts(dc, vm, receivers, cpu, ram, mem, comp) for vm in vms)


def _place_counts(dc, vm, receivers, cpu, ram, mem, comp) -> bool:
    for j in receivers:
        if cpu[j] < vm.cpu_m or ram[j] < vm.ram_mb:
            continue
        taken: list[tuple[int, int, int]] = []
        for prof in _sorted_gis(vm):
            k = next(
                (
                    k
                    for k, g in enumerate(dc.pms[j].gpus)
                    if g.gpu_class == prof.gpu_class
                    and mem[(j, k)] >= prof.memory_slices
                    and comp[(j, k)] >= prof.compute_slices
                ),
                None,
            )
            if k is None:
                break
            mem[(j, k)] -= prof.memory_slices
            comp[(j, k)] -= prof.compute_slices
            taken.append((k, prof.memory_slices, prof.compute_slices))
        if len(taken) == len(vm.gis):
            cpu[j] -= vm.cpu_m
            ram[j] -= vm.ram_mb
            return True
        for k, m, c in taken:  # undo a partial assignment on this PM
            mem[(j, k)] += m
            comp[(j, k)] += c
    return False
