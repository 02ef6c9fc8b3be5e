"""GRMU's two baskets of GPUs and its arrival rule (docs/policies.md#grmu).

Baskets. A GI is *large* when its memory slices are at least `share` of its GPU's (default one half:
3g.20gb, 4g.20gb and 7g.40gb on an A100-40GB), else *small*. A GPU is in the large basket when it
holds a large GI, in the small basket when it holds only small ones, in none when idle — a pure
function of its PM's state. A GI goes only to a GPU of its basket or to an idle GPU, which joins the
basket. Per GPU class h with N_h GPUs a basket holds at most ⌈quota · N_h⌉ GPUs (its capacity limit):
a GI whose basket is at its limit goes only to GPUs already in it.

Rule (`basket_fit`, one PM). The VM's GIs largest first, each on the lowest GPU of its basket where
the default GI placement (CF-max start, lowest on ties) has a start, else on the lowest idle GPU.
`choose` keeps, among the candidate PMs whose openings the limits allow, the smallest (GPUs opened,
PM switched on, pm): first fit among the placements that switch on the least hardware.
Complexity: O(|M| · |GIs| · |K_j|) per arrival (per-PM answers remembered until the PM changes),
plus O(|M_h|) remembered per-PM counts for the limits.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from origamig.cluster.catalog import Profile
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.mig import Geometry
from origamig.cluster.records import GiSlot, Placement, VmSpec
from origamig.memo import remember
from origamig.policies.arrival_rule import (
    candidate_pms,
    class_gpus,
    gi_order,
    profile_on,
    shape_token,
    variants_on,
)

LARGE, SMALL = 0, 1  # basket indices; `Opened` counts GPUs per basket in this order
Opened = tuple[int, int]
Fit = tuple[Opened, Placement]


@dataclass(frozen=True)
class Baskets:
    """Which GIs are large (`share`) and how many GPUs of a class each basket may hold (quotas)."""

    share: float = 0.5
    large_quota: float = 0.75
    small_quota: float = 1.0

    def of_gi(self, prof: Profile, slices: int) -> int:
        """The basket of a GI of `prof` on a GPU of `slices` memory slices."""
        return LARGE if prof.memory_slices >= self.share * slices else SMALL

    def labels(self, dc: DataCenter, j: int, gpu_class: str) -> tuple[int | None, ...]:
        """The basket of each GPU of `gpu_class` on PM j, in `class_gpus` order (None: idle);
        remembered with the PM's state."""
        return dc.remembered(
            j, ("grmu-labels", self.share, gpu_class), functools.partial(self._labels, dc, j, gpu_class)
        )

    def _labels(self, dc: DataCenter, j: int, gpu_class: str) -> tuple[int | None, ...]:
        out: list[int | None] = []
        for k in class_gpus(dc, j, gpu_class):
            slices = dc.gpu_geometry(j, k).slices
            kinds = {self.of_gi(dc.vms[v].gis[n], slices) for v, n in dc.gis_on(j, k).values()}
            out.append(None if not kinds else min(kinds))  # LARGE (0) when any GI is large
        return tuple(out)

    def room(self, dc: DataCenter, j: int, gpu_class: str) -> Opened:
        """The most free memory slices on one GPU of each basket on PM j (remembered)."""
        return dc.remembered(
            j, ("grmu-room", self.share, gpu_class), functools.partial(self._room, dc, j, gpu_class)
        )

    def _room(self, dc: DataCenter, j: int, gpu_class: str) -> Opened:
        best = [0, 0]
        for k, label in zip(class_gpus(dc, j, gpu_class), self.labels(dc, j, gpu_class), strict=True):
            if label is not None:
                best[label] = max(best[label], dc.free_slices(j, k))
        return best[0], best[1]

    def limits(self, dc: DataCenter, gpu_class: str) -> Opened:
        """The most GPUs of `gpu_class` each basket may hold."""
        total = class_size(dc, gpu_class)
        return math.ceil(self.large_quota * total - 1e-9), math.ceil(self.small_quota * total - 1e-9)

    def held(self, dc: DataCenter, gpu_class: str) -> Opened:
        """The GPUs of `gpu_class` each basket holds now."""
        large = small = 0
        for j in dc.class_pms.get(gpu_class, ()):
            labels = self.labels(dc, j, gpu_class)
            large, small = large + labels.count(LARGE), small + labels.count(SMALL)
        return large, small


# (id of a PM list, class) -> (the list, its GPUs of the class): keyed by identity, the list kept in the
# entry so that its id is not reused while cached (origamig/memo.py).
_CLASS_SIZES: dict[tuple[int, str], tuple[tuple[object, ...], int]] = {}
CLASS_SIZES_KEPT = 256


def class_size(dc: DataCenter, gpu_class: str) -> int:
    """The number of GPUs of `gpu_class` in the data center (cached per PM list)."""
    hit = _CLASS_SIZES.get((id(dc.pms), gpu_class))
    if hit is None or hit[0] is not dc.pms:
        n = sum(len(class_gpus(dc, j, gpu_class)) for j in dc.class_pms.get(gpu_class, ()))
        hit = remember(_CLASS_SIZES, (id(dc.pms), gpu_class), (dc.pms, n), CLASS_SIZES_KEPT)
    return hit[1]


class PmView:
    """PM j's GPUs of one class as a greedy placement sees them: occupancy and basket, mutable."""

    def __init__(self, dc: DataCenter, j: int, gpu_class: str, rule: Baskets) -> None:
        self.gpus = class_gpus(dc, j, gpu_class)
        self.geos: list[Geometry] = [dc.gpu_geometry(j, k) for k in self.gpus]
        self.occ = [dc.occupancy(j, k) for k in self.gpus]
        self.label = list(rule.labels(dc, j, gpu_class))

    def take(self, i: int, prof: Profile, start: int, basket: int) -> GiSlot:
        self.occ[i] |= prof.mask(start)
        self.label[i] = basket
        return GiSlot(self.gpus[i], start)


def greedy(
    rule: Baskets,
    view: PmView,
    vm: VmSpec,
    order: tuple[int, ...],
    *,
    exclude: Iterable[int] = (),
    open_idle: bool = True,
    keep: Mapping[int, GiSlot] | None = None,
) -> tuple[list[GiSlot | None], Opened]:
    """GRMU's rule on one PM: a slot per GI (None where it found none) and the GPUs opened per basket.

    `exclude`: GPUs no GI may use; `open_idle=False`: no idle GPU joins a basket; `keep`: slots a GI
    takes first when they are free (a VM that stays on its PM keeps its other GIs). Updates `view`."""
    slots: list[GiSlot | None] = [None] * len(vm.gis)
    opened = [0, 0]
    skip = frozenset(exclude)
    for n in order:
        hit = _slot_for(rule, view, vm.gis[n], skip, open_idle, keep.get(n) if keep else None)
        if hit is not None:
            i, p, z, b = hit
            opened[b] += view.label[i] is None
            slots[n] = view.take(i, p, z, b)
    return slots, (opened[0], opened[1])


def _slot_for(
    rule: Baskets, view: PmView, prof: Profile, exclude: frozenset[int], open_idle: bool, kept: GiSlot | None
) -> tuple[int, Profile, int, int] | None:
    """(GPU position, profile, start, basket) for one GI: its kept slot, else the lowest GPU of its
    basket with a default start, else the lowest idle GPU (when `open_idle`); None if none."""
    usable = [
        (i, p)
        for i, k in enumerate(view.gpus)
        if k not in exclude and (p := profile_on(view.geos[i].model, prof))
    ]
    if not usable:
        return None
    b = rule.of_gi(prof, view.geos[usable[0][0]].slices)
    if kept is not None:
        for i, p in usable:
            if (
                view.gpus[i] == kept.gpu
                and view.label[i] in (b, None)
                and not view.occ[i] & p.mask(kept.start)
            ):
                return i, p, kept.start, b
    for i, p in usable:
        if view.label[i] == b and (z := view.geos[i].default_start(view.occ[i], p)) is not None:
            return i, p, z, b
    for i, p in usable:
        if (
            open_idle
            and view.label[i] is None
            and (z := view.geos[i].default_start(view.occ[i], p)) is not None
        ):
            return i, p, z, b
    return None


def basket_fit(rule: Baskets, dc: DataCenter, j: int, vm: VmSpec, order: tuple[int, ...]) -> Fit | None:
    """(GPUs opened per basket, placement) of the VM on PM j by GRMU's rule; None if a GI finds no GPU."""
    slots, opened = greedy(rule, PmView(dc, j, vm.gpu_class, rule), vm, order)
    if any(s is None for s in slots):
        return None
    return opened, Placement(j, tuple(slots))  # type: ignore[arg-type]


def allowed(opened: Opened, held: Opened, limits: Opened) -> bool:
    """Whether opening `opened` GPUs keeps every basket that grows within its limit."""
    return all(o == 0 or h + o <= cap for o, h, cap in zip(opened, held, limits, strict=True))


T = TypeVar("T")
Scored = tuple[tuple[int, ...], Opened, T]  # (key, GPUs opened per basket, answer)
PmScore = Callable[[Baskets, DataCenter, int, VmSpec, tuple[int, ...]], "Scored[T] | None"]


def choose(
    dc: DataCenter, vm: VmSpec, locked: frozenset[int], rule: Baskets, score: PmScore[T]
) -> tuple[int, T] | None:
    """The PM and answer of smallest `(key, pm)` among the candidate PMs whose openings the basket
    limits allow; `score` is pure in the PM's state and remembered with it. The scan stops at a key
    of zeros (no smaller one exists); the limits are read only for answers that open a GPU."""
    best: tuple[tuple[int, ...], int, T] | None = None
    quota: dict[str, tuple[Opened, Opened]] = {}
    asks: dict[str, tuple[Hashable, tuple[int, ...]]] = {}  # per class of the VM: memo key, GI order
    for j in candidate_pms(dc, vm, locked):
        for variant in variants_on(dc, j, vm):  # fresh objects for a VM with alternatives: keyed by class
            h = variant.gpu_class
            if h not in asks:
                order = gi_order(variant)
                asks[h] = ((score, rule, shape_token(variant.gis), order), order)
            key, order = asks[h]
            hit = dc.remembered(j, key, functools.partial(score, rule, dc, j, variant, order))
            if hit is None or (best is not None and hit[0] >= best[0]):  # ascending j: ties keep the lowest
                continue
            if any(hit[1]) and h not in quota:
                quota[h] = (rule.held(dc, h), rule.limits(dc, h))
            if not any(hit[1]) or allowed(hit[1], *quota[h]):
                best = (hit[0], j, hit[2])
        if best is not None and not any(best[0]):
            break
    return None if best is None else (best[1], best[2])


def arrival_score(
    rule: Baskets, dc: DataCenter, j: int, vm: VmSpec, order: tuple[int, ...]
) -> Scored[Placement] | None:
    """A direct placement on PM j, keyed (GPUs opened, PM switched on)."""
    fit = basket_fit(rule, dc, j, vm, order)
    if fit is None:
        return None
    return (sum(fit[0]), int(not dc.is_active(j))), fit[0], fit[1]
