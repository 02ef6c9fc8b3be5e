"""Minimum Fragmentation Increment (MFI, Zambianco et al.; paper §6.3), adapted to VMs on PMs.

Score (direction: smaller is better). The fragmentation of a GPU with occupancy F is
    frag(F) = Σ_p [g_p ≤ free slices of F] · g_p · (permissible starts of p whose slices are not all free),
over the profiles of the GPU's model. Placing a GI raises it by frag(F ∪ GI) − frag(F).

Rule. On each candidate PM (not locked, a GPU of the VM's class, enough free CPU/RAM), the VM's GIs
go largest first (memory, then compute slices, then request order), each to the (GPU, start) of its
class with the least increase; the PM's score is the sum of its GIs' increases, and the PM with the
smallest total wins. Tie-break key: (increase, gpu, start) per GI, (total, pm) per PM. A VM that
fits nowhere is rejected; a VM without GIs takes the first PM with CPU/RAM (as FF).

Complexity: per (profile, occupancy) the best (increase, start) is a precomputed table entry, so an
arrival is O(|M| · |GIs| · |K_j|) lookups, like FF. No periodic work, no migrations.
"""

from __future__ import annotations

from origamig.cluster.catalog import Profile
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.mig import Geometry
from origamig.cluster.records import GiSlot, Placement, VmSpec
from origamig.memo import remember
from origamig.policies.arrival_only import ArrivalOnlyPolicy
from origamig.policies.arrival_rule import choose_pm, class_gpus, profile_on
from origamig.policies.base import Rejection, register


def fragmentation(geo: Geometry, occ: int) -> int:
    """frag(F) of a GPU of `geo` whose used slices are the bit mask `occ` (pure; see module doc)."""
    return _tables(geo)[0][occ]


def fragmentation_increase(geo: Geometry, occ: int, profile: Profile, start: int) -> int:
    """frag(F ∪ GI) − frag(F) for `profile` at `start` on occupancy `occ` (slices must be free)."""
    frag = _tables(geo)[0]
    return frag[occ | profile.mask(start)] - frag[occ]


def least_increase(geo: Geometry, occ: int, profile: Profile) -> tuple[int, int] | None:
    """(increase, start) of the free start with the least increase, lowest start on ties; None if none."""
    hit = _tables(geo)[1][profile.index][occ]
    return None if hit[1] < 0 else hit


# id(geometry) → (geometry, fragmentation of every occupancy, best start per profile and occupancy):
# keyed by identity for speed, the geometry kept in the entry (origamig/memo.py).
_TABLES: dict[int, tuple[Geometry, list[int], list[list[tuple[int, int]]]]] = {}
TABLES_KEPT = 256  # geometries, one per GPU model object (cluster.mig.GEOMETRIES_KEPT)


def _tables(geo: Geometry) -> tuple[list[int], list[list[tuple[int, int]]]]:
    hit = _TABLES.get(id(geo))
    if hit is None or hit[0] is not geo:
        size = 1 << geo.slices
        frag = []
        for occ in range(size):
            free, caps = geo.free_count[occ], geo.capacity(occ)
            frag.append(
                sum(
                    p.memory_slices * (len(p.starts) - c)
                    for p, c in zip(geo.profiles, caps, strict=True)
                    if p.memory_slices <= free
                )
            )
        best: list[list[tuple[int, int]]] = []
        for window in geo.windows:
            row = []
            for occ in range(size):
                options = [(frag[occ | m] - frag[occ], z) for z, m in window if not occ & m]
                row.append(min(options) if options else (0, -1))
            best.append(row)
        hit = remember(_TABLES, id(geo), (geo, frag, best), TABLES_KEPT)
    return hit[1], hit[2]


def mfi_fit_on_pm(dc: DataCenter, j: int, vm: VmSpec, order: tuple[int, ...]) -> tuple[int, Placement] | None:
    """(total increase, placement) of the VM on PM j by MFI's per-GI choice; None if a GI finds no start."""
    gpus = class_gpus(dc, j, vm.gpu_class)
    occ = [dc.occupancy(j, k) for k in gpus]
    slots: list[GiSlot | None] = [None] * len(vm.gis)
    total = 0
    for n in order:
        best: tuple[int, int, int, Profile] | None = None  # (increase, i, start, profile); i ascends
        for i, k in enumerate(gpus):
            geo = dc.gpu_geometry(j, k)
            p = profile_on(geo.model, vm.gis[n])
            hit = None if p is None else least_increase(geo, occ[i], p)
            if hit is not None and (best is None or hit[0] < best[0]):
                best = (hit[0], i, hit[1], p)  # type: ignore[assignment]
        if best is None:
            return None
        inc, i, z, p = best
        slots[n] = GiSlot(gpus[i], z)
        occ[i] |= p.mask(z)
        total += inc
    return total, Placement(j, tuple(slots))  # type: ignore[arg-type]


@register("mfi")
class MinFragmentationIncrement(ArrivalOnlyPolicy):
    """MFI: each GI where fragmentation grows least; the PM of least total growth."""

    name = "mfi"

    def place(self, dc: DataCenter, vm: VmSpec, locked: frozenset[int]) -> Placement | Rejection:
        return choose_pm(dc, vm, locked, mfi_fit_on_pm)
