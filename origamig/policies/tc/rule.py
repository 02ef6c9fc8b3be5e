"""TC's placement rule (Turkkan et al.), shared by its arrival decisions and its compaction.

Score (direction: larger is better): the joint utilization (s_m + s_c) / (S_m + S_c) of a GPU, its
used memory and compute slices over its memory and compute slices. Each GI, largest first, goes to
the GPU whose utilization *after* the assignment is the largest (ties: lowest GPU), at the default
GI placement's start; a PM is scored by the mean utilization of the GPUs the VM uses.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from origamig.cluster.catalog import Profile
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.mig import Geometry
from origamig.cluster.records import GiSlot, Placement, VmSpec
from origamig.policies.arrival_rule import class_gpus, profile_on


def joint_utilization(geo: Geometry, used_m: int, used_c: int) -> float:
    """(s_m + s_c) / (S_m + S_c) of a GPU of `geo` (pure; larger = fuller)."""
    return (used_m + used_c) / (geo.slices + geo.model.compute_slices)


def tc_place(
    vm: VmSpec, order: tuple[int, ...], j: int, views: list[list[Any]]
) -> tuple[Any, Placement] | None:
    """TC's rule on one PM: `views` are `[gpu, geometry, blocked mask, s_m, s_c]` (ascending gpu).

    Returns `(key, placement)` with key = −(mean utilization of the GPUs the VM uses), or None when a
    GI finds no GPU. `views` is updated in place.
    """
    slots: list[GiSlot | None] = [None] * len(vm.gis)
    used: dict[int, None] = {}
    for n in order:
        gi = vm.gis[n]
        best: tuple[float, int, int, Profile] | None = None
        for i, view in enumerate(views):
            geo = view[1]
            model = geo.model
            p = gi if gi.gpu_model == model.name else profile_on(model, gi)
            if p is None:
                continue
            z = geo.default_table[p.index][view[2]]  # geo.default_start, inlined (-1: no room)
            if z < 0:
                continue
            u = joint_utilization(geo, view[3] + p.memory_slices, view[4] + p.compute_slices)
            if best is None or u > best[0]:  # ascending gpu: ties keep the lowest
                best = (u, i, z, p)
        if best is None:
            return None
        _, i, z, p = best
        view = views[i]
        view[2] |= p.mask(z)
        view[3] += p.memory_slices
        view[4] += p.compute_slices
        slots[n] = GiSlot(view[0], z)
        used[i] = None
    return -_mean_utilization([views[i] for i in used]), Placement(j, tuple(slots))  # type: ignore[arg-type]


def _mean_utilization(views: list[list[Any]]) -> float | Fraction:
    """Mean joint utilization, exact on ties (one float division when all GPUs share S_m + S_c)."""
    dens = {v[1].slices + v[1].model.compute_slices for v in views}
    if len(dens) == 1:  # small integers: the float order of num/den is the exact rational order
        return sum(v[3] + v[4] for v in views) / (len(views) * dens.pop())
    return sum(Fraction(v[3] + v[4], v[1].slices + v[1].model.compute_slices) for v in views) / len(views)


def tc_fit_on_pm(dc: DataCenter, j: int, vm: VmSpec, order: tuple[int, ...]) -> tuple[Any, Placement] | None:
    """TC's arrival rule on PM j from the live counters.

    A PM where the VM's largest GI fits on no GPU is rejected before building the views (`tc_place`
    would reject it too: it places that GI first)."""
    ks = class_gpus(dc, j, vm.gpu_class)
    first = vm.gis[order[0]]
    for k in ks:
        geo = dc.gpu_geometry(j, k)
        p = profile_on(geo.model, first)
        if p is not None and geo.default_table[p.index][dc.occupancy(j, k)] >= 0:
            break
    else:
        return None
    views: list[list[Any]] = []
    for k in ks:
        geo = dc.gpu_geometry(j, k)
        occ = dc.occupancy(j, k)
        views.append([k, geo, occ, geo.slices - geo.free_count[occ], dc.used_compute(j, k)])
    return tc_place(vm, order, j, views)
