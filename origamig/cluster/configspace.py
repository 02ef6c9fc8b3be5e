"""The paper's §3 analysis of a GPU model's configuration space, for any model in the catalog.

A configuration is a set of placed GIs `(profile, start)` on one GPU. Configurations are encoded as
ints: bit i is set when placement i of `ConfigSpace.placements` (every profile at every permissible
start, in profile then start order) is present. Depth-first search from the empty GPU, adding one GI
at a time, reaches every set of pairwise non-overlapping placements (paper §3;
docs/model.md#configuration-space).

Counts (A100-40GB, docs/model.md#configuration-space): 723 configurations, 78 terminal, 482 suboptimal, 179
reachable by the default policy adding GIs only (59 suboptimal), 261,726 unordered two-GPU pairs, and the
looser counts 428 (one GPU) and 205,575 (two GPUs) with the definitions of `looser_single` and
`looser_two_gpu`.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from origamig.cluster.catalog import GpuModel
from origamig.cluster.mig import GpuConfig, geometry

Counts = tuple[int, ...]  # a multiset of profiles: how many GIs of each profile (model order)
Capacity = tuple[int, ...]  # |S(F,p)| per profile (model order); its sum is CF


@dataclass(frozen=True)
class ConfigSpace:
    """Every reachable configuration of one GPU model, keyed by its placement bit set (DFS order)."""

    model: GpuModel
    placements: tuple[tuple[int, int, int], ...]  # (profile index, start, slice mask) per bit
    occupancy: Mapping[int, int]  # configuration key -> bit mask of used memory slices

    def __len__(self) -> int:
        return len(self.occupancy)

    def counts(self, key: int) -> Counts:
        """The multiset of profiles of configuration `key`."""
        out = [0] * len(self.model.profiles)
        for bit, (p, _, _) in enumerate(self.placements):
            if key >> bit & 1:
                out[p] += 1
        return tuple(out)

    def cf(self, key: int) -> int:
        return geometry(self.model).cf(self.occupancy[key])

    def capacity(self, key: int) -> Capacity:
        return geometry(self.model).capacity(self.occupancy[key])

    def gis(self, key: int) -> list[tuple[str, int]]:
        """The GIs of configuration `key` as (profile name, start), by start slice."""
        found = [(z, p) for bit, (p, z, _) in enumerate(self.placements) if key >> bit & 1]
        return [(self.model.profiles[p].name, z) for z, p in sorted(found)]

    def gpu_config(self, key: int) -> GpuConfig:
        """Configuration `key` as a validated `mig.GpuConfig` (placing each GI checks it)."""
        config = GpuConfig(self.model)
        for name, start in self.gis(key):
            config = config.place(name, start)
        return config

    def key_of(self, gis: Iterable[tuple[str, int]]) -> int:
        """The key of the configuration holding `gis` (profile name, start); `KeyError` if unknown."""
        bit_of = {(self.model.profiles[p].name, z): bit for bit, (p, z, _) in enumerate(self.placements)}
        key = 0
        for gi in gis:
            key |= 1 << bit_of[gi]
        if key not in self.occupancy:
            raise KeyError(f"{sorted(gis)} is not a configuration of {self.model.name}")
        return key


def enumerate_space(model: GpuModel) -> ConfigSpace:
    """Depth-first search from the empty GPU: a child adds one GI that fits. O(configs × placements)."""
    placements = tuple((n, z, p.mask(z)) for n, p in enumerate(model.profiles) for z in p.starts)
    seen: dict[int, int] = {0: 0}
    stack = [0]
    while stack:
        key = stack.pop()
        occ = seen[key]
        for bit, (_, _, mask) in enumerate(placements):
            if not occ & mask:
                child = key | 1 << bit
                if child not in seen:
                    seen[child] = occ | mask
                    stack.append(child)
    return ConfigSpace(model, placements, seen)


def terminal(space: ConfigSpace) -> list[int]:
    """Configurations to which no GI can be added (CF 0: no profile has a free permissible start)."""
    return [key for key in space.occupancy if space.cf(key) == 0]


def best_cf(space: ConfigSpace) -> dict[Counts, int]:
    """The highest CF among all arrangements of each multiset of profiles."""
    best: dict[Counts, int] = {}
    for key in space.occupancy:
        c = space.counts(key)
        best[c] = max(best.get(c, -1), space.cf(key))
    return best


def suboptimal(space: ConfigSpace, keys: Iterable[int] | None = None) -> list[int]:
    """Configurations (of `keys`, default all) with lower CF than the best arrangement of their GIs."""
    best = best_cf(space)
    chosen = space.occupancy if keys is None else keys
    return [key for key in chosen if space.cf(key) < best[space.counts(key)]]


def default_reachable(space: ConfigSpace) -> list[int]:
    """Configurations the default GI placement (max CF, lowest start) reaches by adding GIs only."""
    geo = geometry(space.model)
    bit_of = {(p, z): bit for bit, (p, z, _) in enumerate(space.placements)}
    seen = {0}
    stack = [0]
    while stack:
        key = stack.pop()
        occ = space.occupancy[key]
        for n, profile in enumerate(space.model.profiles):
            z = geo.default_start(occ, profile)
            if z is not None:
                child = key | 1 << bit_of[(n, z)]
                if child not in seen:
                    seen.add(child)
                    stack.append(child)
    return sorted(seen)


def _more_for_some_profile(a: Capacity, b: Capacity) -> bool:
    """True when `a` offers more free starts than `b` for at least one profile."""
    return any(x > y for x, y in zip(a, b, strict=True))


def looser_single(space: ConfigSpace) -> list[int]:
    """Configurations C that offer more free starts for some profile than an alternative arrangement
    A of the same GIs although A has the same or lower CF: CF(A) ≤ CF(C), |S(F_C,p)| > |S(F_A,p)|.

    The paper's one-GPU sentence (§3: "can support a specific profile more effectively than
    alternative configurations ..., despite these alternatives having the same or lower CF").
    """
    groups: dict[Counts, set[Capacity]] = defaultdict(set)
    for key in space.occupancy:
        groups[space.counts(key)].add(space.capacity(key))
    out = []
    for key in space.occupancy:
        cap = space.capacity(key)
        cf = sum(cap)
        if any(sum(alt) <= cf and _more_for_some_profile(cap, alt) for alt in groups[space.counts(key)]):
            out.append(key)
    return out


def two_gpu_count(space: ConfigSpace) -> int:
    """Configurations of two GPUs of the model: unordered pairs (multisets of two), C(n+1, 2)."""
    n = len(space)
    return n * (n + 1) // 2


def looser_two_gpu(space: ConfigSpace) -> int:
    """Two-GPU configurations C for which an alternative A exists — the same GIs, possibly spread
    differently over the two GPUs — with CF(A) ≤ CF(C) that offers more free starts for some profile.

    The paper's two-GPU sentence (§3: "alternative configurations exist that can accommodate at least
    one type of profile more effectively, even if they have the same or lower CF"), the opposite
    direction of `looser_single`. CF and per-profile capacity of a pair are sums over its GPUs.
    Pairs are grouped by (multiset, capacity) classes so the work is O(classes²), not O(pairs²).
    """
    classes = Counter((space.counts(key), space.capacity(key)) for key in space.occupancy)
    items = sorted(classes.items())
    groups: dict[Counts, Counter[Capacity]] = defaultdict(Counter)
    for i, ((counts_a, cap_a), mult_a) in enumerate(items):
        for (counts_b, cap_b), mult_b in items[i:]:
            pairs = mult_a * (mult_a + 1) // 2 if (counts_a, cap_a) == (counts_b, cap_b) else mult_a * mult_b
            union = tuple(x + y for x, y in zip(counts_a, counts_b, strict=True))
            cap = tuple(x + y for x, y in zip(cap_a, cap_b, strict=True))
            groups[union][cap] += pairs
    total = 0
    for caps in groups.values():
        for cap, mult in caps.items():
            cf = sum(cap)
            if any(sum(alt) <= cf and _more_for_some_profile(alt, cap) for alt in caps):
                total += mult
    return total


@dataclass(frozen=True)
class Analysis:
    """The §3 figures of one GPU model."""

    gpu: str
    placements: int
    configurations: int
    terminal: int
    multisets: int
    suboptimal: int
    default_reachable: int
    default_suboptimal: int
    two_gpu: int
    looser_single: int
    looser_two_gpu: int
    enumeration_s: float
    analysis_s: float

    def as_dict(self) -> dict[str, str | int | float]:
        return {
            "gpu": self.gpu,
            "placements": self.placements,
            "configurations": self.configurations,
            "terminal": self.terminal,
            "multisets": self.multisets,
            "suboptimal": self.suboptimal,
            "suboptimal_share": _share(self.suboptimal, self.configurations),
            "default_reachable": self.default_reachable,
            "default_suboptimal": self.default_suboptimal,
            "default_suboptimal_share": _share(self.default_suboptimal, self.default_reachable),
            "two_gpu": self.two_gpu,
            "looser_single": self.looser_single,
            "looser_single_share": _share(self.looser_single, self.configurations),
            "looser_two_gpu": self.looser_two_gpu,
            "looser_two_gpu_share": _share(self.looser_two_gpu, self.two_gpu),
            "enumeration_s": self.enumeration_s,
            "analysis_s": self.analysis_s,
        }


def _share(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def analyze(model: GpuModel) -> Analysis:
    """Every §3 figure for `model`; times the DFS enumeration and the whole analysis separately."""
    start = time.perf_counter()
    space = enumerate_space(model)
    enumerated = time.perf_counter()
    reached = default_reachable(space)
    return Analysis(
        gpu=model.name,
        placements=len(space.placements),
        configurations=len(space),
        terminal=len(terminal(space)),
        multisets=len(best_cf(space)),
        suboptimal=len(suboptimal(space)),
        default_reachable=len(reached),
        default_suboptimal=len(suboptimal(space, reached)),
        two_gpu=two_gpu_count(space),
        looser_single=len(looser_single(space)),
        looser_two_gpu=looser_two_gpu(space),
        enumeration_s=enumerated - start,
        analysis_s=time.perf_counter() - start,
    )
