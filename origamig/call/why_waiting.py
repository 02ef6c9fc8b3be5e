"""Why a pending VM that fits some server when empty was still not admitted, in operator words.

Called for a VM whose call proved that its optimum does not admit it; the state is the one the
calls end in. The first reason that holds is given: no server has its CPU/RAM free; no GPU of its
class on such a server has a free start for one of its profiles; no such server has room for all
its GIs at once; it fits a server as it is, which was outside its call, or where switching on what
it needs costs more than admitting it is worth; else the moves that would make room cost more
(docs/solving.md#goals).
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
    direct = [j for j in hosts if fits_beside(dc.pms[j], vm, used[j])]
    if direct:
        j = min(direct, key=lambda j: (_switch_on_cost(dc, j, vm, weights), j))
        cost, where = _switch_on_cost(dc, j, vm, weights), dc.pms[j].id
        if cost < weights.a(vm):
            return (
                f"it fits {where} as that server is now, where admitting it is worth {weights.a(vm):g} "
                f"and costs about {cost:g}, but {where} was not among the {call_servers} servers of its "
                "call; --neighborhood all considers every server"
            )
        return (
            f"admitting it does not pay under these weights: it is worth {weights.a(vm):g}, and where it "
            f"fits best ({where}) switching on what it needs costs about {cost:g}; --goal admit admits "
            "whatever fits"
        )
    return (
        f"admitting it does not pay under these weights (worth {weights.a(vm):g}): the moves that would "
        f"make room for it, {repack}, cost more; --goal admit admits whatever fits"
    )


def _switch_on_cost(dc: DataCenter, j: int, vm: VmSpec, weights: Weights) -> float:
    """b_j if server j is off, plus e_jk per GPU its GIs switch on (active GPUs of j filled first)."""
    cost = 0.0 if dc.is_active(j) else weights.b(dc.pms[j])
    taken = {k: dc.occupancy(j, k) for k in range(dc.gpu_count(j))}
    switched: set[int] = set()
    for prof in sorted(vm.gis, key=lambda p: -p.memory_slices):
        order = sorted(taken, key=lambda k: (not taken[k] and k not in switched, k))
        for k in order:
            model = dc.gpu_model(j, k)
            if model.gpu_class != prof.gpu_class or not model.has_profile(prof.name):
                continue
            here = model.profile(prof.name)
            z = next((z for z in here.starts if not taken[k] & here.mask(z)), None)
            if z is not None:
                if not dc.occupancy(j, k):
                    switched.add(k)
                taken[k] |= here.mask(z)
                break
    return cost + weights.gpu * len(switched)


def _free_start(dc: DataCenter, j: int, profile: str, gpu_class: str) -> bool:
    for k in range(dc.gpu_count(j)):
        model = dc.gpu_model(j, k)
        if model.gpu_class != gpu_class or not model.has_profile(profile):
            continue
        prof, occ = model.profile(profile), dc.occupancy(j, k)
        if any(not occ & prof.mask(z) for z in prof.starts):
            return True
    return False
