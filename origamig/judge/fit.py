"""Does a VM fit some PM of the data center at all — even with that PM empty? If not, why not.

A pending VM that fits no PM even when it is empty can never be admitted, whatever the solver or the
policy does; `check` warns about it and `solve` rejects it with this reason. The test is exact: CPU,
RAM, and an assignment of every GI to a GPU of its class at a permitted start without overlap
(a small search: a VM has few GIs). Powered-off PMs count, since they can be switched on.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from origamig.cluster.catalog import GpuModel, Profile
from origamig.cluster.records import PmSpec, VmSpec


def fits_empty(pm: PmSpec, vm: VmSpec) -> bool:
    """True when `vm` alone fits `pm`: CPU, RAM, and every GI at a permitted start, no overlap."""
    if vm.cpu_m > pm.cpu_m or vm.ram_mb > pm.ram_mb:
        return False
    return _holds(pm, vm, [0] * len(pm.gpus))


def _holds(pm: PmSpec, vm: VmSpec, used: Sequence[int]) -> bool:
    """Do the GIs of `vm`, as some class it may run on knows them, fit `pm`'s GPUs beside `used`?"""
    return any(_assign(list(gis), pm.gpus, list(used)) for gis in vm.gi_choices)


def _assign(gis: list[Profile], gpus: Sequence[GpuModel], used: list[int]) -> bool:
    if not gis:
        return True
    prof, rest = gis[0], gis[1:]
    for k, model in enumerate(gpus):
        if model.gpu_class != prof.gpu_class or not model.has_profile(prof.name):
            continue
        here = model.profile(prof.name)
        for start in here.starts:
            mask = here.mask(start)
            if used[k] & mask:
                continue
            used[k] |= mask
            ok = _assign(rest, gpus, used)
            used[k] &= ~mask
            if ok:
                return True
    return False


def no_fit_reason(pms: Iterable[PmSpec], vm: VmSpec) -> str | None:
    """None if `vm` fits some PM when that PM is empty; otherwise why it fits none, in one phrase."""
    pms = list(pms)
    if any(fits_empty(pm, vm) for pm in pms):
        return None
    if not pms:
        return "the snapshot has no PM"
    most_cpu = max(pm.cpu_m for pm in pms)
    if vm.cpu_m > most_cpu:
        return f"no PM has {vm.cpu:g} cores (the largest has {most_cpu / 1000:g})"
    most_ram = max(pm.ram_mb for pm in pms)
    if vm.ram_mb > most_ram:
        return f"no PM has {vm.ram_gb:g} GB of RAM (the largest has {most_ram / 1000:g})"
    gis = " + ".join(p.name for p in vm.gis)
    if vm.gis and not any(_holds(pm, vm, [0] * len(pm.gpus)) for pm in pms):
        models = " or ".join(dict.fromkeys(choice[0].gpu_model for choice in vm.gi_choices))
        return f"no PM has {models} GPUs that can hold {gis} at once"
    return f"no PM has room for all of it at once, even empty ({vm.cpu:g} cores, {vm.ram_gb:g} GB, {gis})"


def fits_beside(pm: PmSpec, vm: VmSpec, used: Sequence[int]) -> bool:
    """True when every GI of `vm` fits `pm`'s GPUs at permitted starts, next to the slices `used`
    (one occupancy mask per GPU) and without overlap; CPU and RAM are not looked at."""
    return _holds(pm, vm, used)
