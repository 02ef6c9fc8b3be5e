"""The shared arrival rule (docs/policies.md#arrival-rule) and the pieces every baseline builds on.

Rule (`first_fit`). PMs in data-center order; a PM is a candidate when it is not in `locked`, carries
a GPU of the VM's class and has enough free CPU and RAM. On a candidate, the VM's GIs go one at a
time, largest first, each to the lowest-index GPU of its class where the default GI placement (the
free permissible start of maximal CF, lowest start on ties) finds a start. The first candidate on
which every GI gets a place wins; otherwise the result is a `Rejection` record (FF rejects, OrigaMIG
turns it into `Deferred`). A VM without GIs goes to the first PM in data-center order with enough
free CPU and RAM, with or without GPUs (the rule read literally; every baseline does the same).

Largest first: by memory slices, then compute slices, then position in the request (descending
size, stable). Complexity: O(|M| · |GIs| · |K_j|) O(1) table lookups (`mig.Geometry`).

Preference lives elsewhere: `choose_pm` takes a per-PM fit function that returns `(key, placement)`
or None (feasibility and score together, per PM) and keeps the candidate of smallest `(key, pm)`.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from origamig.cluster.catalog import GpuModel, Profile
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import MILLI, GiSlot, Placement, PmSpec, VmSpec
from origamig.memo import remember
from origamig.policies import arrival_index
from origamig.policies.base import Rejection

PmFit = Callable[[DataCenter, int, VmSpec, tuple[int, ...]], "tuple[Any, Placement] | None"]


def gi_order(vm: VmSpec) -> tuple[int, ...]:
    """Indices of `vm.gis`, largest first: memory slices, then compute slices (descending), then index."""
    gis = vm.gis
    return tuple(sorted(range(len(gis)), key=lambda n: (-gis[n].memory_slices, -gis[n].compute_slices, n)))


def profile_on(model: GpuModel, prof: Profile) -> Profile | None:
    """`prof` as `model` knows it (same class and name; bit tables index by model), None if absent."""
    if prof.gpu_model == model.name:
        return prof
    if model.gpu_class != prof.gpu_class or not model.has_profile(prof.name):
        return None
    return model.profile(prof.name)


# id(PM list) → (the list, GPU indices by class per PM): keyed by identity, the list kept in the entry
# (origamig/memo.py). A run uses one PM list; tests build many.
_CLASS_GPUS: dict[int, tuple[tuple[PmSpec, ...], list[dict[str, tuple[int, ...]]]]] = {}
CLASS_GPUS_KEPT = 64


def class_gpus(dc: DataCenter, j: int, gpu_class: str) -> tuple[int, ...]:
    """Indices of the GPUs of class `gpu_class` on PM j, ascending (cached per PM list)."""
    hit = _CLASS_GPUS.get(id(dc.pms))
    if hit is None or hit[0] is not dc.pms:
        table: list[dict[str, tuple[int, ...]]] = []
        for pm in dc.pms:
            by_class: dict[str, list[int]] = {}
            for k, g in enumerate(pm.gpus):
                by_class.setdefault(g.gpu_class, []).append(k)
            table.append({h: tuple(ks) for h, ks in by_class.items()})
        hit = remember(_CLASS_GPUS, id(dc.pms), (dc.pms, table), CLASS_GPUS_KEPT)
    return hit[1][j].get(gpu_class, ())


def pms_of(dc: DataCenter, vm: VmSpec) -> Sequence[int]:
    """The PMs that carry a GPU of a class the VM may run on (every PM for a VM without GIs), in
    data-center order."""
    if not vm.gis:
        return range(len(dc.pms))
    if not vm.alternatives:
        return dc.class_pms.get(vm.gpu_class, ())
    return sorted({j for h in vm.gpu_classes for j in dc.class_pms.get(h, ())})


def variants_on(dc: DataCenter, j: int, vm: VmSpec) -> tuple[VmSpec, ...]:
    """The VM as each class it may run on that PM j carries knows it (itself without alternatives)."""
    if not vm.alternatives:
        return (vm,)
    return tuple(v for v in vm.variants() if class_gpus(dc, j, v.gpu_class))


def candidate_pms(dc: DataCenter, vm: VmSpec, locked: frozenset[int]) -> Iterator[int]:
    """PMs, in data-center order, not locked, of a class of the VM (any PM without GIs), with CPU/RAM."""
    for j in pms_of(dc, vm):
        if j not in locked and dc.fits_resources(vm, j):
            yield j


def default_fit_on_pm(dc: DataCenter, j: int, vm: VmSpec, order: tuple[int, ...]) -> Placement | None:
    """The VM's GIs in `order`, each on the lowest GPU of PM j where the default placement has a start."""
    gpus = class_gpus(dc, j, vm.gpu_class)
    occ = [dc.occupancy(j, k) for k in gpus]
    slots: list[GiSlot | None] = [None] * len(vm.gis)
    for n in order:
        prof = vm.gis[n]
        for i, k in enumerate(gpus):
            geo = dc.gpu_geometry(j, k)
            p = profile_on(geo.model, prof)
            if p is None:
                continue
            z = geo.default_start(occ[i], p)
            if z is not None:
                slots[n] = GiSlot(k, z)
                occ[i] |= p.mask(z)
                break
        else:
            return None
    return Placement(j, tuple(slots))  # type: ignore[arg-type]


def first_fit(dc: DataCenter, vm: VmSpec, locked: frozenset[int] = frozenset()) -> Placement | Rejection:
    """The arrival rule: the first candidate PM where every GI gets a default placement (a VM that
    may run on several classes tries them in its order on each PM). A scan, even at thousands of PMs:
    it stops at the first PM that fits, and the arrival index (`choose_pm`) measured no faster for it
    (FF at 2,048 PMs: 12.7-15.9 s of CPU with the index, 11.4-12.0 s scanning)."""
    for j in candidate_pms(dc, vm, locked):
        for variant in variants_on(dc, j, vm):
            pl = default_fit_on_pm(dc, j, variant, gi_order(variant))
            if pl is not None:
                return pl
    return no_fit(dc, vm, locked)


def first_fit_on_pm(
    dc: DataCenter, j: int, vm: VmSpec, order: tuple[int, ...]
) -> tuple[int, Placement] | None:
    """First fit as a per-PM fit (`PmFit`): the default placement on PM j with key 0, so that among the
    PMs it places the VM on the lowest wins."""
    pl = default_fit_on_pm(dc, j, vm, order)
    return None if pl is None else (0, pl)


# GI profile tuples → a token that stands for them in per-PM memo keys (an int hashes in nanoseconds,
# a tuple of profiles in microseconds). Tokens are never reused: a shape forgotten and seen again
# gets a new one, so a remembered answer can go unused but never answers another shape.
_SHAPE_TOKENS: dict[tuple[Profile, ...], int] = {}
_NEXT_TOKEN = itertools.count()
SHAPE_TOKENS_KEPT = 4096


def shape_token(gis: tuple[Profile, ...]) -> int:
    """The token of a tuple of GI profiles (equal tuples, equal tokens, while it is kept)."""
    token = _SHAPE_TOKENS.get(gis)
    if token is None:
        token = remember(_SHAPE_TOKENS, gis, next(_NEXT_TOKEN), SHAPE_TOKENS_KEPT)
    return token


def choose_pm(dc: DataCenter, vm: VmSpec, locked: frozenset[int], fit: PmFit) -> Placement | Rejection:
    """The candidate PM with the smallest `(key, pm)` among those where `fit` places the VM (each
    class it may run on tried; on equal keys and PM the first class in its order wins).

    A VM without GIs takes `first_fit` (every PM scores alike; the lowest wins). A class of at least
    `INDEX_MIN_PMS` PMs is read from an index kept up to date by the state's journal
    (`arrival_index.py`), a smaller one scanned; both find the same PM.
    """
    if not vm.gis:
        return first_fit(dc, vm, locked)
    best: tuple[Any, int, int, Placement] | None = None
    for rank, variant in enumerate(vm.variants() if vm.alternatives else (vm,)):
        order = gi_order(variant)
        # a fit may read the VM's cores and memory (FGD's does), so they are part of the question
        memo_key = (fit, shape_token(variant.gis), order, vm.cpu_m, vm.ram_mb)
        score = _scorer(dc, fit, variant, order, memo_key)
        pms = dc.class_pms.get(variant.gpu_class, [])
        if len(pms) >= arrival_index.INDEX_MIN_PMS:
            hit = arrival_index.indexed_best(dc, variant.gpu_class, memo_key, vm, locked, score)
        else:
            hit = _scan_best(dc, pms, vm, locked, score)
        if hit is not None and (best is None or (hit[0], hit[1]) < (best[0], best[1])):
            best = (hit[0], hit[1], rank, hit[2])
    return best[3] if best is not None else no_fit(dc, vm, locked)


def _scorer(
    dc: DataCenter, fit: PmFit, vm: VmSpec, order: tuple[int, ...], memo_key: Any
) -> arrival_index.Score:
    """PM j → `fit`'s answer for `vm` there; `fit` reads PM j's GPUs only, so its answer holds until
    the PM changes and is remembered with the PM (`DataCenter.remembered`)."""

    def score(j: int) -> tuple[Any, Placement] | None:
        return dc.remembered(j, memo_key, functools.partial(fit, dc, j, vm, order))

    return score


def _scan_best(
    dc: DataCenter, pms: Sequence[int], vm: VmSpec, locked: frozenset[int], score: arrival_index.Score
) -> arrival_index.Best | None:
    """The smallest `(key, pm)` over `pms` not locked, with the VM's CPU and RAM, where `score` places it."""
    best: arrival_index.Best | None = None
    for j in pms:
        if j in locked or not dc.fits_resources(vm, j):
            continue
        hit = score(j)
        if hit is not None and (best is None or hit[0] < best[0]):  # ascending j: ties keep the lowest
            best = (hit[0], j, hit[1])
    return best


def no_fit(dc: DataCenter, vm: VmSpec, locked: frozenset[int]) -> Rejection:
    """Why `vm` fits nowhere, what it needs, and the most free seen on the PMs that could host it."""
    classes = vm.gpu_classes
    h = " or ".join(classes)
    needed: dict[str, Any] = {
        "cpu": vm.cpu,
        "ram_gb": vm.ram_gb,
        "gpu_class": h,
        "gis": [p.name for p in vm.gis],
    }
    pms = list(pms_of(dc, vm))
    if not pms:
        return Rejection(f"no PM has a GPU of class {h}", needed, {})
    unlocked = [] if len(locked) >= len(dc.pms) else [j for j in pms if j not in locked]  # all held: no walk
    free: dict[str, Any] = {
        "pms_of_class": len(pms),
        "unlocked": len(unlocked),
        "max_cpu": max((dc.free_cpu_m(j) for j in unlocked), default=0) / MILLI,
        "max_ram_gb": max((dc.free_ram_mb(j) for j in unlocked), default=0) / MILLI,
    }
    if vm.gis:
        free["max_free_slices_on_a_gpu"] = max(
            (dc.free_slices(j, k) for j in unlocked for c in classes for k in class_gpus(dc, j, c)), default=0
        )
    if not unlocked:
        reason = "every PM that could host it is locked by a running call"
    elif not any(dc.fits_resources(vm, j) for j in unlocked):
        reason = "no PM has enough free CPU and RAM"
    else:
        reason = "no PM with enough free CPU and RAM has free slices for every GI"
    return Rejection(reason, needed, free)
