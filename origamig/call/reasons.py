"""Why a pending VM was not admitted, in operator words — the one place these reasons are written, for
`origamig solve` and for the service (docs/solving.md#why-a-pending-vm-is-not-admitted).

A VM that is not admitted is either *rejected* (certain: it fits no server even empty, or the call
that held it proved that its optimum leaves it out) or *waiting* (a later call, more time or another
neighborhood may admit it), with one reason:

- `Reason.of_call`: by the last call that held the VM (its status, its proof, what its solution did);
- `not_admitted`: for a VM whose call's proved optimum left it out, the first of these that holds on
  the state the calls end in: no server has its CPU/RAM free; no GPU of its classes on such a server
  has a free start for one of its profiles; no such server has room for all its GIs at once; it fits
  a server as it is that its call did not hold; under a goal that trades admission against cost,
  what admitting it would cost; else the rearrangement its call could not find.
"""

from __future__ import annotations

from dataclasses import dataclass

from origamig.bilp import SolveResult
from origamig.bilp.backends.base import GAP_LIMIT, GUARD_KILLED, INTERRUPTED, TIME_LIMIT, WORK_LIMIT
from origamig.call.decision import Decision, Status
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import PmSpec, VmSpec, Weights
from origamig.judge.fit import fits_beside, fits_empty, no_fit_reason

FITS_NO_PM = "fits no PM even when empty"
OUTRIGHT = "left out by Algorithm 1 (its count test found no PM for it); try --neighborhood all"


@dataclass(frozen=True)
class Verdict:
    """Where a pending VM that was not admitted stands: `rejected` (certain) or waiting, and why."""

    rejected: bool
    reason: str


def fits_nowhere(pms: tuple[PmSpec, ...] | list[PmSpec], vm: VmSpec) -> Verdict | None:
    """Rejected for good when `vm` fits no PM even empty; None when it fits some PM."""
    unfit = no_fit_reason(pms, vm)
    return None if unfit is None else Verdict(True, f"{FITS_NO_PM}: {unfit}")


def of_call(
    dc: DataCenter,
    vm: VmSpec,
    decision: Decision,
    weights: Weights,
    servers: int,
    admits_first: bool,
    region: str = "its call",
) -> Verdict:
    """The verdict of the call (on `servers` servers, decided with `weights`) that last held pending
    VM `vm` and did not admit it; `dc` is the state the calls end in."""
    res = decision.solution.result
    if decision.status is Status.SOLVER_ERROR:
        return Verdict(
            False, f"the solver failed in {region}: {decision.reason.removeprefix('solver failed: ')}"
        )
    if decision.status is Status.PLAN_INFEASIBLE:
        return Verdict(
            False,
            f"every solution found for {region} has no valid migration order ({decision.no_goods} "
            f"excluded and solved again): {decision.reason}",
        )
    if vm.id in decision.solution.target:
        return Verdict(
            False,
            f"admitted by the solution of {region}, whose plan is not strictly better once parking is "
            "counted",
        )
    if res.proved_optimal:
        reason = not_admitted(dc, vm, weights, servers, admits_first)
        if decision.no_goods:
            reason += (
                f" (once the {decision.no_goods} solution(s) whose moves have no valid order were excluded)"
            )
        return Verdict(True, reason)
    return Verdict(False, f"not admitted by the solution of {region}, not proved optimal ({stop_words(res)})")


def not_admitted(dc: DataCenter, vm: VmSpec, weights: Weights, call_servers: int, admits_first: bool) -> str:
    """The real reason the proved optimum of a call of `call_servers` servers left `vm` out.

    What it lacks is read on `dc`, the state the calls end in. Under a goal that admits first, the
    proof says that no rearrangement of the call's servers makes room; under one that trades
    admission against cost, that making room (or switching on what it needs) costs more than
    admitting it is worth."""
    pinned = pinned_blockers(dc, vm)
    if pinned:
        shown = ", ".join(pinned[:PINNED_SHOWN]) + (
            f" and {len(pinned) - PINNED_SHOWN} more" if len(pinned) > PINNED_SHOWN else ""
        )
        return (
            f"VMs that may not move (migratable false) hold what it needs on every server that could "
            f"host it: {shown}; no rearrangement of the others makes room"
        )
    if admits_first:
        tail = f", even after repacking the {call_servers} servers of its call"
        if call_servers < len(dc.pms):
            tail += "; --neighborhood all considers every server"
    else:
        tail = (
            f"; making room by moving VMs costs more than admitting it is worth ({weights.a(vm):g}) under "
            "these weights; the default goal (balanced) admits whatever fits"
        )
    hosts = [j for j in range(len(dc.pms)) if dc.fits_resources(vm, j)]
    if not hosts:
        j = max(range(len(dc.pms)), key=lambda j: (dc.free_cpu_m(j), dc.free_ram_mb(j)))
        return (
            f"no server has {vm.cpu:g} cores and {vm.ram_gb:g} GB of RAM free "
            f"(most free: {dc.pms[j].id} with {dc.free_cpu_m(j) / 1000:g} cores, "
            f"{dc.free_ram_mb(j) / 1000:g} GB){tail}"
        )
    for n, prof in enumerate(vm.gis):
        if not any(_free_start(dc, j, vm, n) for j in hosts):
            models = " or ".join(dict.fromkeys(c[n].gpu_model for c in vm.gi_choices))
            return (
                f"no {models} GPU on a server with {vm.cpu:g} cores and {vm.ram_gb:g} GB free "
                f"has a free start for {prof.name}{tail}"
            )
    used = {j: [dc.occupancy(j, k) for k in range(dc.gpu_count(j))] for j in hosts}
    direct = [j for j in hosts if fits_beside(dc.pms[j], vm, used[j])]
    if vm.gis and not direct:
        gis = " + ".join(p.name for p in vm.gis)
        return f"no server with its CPU/RAM free has room for {gis} at once{tail}"
    j = min(direct, key=lambda j: (switch_on_cost(dc, j, vm, weights), j))
    cost, where = switch_on_cost(dc, j, vm, weights), dc.pms[j].id
    if admits_first or cost < weights.a(vm):
        return (
            f"it fits {where} as that server is now, but {where} was not among the {call_servers} servers "
            "of its call; --neighborhood all considers every server"
        )
    return (
        f"admitting it does not pay under these weights: it is worth {weights.a(vm):g}, and where it "
        f"fits best ({where}) switching on what it needs costs about {cost:g}; the default goal "
        "(balanced) admits whatever fits"
    )


PINNED_SHOWN = 5  # pinned VMs named in a reason, at most


def pinned_blockers(dc: DataCenter, vm: VmSpec) -> list[str]:
    """The pinned VMs (`migratable` false) that keep `vm` off every server it fits when empty — no
    server has room for it beside its pinned VMs alone — or [] when moving the others could make
    room somewhere (or nothing is pinned)."""
    pinned = [v for v, spec in dc.vms.items() if not spec.migratable and v in dc.placement]
    if not pinned:
        return []
    by_pm: dict[int, list[str]] = {}
    for v in pinned:
        by_pm.setdefault(dc.placement[v].pm, []).append(v)
    blockers: list[str] = []
    for j, pm in enumerate(dc.pms):
        if not fits_empty(pm, vm):
            continue
        held = by_pm.get(j, [])
        used = [0] * len(pm.gpus)
        cpu = ram = 0
        for v in held:
            spec, pl = dc.vms[v], dc.placement[v]
            cpu, ram = cpu + spec.cpu_m, ram + spec.ram_mb
            for prof, slot in zip(spec.gis, pl.gis, strict=True):
                used[slot.gpu] |= prof.mask(slot.start)
        if cpu + vm.cpu_m <= pm.cpu_m and ram + vm.ram_mb <= pm.ram_mb and fits_beside(pm, vm, used):
            return []  # the movable VMs are what is in the way here: a rearrangement may help
        blockers += held
    return sorted(blockers)


def switch_on_cost(dc: DataCenter, j: int, vm: VmSpec, weights: Weights) -> float:
    """b_j if server j is off, plus e_jk per GPU its GIs switch on (active GPUs of j filled first)."""
    cost = 0.0 if dc.is_active(j) else weights.b(dc.pms[j])
    taken = {k: dc.occupancy(j, k) for k in range(dc.gpu_count(j))}
    switched: set[int] = set()
    for prof in sorted(vm.gis, key=lambda p: -p.memory_slices):
        order = sorted(taken, key=lambda k: (not taken[k] and k not in switched, k))
        for k in order:
            model = dc.gpu_model(j, k)
            if model.gpu_class not in vm.gpu_classes or not model.has_profile(prof.name):
                continue
            here = model.profile(prof.name)
            z = next((z for z in here.starts if not taken[k] & here.mask(z)), None)
            if z is not None:
                if not dc.occupancy(j, k):
                    switched.add(k)
                taken[k] |= here.mask(z)
                break
    return cost + weights.gpu * len(switched)


def _free_start(dc: DataCenter, j: int, vm: VmSpec, n: int) -> bool:
    """Does some GPU of PM j, of a class the VM may run on, have a free start for its GI n?"""
    for k in range(dc.gpu_count(j)):
        model = dc.gpu_model(j, k)
        choice = next((c for c in vm.gi_choices if c and c[0].gpu_class == model.gpu_class), None)
        if choice is None or not model.has_profile(choice[n].name):
            continue
        prof, occ = model.profile(choice[n].name), dc.occupancy(j, k)
        if any(not occ & prof.mask(z) for z in prof.starts):
            return True
    return False


# Terminations of a solve that stopped at a limit, without proof, in words.
STOPPED_AT = {
    TIME_LIMIT: "its time limit",
    INTERRUPTED: "its time limit",
    WORK_LIMIT: "its work limit",
    GAP_LIMIT: "its gap limit",
}


def stop_words(res: SolveResult) -> str:
    """Why a solve stopped without proof, in one phrase."""
    words = STOPPED_AT.get(res.termination, f"termination {res.termination!r}")
    if res.guard == GUARD_KILLED:
        words += " (its process was ended at the deadline)"
    gap = "unknown" if res.gap is None else f"{100 * res.gap:.2f}%"
    return f"the solver stopped at {words} after {res.wall_s:.1f} s without proving optimality (gap {gap})"
