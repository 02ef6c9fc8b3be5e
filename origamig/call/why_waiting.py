"""Why a pending VM that fits some server when empty was still not admitted, in operator words.

Called for a VM whose call proved that its optimum does not admit it; the state is the one the
calls end in. The first reason that holds is given: no server has its CPU/RAM free; no GPU of its
class on such a server has a free start for one of its profiles; no such server has room for all
its GIs at once; else admitting it does not pay under the weights (docs/solving.md#goals).
"""

from __future__ import annotations

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import VmSpec, Weights
from origamig.judge.fit import fits_beside


def not_admitted_reason(dc: DataCenter, vm: VmSpec, weights: Weights, call_servers: int) -> str:
    """The real reason the proved optimum of a call of `call_servers` servers left `vm` out."""
    hosts = [j for j in range(len(dc.pms)) if dc.fits_resources(vm, j)]
    repack = f"even after repacking the {call_servers} servers of its call"
    if not hosts:
        j = max(range(len(dc.pms)), key=lambda j: (dc.free_cpu_m(j), dc.free_ram_mb(j)))
        return (
            f"no server has {vm.cpu:g} cores and {vm.ram_gb:g} GB of RAM free "
            f"(most free: {dc.pms[j].id} with {dc.free_cpu_m(j) / 1000:g} cores, "
            f"{dc.free_ram_mb(j) / 1000:g} GB)"
        )
    for prof in vm.gis:
        if not any(_free_start(dc, j, prof.name, prof.gpu_class) for j in hosts):
            return (
                f"no {prof.gpu_model} GPU on a server with {vm.cpu:g} cores and {vm.ram_gb:g} GB free "
                f"has a free start for {prof.name}, {repack}"
            )
    used = {j: [dc.occupancy(j, k) for k in range(dc.gpu_count(j))] for j in hosts}
    if vm.gis and not any(fits_beside(dc.pms[j], vm, used[j]) for j in hosts):
        gis = " + ".join(p.name for p in vm.gis)
        return f"no server with its CPU/RAM free has room for {gis} at once, {repack}"
    return (
        f"admitting it does not pay under these weights (admitting is worth {weights.a(vm):g}; the "
        "servers or GPUs it would switch on, or the moves it needs, cost more); --goal admit admits "
        "whatever fits"
    )


def _free_start(dc: DataCenter, j: int, profile: str, gpu_class: str) -> bool:
    for k in range(dc.gpu_count(j)):
        model = dc.gpu_model(j, k)
        if model.gpu_class != gpu_class or not model.has_profile(profile):
            continue
        prof, occ = model.profile(profile), dc.occupancy(j, k)
        if any(not occ & prof.mask(z) for z in prof.starts):
            return True
    return False
