"""Algorithm 1 of the paper: which PMs (M̂) and VMs (N̂) an OrigaMIG call optimizes.

Admission call: for each pending VM, oldest first, the PMs whose free resources fit it (fewest VMs
first), else the PMs that would fit it if empty (most free memory slices first), else the VM is
rejected; then active PMs by free memory slices, then free CPU; then one powered-off PM that fits
the oldest pending VM. N̂ = VMs on M̂ plus the pending VMs whose first PM is in M̂.

Consolidation call for class h: sources S = active PMs of class h, fewest VMs first, kept only if
emptying them is worth their VMs' migrations (b_j + Σ e_jk > w·CF_j + Σ 2δ_i); receivers R = the
other active PMs of class h plus the active PMs without GPUs, most free memory slices first; at most
M_max/2 sources; M̂ = S, then R, up to the limits. The loop "while some source cannot be emptied into
R, drop the last source" (a count test that ignores start slices) changes S only, not M̂, so by
default the call runs on M̂ whatever S ends as; the `Consolidation.SOURCES` reading instead skips the
call when no source survives the loop.

Limits: at most `m_max` PMs; a PM whose VMs would raise |N̂| above `n_max` is skipped, except the
first PM chosen for the oldest pending VM. With `bound="vms"` only `n_max` bounds a neighborhood
(and `pm_cap` PMs, a safety cap). "Fits" ignores start slices — a rearrangement can change them —
and assigns the GIs largest first to GPUs of their class with enough free memory and compute slices.
Cost: one pass over the PMs of the classes involved plus sorting, O(|M| log |M|).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum

from origamig.call.kinds import CallKind, ScopeMode
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import NO_GPU_CLASS, PmSpec, VmSpec, Weights


@dataclass(frozen=True)
class Neighborhood:
    """The PMs and VMs of one call, plus the pending VMs Algorithm 1 rejects outright."""

    pms: tuple[int, ...]
    pending: tuple[str, ...]  # pending VMs of the call (in N̂)
    rejected: tuple[str, ...] = ()  # pending VMs that fit no PM even if empty
    kind: CallKind | ScopeMode = CallKind.ADMISSION  # a scope: the servers `solve` was given
    gpu_class: str | None = None

    def vm_count(self, dc: DataCenter) -> int:
        return sum(dc.vm_count(j) for j in self.pms) + len(self.pending)


class Bound(StrEnum):
    """What bounds a neighborhood."""

    PMS = "pms"  # M_max PMs and N_max VMs (the paper's)
    VMS = "vms"  # N_max VMs only, and `pm_cap` PMs as a safety cap (paper §7's proposal)


@dataclass(frozen=True)
class Bounds:
    """Neighborhood limits: M_max PMs and N_max VMs (paper: 16 and 64), or VMs only."""

    m_max: int = 16
    n_max: int = 64
    bound: Bound = Bound.PMS
    pm_cap: int = 256

    def __post_init__(self) -> None:
        object.__setattr__(self, "bound", Bound(self.bound))  # ValueError on anything else

    @property
    def pm_limit(self) -> int:
        return self.m_max if self.bound is Bound.PMS else self.pm_cap


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


class _Builder:
    """Accumulates M̂ and |N̂| under the bounds."""

    def __init__(self, dc: DataCenter, bounds: Bounds) -> None:
        self.dc, self.bounds = dc, bounds
        self.pms: list[int] = []
        self.chosen: set[int] = set()
        self.vms = 0

    @property
    def full(self) -> bool:
        return len(self.pms) >= self.bounds.pm_limit

    def take_pending(self, j: int, force: bool) -> bool:
        """Count a pending VM in N̂ with its first PM j in M̂ (adding j if needed)."""
        if j in self.chosen:
            if not force and self.vms + 1 > self.bounds.n_max:
                return False
            self.vms += 1
            return True
        return self.add(j, force=force, extra_vms=1)

    def add(self, j: int, force: bool = False, extra_vms: int = 0) -> bool:
        if j in self.chosen:
            return True
        if self.full and not force:
            return False
        load = self.dc.vm_count(j) + extra_vms
        if not force and self.vms + load > self.bounds.n_max:
            return False
        self.pms.append(j)
        self.chosen.add(j)
        self.vms += load
        return True


def select_admission(
    dc: DataCenter, queue: Sequence[str], bounds: Bounds, locked: frozenset[int] = frozenset()
) -> Neighborhood:
    """Algorithm 1, AdmissionCall(Q): the neighborhood for the pending VMs `queue` (oldest first), off
    the `locked` PMs (a VM that only a locked PM could take, even empty, is neither in it nor rejected:
    it waits)."""
    b = _Builder(dc, bounds)
    pending: list[str] = []
    rejected: list[str] = []
    classes: set[str] = set()
    candidates_by_class = dc.class_pms  # read only
    all_pms: Sequence[int] = range(len(dc.pms))
    if locked:
        candidates_by_class = {h: [j for j in pms if j not in locked] for h, pms in dc.class_pms.items()}
        all_pms = [j for j in all_pms if j not in locked]
    # The active candidates, fewest VMs first (a stable sort: then in PM order): a VM's PMs that fit
    # are read from it lazily, as long as the neighborhood takes them (most VMs look at a few dozen
    # PMs, not every PM).
    active = sorted([j for j in all_pms if dc.is_active(j)], key=dc.vm_count)
    class_sets = {h: set(pms) for h, pms in candidates_by_class.items()}
    for n, vm_id in enumerate(queue):
        vm = dc.pending[vm_id]
        first, fit, by_load = _fitting(dc, vm, active, class_sets, candidates_by_class, all_pms)
        if first is None:
            if not any(fits_counts(dc, vm, j, empty=True) for j in locked):
                rejected.append(vm_id)  # it fits no PM, even empty; else it waits for the locked PMs
            continue
        # The first PM of the oldest pending VM is always taken, whatever N_max says.
        force = not pending and n == len(rejected)
        if b.take_pending(first, force):
            pending.append(vm_id)
            classes.update(vm.gpu_classes)
        for j in fit:
            if b.full:
                break
            if not b.add(j) and by_load:
                break  # N_max refused j's VMs: it refuses every PM after it, which hosts as many or more
        if b.full:
            break
    if not pending:
        return Neighborhood((), (), tuple(rejected), CallKind.ADMISSION)
    oldest = dc.pending[pending[0]]
    # Room for a powered-off PM that fits the oldest pending VM.
    spare = next(
        (
            j
            for j in all_pms
            if not dc.is_active(j) and j not in b.chosen and fits_counts(dc, oldest, j, True)
        ),
        None,
    )
    _fill(dc, b, active, classes, bounds.pm_limit - (1 if spare is not None else 0))
    if spare is not None and not b.full:
        b.add(spare)
    return Neighborhood(tuple(b.pms), tuple(pending), tuple(rejected), CallKind.ADMISSION)


def _fill(dc: DataCenter, b: _Builder, active: Sequence[int], classes: set[str], limit: int) -> None:
    """Add the other active PMs that share a class with the pending VMs, most free slices, then most
    free CPU, first, while the neighborhood has fewer than `limit` PMs."""
    anywhere = NO_GPU_CLASS in classes
    free_slices, free_cpu, pms = dc.free_memory_slices, dc.free_cpu_m, dc.pms
    fill = [
        (-free_slices(j), -free_cpu(j), j)
        for j in active
        if j not in b.chosen and (anywhere or not classes.isdisjoint(pms[j].gpu_classes))
    ]
    fill.sort()
    for _, _, j in fill:
        if len(b.pms) >= limit:
            break
        b.add(j)


def _fitting(
    dc: DataCenter,
    vm: VmSpec,
    active: list[int],
    class_sets: dict[str, set[int]],
    candidates_by_class: dict[str, list[int]],
    all_pms: Sequence[int],
) -> tuple[int | None, Iterator[int], bool]:
    """The PMs a pending VM fits by counts, in Algorithm 1's order: the first, the rest (read lazily),
    and whether they ascend by VM count. Active PMs that fit as they are, fewest VMs first (`active`
    is so sorted); if none, PMs that would fit it empty, active first, most free memory slices first.
    (None, ...) when it fits no PM even empty."""
    classes_of_vm = [class_sets.get(h, set()) for h in vm.gpu_classes] if vm.gis else None
    fit: Iterator[int] = (
        j
        for j in active
        if (classes_of_vm is None or any(j in c for c in classes_of_vm)) and fits_counts(dc, vm, j)
    )
    first = next(fit, None)
    if first is not None:
        return first, fit, True
    pool = _pool(candidates_by_class, vm) if vm.gis else all_pms
    spares = [j for j in pool if fits_counts(dc, vm, j, empty=True)]
    spares.sort(key=lambda j: (not dc.is_active(j), -dc.free_memory_slices(j), j))
    return (spares[0], iter(spares[1:]), False) if spares else (None, iter(()), False)


def _pool(candidates_by_class: dict[str, list[int]], vm: VmSpec) -> list[int]:
    """The candidate PMs of every class the VM may run on, in data-center order."""
    if not vm.alternatives:
        return candidates_by_class.get(vm.gpu_class, [])
    return sorted({j for h in vm.gpu_classes for j in candidates_by_class.get(h, ())})


def source_worth_emptying(dc: DataCenter, j: int, weights: Weights) -> bool:
    """Line 18 of Algorithm 1: b_j + Σ_{active k} e_jk > w_p·CF_j + Σ_{i on j} 2δ_i. Remembered with
    PM j's state (`DataCenter.remembered`) for the weights it reads: a check at thousands of PMs
    recomputes only the PMs changed since the last one."""
    key = (
        "worth",
        weights.pm,
        weights.gpu,
        weights.free_start,
        weights.migration,
        weights.migration_per_gb,
        weights.vm_weights,
    )
    return dc.remembered(j, key, lambda: _worth_emptying(dc, j, weights))


def _worth_emptying(dc: DataCenter, j: int, weights: Weights) -> bool:
    pm = dc.pms[j]
    active = [k for k in range(len(pm.gpus)) if dc.gpu_active(j, k)]
    gain = weights.b(pm) + weights.gpu * len(active)
    cost = weights.free_start * sum(dc.cf(j, k) for k in active)
    cost += sum(2 * weights.delta(dc.vms[v]) for v in dc.vms_on(j))
    return gain > cost


def _can_empty(dc: DataCenter, sources: Sequence[int], receivers: Sequence[int]) -> bool:
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


class Consolidation(StrEnum):
    """How a consolidation neighborhood is read from Algorithm 1 (the `consolidation` policy option)."""

    FILL = "fill"  # lines 17-22 as written: M̂ = S then R, up to M_max, even when no source survives
    SOURCES = "sources"  # an earlier reading: no call unless some source can be emptied into R


def select_consolidation(
    dc: DataCenter,
    gpu_class: str,
    weights: Weights,
    bounds: Bounds,
    locked: frozenset[int] = frozenset(),
    reading: Consolidation = Consolidation.FILL,
    visited: frozenset[int] = frozenset(),
    spill: bool = False,
) -> Neighborhood:
    """Algorithm 1, ConsolidationCall(h).

    `visited`: receivers to pass over (the rotating variant: PMs that earlier calls since the last
    change already held; sources are kept). `spill`: sources beyond the M_max/2 kept in S may serve
    as receivers (as written, R holds only PMs that failed the source filter).

    `Consolidation.FILL` (default): line 20 fills M̂ with the kept sources, then the receivers,
    before the loop of lines 21-22, and that loop only shrinks S — so the call runs on up to M_max
    active PMs of the class even when no source is worth emptying or none can be emptied; the BILP
    may still switch off a GPU by moving GIs inside a PM, or empty a PM that the count test did not
    expect to empty.
    `Consolidation.SOURCES`: the neighborhood is empty (no call) unless some source survives the loop.
    """
    reading = Consolidation(reading)  # ValueError on anything else
    members = [j for j in dc.class_pms.get(gpu_class, []) if dc.is_active(j) and j not in locked]
    sources = sorted(members, key=lambda j: (dc.vm_count(j), j))
    sources = [j for j in sources if source_worth_emptying(dc, j, weights)]
    source_set = set(sources)
    receivers = [j for j in members if j not in source_set]
    if gpu_class != NO_GPU_CLASS:
        receivers += [j for j in dc.class_pms.get(NO_GPU_CLASS, []) if dc.is_active(j) and j not in locked]
    b = _Builder(dc, bounds)
    kept_sources: list[int] = []
    for j in sources:
        if len(kept_sources) >= max(1, bounds.pm_limit // 2):
            break
        if b.add(j):
            kept_sources.append(j)
    if spill:
        receivers += [j for j in sources if j not in b.chosen]
    receivers = [j for j in receivers if j not in visited]
    receivers.sort(key=lambda j: (-dc.free_memory_slices(j), -dc.free_cpu_m(j), j))
    kept_receivers: list[int] = []
    for j in receivers:
        if b.full:
            break
        if b.add(j):
            kept_receivers.append(j)
    if reading is Consolidation.FILL:
        return Neighborhood(tuple(b.pms), (), (), CallKind.CONSOLIDATION, gpu_class)
    while kept_sources and not _can_empty(dc, kept_sources, kept_receivers):
        kept_receivers.append(kept_sources.pop())
    if not kept_sources:
        return Neighborhood((), (), (), CallKind.CONSOLIDATION, gpu_class)
    return Neighborhood(tuple(b.pms), (), (), CallKind.CONSOLIDATION, gpu_class)


def select_random(
    dc: DataCenter,
    rng: random.Random,
    bounds: Bounds,
    queue: Sequence[str] = (),
    gpu_class: str | None = None,
    locked: frozenset[int] = frozenset(),
) -> Neighborhood:
    """The ablation's random neighborhoods: random active PMs within the bounds.

    An admission call still starts from the first PM that fits the oldest pending VM (so that every
    call reaches a decision for it), then adds random active PMs of the classes involved.
    """
    if queue:
        nb = select_admission(dc, queue[:1], Bounds(1, bounds.n_max, bounds.bound, 1), locked)
        if not nb.pending:
            return nb
        classes = set(dc.pending[queue[0]].gpu_classes)
    else:
        nb = Neighborhood((), (), (), CallKind.CONSOLIDATION, gpu_class)
        classes = {gpu_class or NO_GPU_CLASS}
    b = _Builder(dc, bounds)
    for j in nb.pms:
        b.add(j, force=True, extra_vms=len(nb.pending))
    pool = sorted(
        j
        for h in classes
        for j in dc.class_pms.get(h, [])
        if dc.is_active(j) and j not in locked and j not in b.chosen
    )
    rng.shuffle(pool)
    for j in pool:
        if b.full:
            break
        b.add(j)
    return Neighborhood(tuple(b.pms), nb.pending, nb.rejected, nb.kind, gpu_class)


# --- bounds for bigger servers ---------------------------------------------------------------------
NEIGHBORHOOD_GPUS = 32  # the paper's neighborhood: M_max = 16 PMs of 2 GPUs, N_max = 64 VMs
VMS_PER_GPU = 2  # N_max per GPU of the neighborhood (64 / 32)
MIN_M_MAX = 4  # room for two sources and two receivers in a consolidation call


def derived_bounds(pms: Sequence[PmSpec]) -> tuple[int, int]:
    """(M_max, N_max) that keep the paper's neighborhood size in GPUs on PMs with more GPUs.

    With g the mean number of GPUs of the PMs that have GPUs: M_max = max(4, ⌈32 / g⌉) PMs and
    N_max = round(2 · M_max · g) VMs — 16 and 64 for the paper's 2-GPU servers, 8 and 64 for 4-GPU
    servers, 4 and 64 for 8-GPU servers. Without GPUs: the paper's 16 and 64.
    """
    counts = [len(pm.gpus) for pm in pms if pm.gpus]
    if not counts:
        return Bounds.m_max, Bounds.n_max
    g = sum(counts) / len(counts)
    m_max = max(MIN_M_MAX, math.ceil(NEIGHBORHOOD_GPUS / g - 1e-9))
    return m_max, round(VMS_PER_GPU * m_max * g)
