"""GRMU's intra-GPU defragmentation: repack one GPU so that an arriving VM fits (docs/policies.md#grmu).

A VM that GRMU's rule places nowhere may still fit on a PM once one GPU of the PM is repacked: the
GPU's GIs move to other starts *on the same GPU* (intra-GPU migrations), and the VM's GIs that found
no place go there too. `defrag_score` tries each active GPU of the VM's class on the PM: the VM's GIs
are placed by the rule on the PM's other GPUs, those left over must be of the GPU's basket, and
`repack` places them with the GPU's GIs, moving as few GIs as possible. Pinned VMs
(`migratable` false) keep their GIs. Key: (GIs moved, GPUs opened, PM switched on), then lowest GPU.

`repack` tries the subsets of the GPU's GIs in order of size (fewest moved first, then
lexicographically) and packs the moved GIs with the new ones by depth-first search, each GI largest
first at the free starts of largest CF. A packing is kept only if its moves can run one VM at a time
without parking (no VM lands on its own old slices, no cycle of VMs landing on each other's): the
executor then plans it with no free slices elsewhere. The packing kept moves no GI in vain: a GI put
back at its own start would make the smaller subset without it work, and that one came first. At most
2^|GIs on a GPU| subsets (128 on an A100), each with a bounded search, remembered.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from origamig.cluster.catalog import Profile
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.mig import Geometry
from origamig.cluster.records import GiSlot, Placement, VmSpec
from origamig.memo import remember
from origamig.policies.arrival_rule import class_gpus, profile_on
from origamig.policies.grmu.baskets import Baskets, Opened, PmView, Scored, greedy


@dataclass(frozen=True)
class DefragFit:
    """An arriving VM's placement on a PM after one GPU is repacked, and the VMs the repack moves."""

    placement: Placement
    moved: tuple[tuple[str, Placement], ...]  # (VM id, its placement after the repack)
    gpu: int


# (geometry, pinned slices, (profile index, start, VM) of the movable GIs, profile indices of the new
# GIs) -> the repack; the key holds the geometry itself (hashed by identity, kept alive while cached).
_REPACKS: dict[tuple[object, ...], tuple[tuple[int, ...], tuple[int, ...]] | None] = {}
REPACKS_KEPT = 1 << 14


def repack(
    geo: Geometry,
    pinned: int,
    movable: tuple[tuple[Profile, int], ...],
    new: tuple[Profile, ...],
    groups: tuple[int, ...] | None = None,
) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """Starts for the `movable` GIs and the `new` ones on one GPU whose slices `pinned` stay used,
    moving the fewest movable GIs, in an order that needs no parking; None when there is none.
    `groups` says which movable GIs belong to one VM (default: each to its own)."""
    owners = tuple(range(len(movable))) if groups is None else groups
    gis = tuple((p.index, z, u) for (p, z), u in zip(movable, owners, strict=True))
    key = (geo, pinned, gis, tuple(p.index for p in new))
    if key in _REPACKS:
        return _REPACKS[key]
    return remember(_REPACKS, key, _repack(geo, pinned, movable, new, owners), REPACKS_KEPT)


def _repack(
    geo: Geometry,
    pinned: int,
    movable: tuple[tuple[Profile, int], ...],
    new: tuple[Profile, ...],
    owners: tuple[int, ...],
) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    if sum(p.memory_slices for p, _ in movable) + sum(p.memory_slices for p in new) > geo.free_count[pinned]:
        return None
    for size in range(len(movable) + 1):
        for moving in itertools.combinations(range(len(movable)), size):
            occ = pinned
            for n, (p, z) in enumerate(movable):
                if n not in moving:
                    occ |= p.mask(z)
            items = [movable[n][0] for n in moving] + list(new)

            def in_order(starts: list[int], moving: tuple[int, ...] = moving) -> bool:
                return _ordered([(owners[n], movable[n], z) for n, z in zip(moving, starts, strict=False)])

            starts = _pack(geo, occ, items, in_order)
            if starts is not None:
                where = dict(zip(moving, starts, strict=False))
                return tuple(where.get(n, z) for n, (_, z) in enumerate(movable)), tuple(starts[size:])
    return None


def _ordered(moves: list[tuple[int, tuple[Profile, int], int]]) -> bool:
    """Whether moves (VM, (profile, old start), new start) of GIs on one GPU can run one VM at a time
    without parking: no VM lands on its own old slices, and "lands on the old slices of" has no cycle."""
    old: dict[int, int] = {}
    landing: dict[int, int] = {}
    for u, (p, z), to in moves:
        old[u] = old.get(u, 0) | p.mask(z)
        landing[u] = landing.get(u, 0) | p.mask(to)
    if any(landing[u] & old[u] for u in old):
        return False
    waits = {u: {w for w in old if w != u and landing[u] & old[w]} for u in old}
    done: set[int] = set()
    while len(done) < len(waits):  # peel the VMs that wait for none left
        ready = [u for u in waits if u not in done and waits[u] <= done]
        if not ready:
            return False
        done.update(ready)
    return True


def _pack(
    geo: Geometry, occ: int, items: list[Profile], accept: Callable[[list[int]], bool]
) -> list[int] | None:
    """Starts for every GI of `items` on free slices of `occ` that `accept` takes (depth first,
    largest GI first, free starts of largest CF first, lowest on ties); None if there are none."""
    order = sorted(range(len(items)), key=lambda n: (-items[n].memory_slices, n))
    starts = [0] * len(items)

    def place(t: int, used: int) -> bool:
        if t == len(order):
            return accept(starts)
        p = items[order[t]]
        free = sorted((-geo.cf(used | m), z, m) for z, m in geo.windows[p.index] if not used & m)
        for _, z, m in free:
            starts[order[t]] = z
            if place(t + 1, used | m):
                return True
        return False

    return starts if place(0, occ) else None


def defrag_score(
    rule: Baskets, dc: DataCenter, j: int, vm: VmSpec, order: tuple[int, ...]
) -> Scored[DefragFit] | None:
    """The best repack of one GPU of PM j that lets the VM in, keyed (moved GIs, GPUs opened, PM off)."""
    best: Scored[DefragFit] | None = None
    for g in class_gpus(dc, j, vm.gpu_class):
        if not dc.gpu_active(j, g):
            continue
        hit = _on_gpu(rule, dc, j, g, vm, order)
        if hit is None:
            continue
        fit, moves, opened = hit
        key = (moves, sum(opened), int(not dc.is_active(j)))
        if best is None or key < best[0]:  # ascending g: ties keep the lowest
            best = (key, opened, fit)
    return best


def _on_gpu(
    rule: Baskets, dc: DataCenter, j: int, g: int, vm: VmSpec, order: tuple[int, ...]
) -> tuple[DefragFit, int, Opened] | None:
    """The VM on PM j with GPU g repacked for the GIs the rule places elsewhere on the PM: (fit,
    GIs moved, GPUs opened), or None."""
    view = PmView(dc, j, vm.gpu_class, rule)
    slots, opened = greedy(rule, view, vm, order, exclude=(g,))
    left = [n for n in order if slots[n] is None]
    geo = dc.gpu_geometry(j, g)
    label = view.label[view.gpus.index(g)]
    new = [profile_on(geo.model, vm.gis[n]) for n in left]
    if any(p is None or rule.of_gi(p, geo.slices) != label for p in new):
        return None
    pinned, movable, owners, owned = 0, [], [], 0
    for z, (v, n) in sorted(dc.gis_on(j, g).items()):
        prof = dc.vms[v].gis[n]
        owned |= prof.mask(z)
        if dc.vms[v].migratable:
            movable.append((prof, z))
            owners.append((v, n))
        else:
            pinned |= prof.mask(z)
    pinned |= dc.occupancy(j, g) & ~owned  # slices a move under way holds: no VM's, never free
    vms = sorted({v for v, _ in owners})
    groups = tuple(vms.index(v) for v, _ in owners)
    packed = repack(geo, pinned, tuple(movable), tuple(new), groups)  # type: ignore[arg-type]
    if packed is None:
        return None
    starts, new_starts = packed
    for n, z in zip(left, new_starts, strict=True):
        slots[n] = GiSlot(g, z)
    moved: dict[str, list[GiSlot]] = {}
    for (v, n), (_, old), z in zip(owners, movable, starts, strict=True):
        if z != old:
            moved.setdefault(v, list(dc.placement[v].gis))[n] = GiSlot(g, z)
    after = tuple((v, Placement(j, tuple(s))) for v, s in sorted(moved.items()))
    moves = sum(1 for (_, old), z in zip(movable, starts, strict=True) if z != old)
    return DefragFit(Placement(j, tuple(slots)), after, g), moves, opened  # type: ignore[arg-type]
