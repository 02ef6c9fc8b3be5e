"""One GPU's memory slices as bit masks: S(F,p), CF, per-profile capacity, default GI placement.

A configuration's occupancy is an int whose bit u is set when memory slice u is used. Everything a
policy asks about one GPU is a table lookup indexed by that mask, precomputed once per GPU model
(2^|U| entries: 256 for an A100). Compute slices need no bookkeeping of their own: every profile's
compute window starts at its memory start and is no wider than its memory window, so GIs that do
not overlap in memory do not overlap in compute either.
"""

from __future__ import annotations

from dataclasses import dataclass

from origamig.cluster.catalog import GpuModel, Profile
from origamig.errors import PlacementError
from origamig.memo import remember


class Geometry:
    """Precomputed tables of one GPU model. Get it with `geometry(model)`; never mutate it."""

    def __init__(self, model: GpuModel) -> None:
        self.model = model
        self.slices = model.memory_slices
        self.full = (1 << self.slices) - 1
        self.profiles = model.profiles
        self.windows: tuple[tuple[tuple[int, int], ...], ...] = tuple(
            tuple((z, p.mask(z)) for z in p.starts) for p in model.profiles
        )
        size = 1 << self.slices
        self.capacity_table: list[tuple[int, ...]] = [
            tuple(sum(1 for _, m in w if not occ & m) for w in self.windows) for occ in range(size)
        ]
        self.cf_table: list[int] = [sum(c) for c in self.capacity_table]
        self.default_table: list[list[int]] = [
            [self._best_start(occ, w) for occ in range(size)] for w in self.windows
        ]
        self.free_count = [self.slices - bin(occ).count("1") for occ in range(size)]

    def _best_start(self, occ: int, window: tuple[tuple[int, int], ...]) -> int:
        best, best_cf = -1, -1
        for z, m in window:
            if not occ & m:
                cf = self.cf_table[occ | m]
                if cf > best_cf:
                    best, best_cf = z, cf
        return best

    # --- queries (all O(1) or O(starts)) -------------------------------------------------------
    def cf(self, occ: int) -> int:
        """Configuration flexibility: Σ_p |S(F,p)| for the slices `occ` leaves free."""
        return self.cf_table[occ]

    def capacity(self, occ: int) -> tuple[int, ...]:
        """Per-profile capacity |S(F,p)|, in the model's profile order."""
        return self.capacity_table[occ]

    def free_starts(self, occ: int, profile: Profile) -> tuple[int, ...]:
        """S(F,p): permissible starts of `profile` whose slices are all free."""
        return tuple(z for z, m in self.windows[profile.index] if not occ & m)

    def fits(self, occ: int, profile: Profile) -> bool:
        """True iff S(F,p) is non-empty."""
        return self.default_table[profile.index][occ] >= 0

    def default_start(self, occ: int, profile: Profile) -> int | None:
        """The NVIDIA driver's choice: the free permissible start maximizing CF, lowest on ties."""
        z = self.default_table[profile.index][occ]
        return z if z >= 0 else None

    def is_permitted(self, profile: Profile, start: int) -> bool:
        return start in profile.starts


# id(model) → (model, its tables): keyed by identity, as hashing a GpuModel is slow (origamig/memo.py).
_GEOMETRIES: dict[int, tuple[GpuModel, Geometry]] = {}
GEOMETRIES_KEPT = 256  # GPU model objects: a catalog has a dozen; each snapshot's inline models add theirs


def geometry(model: GpuModel) -> Geometry:
    """The (cached) tables of `model`."""
    hit = _GEOMETRIES.get(id(model))
    if hit is None or hit[0] is not model:
        hit = remember(_GEOMETRIES, id(model), (model, Geometry(model)), GEOMETRIES_KEPT)
    return hit[1]


@dataclass(frozen=True)
class PlacedGi:
    """A GI on a GPU: its profile and start slice."""

    profile: Profile
    start: int

    @property
    def mask(self) -> int:
        return self.profile.mask(self.start)


@dataclass(frozen=True)
class GpuConfig:
    """An immutable GPU configuration: the GIs placed on one GPU of `model`."""

    model: GpuModel
    gis: tuple[PlacedGi, ...] = ()

    @property
    def occupancy(self) -> int:
        occ = 0
        for gi in self.gis:
            occ |= gi.mask
        return occ

    @property
    def cf(self) -> int:
        return geometry(self.model).cf(self.occupancy)

    def capacity(self) -> dict[str, int]:
        """Per-profile capacity |S(F,p)| by profile name."""
        caps = geometry(self.model).capacity(self.occupancy)
        return {p.name: c for p, c in zip(self.model.profiles, caps, strict=True)}

    def _profile(self, profile: Profile | str) -> Profile:
        if not isinstance(profile, str):
            return profile
        if not self.model.has_profile(profile):
            raise PlacementError(f"{self.model.name} has no profile {profile!r}")
        return self.model.profile(profile)

    def place(self, profile: Profile | str, start: int) -> GpuConfig:
        """A new configuration with `profile` at `start`; `PlacementError` if not allowed."""
        p = self._profile(profile)
        if p.gpu_model != self.model.name:
            raise PlacementError(f"profile {p.name} of {p.gpu_model} cannot go on a {self.model.name}")
        if start not in p.starts:
            allowed = ", ".join(map(str, p.starts))
            raise PlacementError(
                f"{start} is not a permitted start for {p.name} on {self.model.name} (allowed: {allowed})"
            )
        if self.occupancy & p.mask(start):
            raise PlacementError(f"{p.name} at start {start} overlaps a GI already on the GPU")
        gis = tuple(sorted((*self.gis, PlacedGi(p, start)), key=lambda g: (g.start, g.profile.index)))
        return GpuConfig(self.model, gis)

    def remove(self, profile: Profile | str, start: int) -> GpuConfig:
        """A new configuration without the GI `profile` at `start`; `PlacementError` if absent."""
        name = profile if isinstance(profile, str) else profile.name
        for n, gi in enumerate(self.gis):
            if gi.profile.name == name and gi.start == start:
                return GpuConfig(self.model, self.gis[:n] + self.gis[n + 1 :])
        raise PlacementError(f"no {name} at start {start} on this GPU")

    def default_place(self, profile: Profile | str) -> GpuConfig | None:
        """Place `profile` where the default policy would; None when S(F,p) is empty."""
        p = self._profile(profile)
        z = geometry(self.model).default_start(self.occupancy, p)
        return None if z is None else self.place(p, z)

    def key(self) -> frozenset[tuple[str, int]]:
        """A hashable identity: the set of (profile name, start)."""
        return frozenset((gi.profile.name, gi.start) for gi in self.gis)
