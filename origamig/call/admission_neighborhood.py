"""Algorithm 1, AdmissionCall(Q): the neighborhood of an admission call.

For each pending VM, oldest first, the PMs whose free resources fit it (fewest VMs first), else the
PMs that would fit it if empty (most free memory slices first), else the VM is rejected; then active
PMs by free memory slices, then free CPU; then one powered-off PM that fits the oldest pending VM.
N̂ = VMs on M̂ plus the pending VMs whose first PM is in M̂. The first PM chosen for the oldest
pending VM is taken whatever N_max says (`neighborhood_bounds.py`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from origamig.call.fit_counts import fits_counts
from origamig.call.kinds import CallKind
from origamig.call.neighborhood import Neighborhood, NeighborhoodBuilder
from origamig.call.neighborhood_bounds import Bounds
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import NO_GPU_CLASS, VmSpec


def select_admission(
    dc: DataCenter, queue: Sequence[str], bounds: Bounds, locked: frozenset[int] = frozenset()
) -> Neighborhood:
    """Algorithm 1, AdmissionCall(Q): the neighborhood for the pending VMs `queue` (oldest first), off
    the `locked` PMs (a VM that only a locked PM could take, even empty, is neither in it nor rejected:
    it waits)."""
    b = NeighborhoodBuilder(dc, bounds)
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


def _fill(
    dc: DataCenter, b: NeighborhoodBuilder, active: Sequence[int], classes: set[str], limit: int
) -> None:
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
