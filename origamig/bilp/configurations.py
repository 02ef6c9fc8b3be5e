"""GPU configurations for the position-free configuration form, and their exact pruning.

A configuration of a GPU model is a set of non-overlapping (profile, start) placements (723 on an
A100 40GB, the empty one included). The model chooses one configuration per active GPU; its CF and
its count of GIs per profile are precomputed here. Pruning keeps at least one optimal solution:

- a configuration needing more GIs of a profile than the region has can never be chosen;
- among configurations with the same count vector, one is dominated by another whose weighted CF is
  at least as high and that keeps at least the same previous GI slots of that GPU (ties: the first
  in enumeration order stays). Swapping the dominated configuration for the dominating one keeps
  every row satisfied (the rows only see counts and kept slots) and does not lower the objective.
The current configuration of a GPU is never pruned (it keeps every previous slot), so the current
placement stays a complete start.
"""

from __future__ import annotations

from dataclasses import dataclass

from origamig.cluster.catalog import GpuModel
from origamig.cluster.mig import geometry
from origamig.cluster.records import Weights
from origamig.memo import remember

Slot = tuple[int, int]  # (profile index in its GPU model, start slice)


@dataclass(frozen=True)
class Configuration:
    """One arrangement of GIs on a GPU: placements, occupancy mask, GIs per profile, capacities."""

    slots: tuple[Slot, ...]
    occupancy: int
    counts: tuple[int, ...]  # GIs per profile, in the model's profile order
    capacity: tuple[int, ...]  # |S(F,p)| per profile for the slices it leaves free


# The tables below are keyed by plain values, not by the model or the weights (a GpuModel hashes
# slowly, a Weights not at all: origamig/memo.py). model name → (model, configurations, groups by
# counts), replaced when another model object of that name comes.
_ENUMERATED: dict[str, tuple[GpuModel, tuple[Configuration, ...], dict[tuple[int, ...], list[int]]]] = {}
MODELS_KEPT = 64  # model names
TABLES_KEPT = 4096  # CF tables: model × free-start weights
PRUNED_KEPT = 65536  # prunings: one per distinct (model, GIs allowed, GIs on the GPU, weights)


def enumerate_configurations(model: GpuModel) -> tuple[Configuration, ...]:
    """Every configuration of `model` (the empty one first), in a fixed order."""
    return _enumerated(model)[1]


def _enumerated(
    model: GpuModel,
) -> tuple[GpuModel, tuple[Configuration, ...], dict[tuple[int, ...], list[int]]]:
    hit = _ENUMERATED.get(model.name)
    if hit is not None and hit[0] is model:
        return hit
    geo = geometry(model)
    options = sorted((z, p.index, p.mask(z)) for p in model.profiles for z in p.starts)
    found: list[Configuration] = []

    def grow(first: int, slots: tuple[Slot, ...], occ: int, counts: list[int]) -> None:
        found.append(Configuration(slots, occ, tuple(counts), geo.capacity(occ)))
        for n in range(first, len(options)):
            z, p, mask = options[n]
            if occ & mask:
                continue
            counts[p] += 1
            grow(n + 1, (*slots, (p, z)), occ | mask, counts)
            counts[p] -= 1

    grow(0, (), 0, [0] * len(model.profiles))
    groups: dict[tuple[int, ...], list[int]] = {}
    for n, c in enumerate(found):
        groups.setdefault(c.counts, []).append(n)
    _ENUMERATED.pop(model.name, None)
    return remember(_ENUMERATED, model.name, (model, tuple(found), groups), MODELS_KEPT)


_CF: dict[tuple, list[float]] = {}  # (model, weight of each profile) → CF of each configuration


def cf_table(model: GpuModel, weights: Weights) -> list[float]:
    """Σ_p w_p |S(F,p)| of every configuration of `model` (the free-start term of an active GPU)."""
    wvec = tuple(weights.w(p.name) for p in model.profiles)
    key = (model.name, wvec)
    hit = _CF.get(key)
    if hit is None:
        configs = enumerate_configurations(model)
        cf = [sum(w * c for w, c in zip(wvec, conf.capacity, strict=True)) for conf in configs]
        hit = remember(_CF, key, cf, TABLES_KEPT)
    return hit


# (model, available, previous, weights) → the configurations kept; the keys follow the GPUs' states,
# so a long run meets ever new ones: the table is bounded (the oldest pruning is forgotten first).
_PRUNED: dict[tuple, tuple[int, ...]] = {}


def usable_configurations(
    model: GpuModel, available: tuple[int, ...], previous: frozenset[Slot], weights: Weights
) -> tuple[int, ...]:
    """Indices (into `enumerate_configurations(model)`) of the non-empty configurations worth keeping.

    `available[p]` bounds the GIs of profile p that may go on the GPU; `previous` are the slots of
    the GIs currently on it. Cached per (model, available, previous, weights): identical empty GPUs
    cost one pruning.
    """
    cf = cf_table(model, weights)
    key = (model.name, available, previous, tuple(weights.w(p.name) for p in model.profiles))
    hit = _PRUNED.get(key)
    if hit is not None:
        return hit
    _, configs, groups = _enumerated(model)
    keep: list[int] = []
    for counts, members in groups.items():
        if not any(counts) or any(c > a for c, a in zip(counts, available, strict=True)):
            continue
        if not previous:  # nothing to keep: the first configuration of highest CF dominates the group
            keep.append(max(members, key=lambda n: (cf[n], -n)))
            continue
        scored = [(cf[n], previous.intersection(configs[n].slots), n) for n in members]
        for c1, kept, n in scored:
            if not any(
                c2 >= c1 and kept2 >= kept and (c2 > c1 or kept2 > kept or n2 < n) for c2, kept2, n2 in scored
            ):
                keep.append(n)
    return remember(_PRUNED, key, tuple(sorted(keep)), PRUNED_KEPT)


def fitting_configurations(model: GpuModel, available: tuple[int, ...]) -> tuple[int, ...]:
    """Every non-empty configuration with at most `available[p]` GIs of each profile p, unpruned: for
    the GPUs a no-good cut names, where a pruned equal of an excluded configuration may be needed."""
    _, _, groups = _enumerated(model)
    return tuple(
        sorted(
            n
            for counts, members in groups.items()
            if any(counts) and all(c <= a for c, a in zip(counts, available, strict=True))
            for n in members
        )
    )


def configuration_of(model: GpuModel, slots: frozenset[Slot]) -> int:
    """Index of the configuration made of exactly `slots` (the current one of a GPU)."""
    _, configs, groups = _enumerated(model)
    counts = [0] * len(model.profiles)
    for p, _ in slots:
        counts[p] += 1
    for n in groups[tuple(counts)]:
        if frozenset(configs[n].slots) == slots:
            return n
    raise ValueError(f"no configuration of {model.name} has slots {sorted(slots)}")
