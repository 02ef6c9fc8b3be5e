"""Hardware as data: GPU MIG geometries and PM power curves, loaded and validated from `models/`.

No GPU model is written in Python. A GPU model file (TOML) gives the memory and compute slices,
the compatibility class, idle/max power and every GI profile with its permissible start slices.
A PM model file gives a power curve (watts at CPU load levels, interpolated linearly).
"""

from __future__ import annotations

import bisect
import functools
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from origamig.errors import CatalogError
from origamig.files import quantity_problem, show


@dataclass(frozen=True)
class Profile:
    """A GI profile of one GPU model, e.g. `3g.20gb` on the A100-40GB."""

    name: str
    gpu_model: str
    gpu_class: str
    compute_slices: int
    memory_slices: int
    memory_gb: float
    starts: tuple[int, ...]
    nvidia_smi_id: int | None = None
    index: int = 0  # position in its model's profile list (stable, used by bit tables)

    def mask(self, start: int) -> int:
        """Bit mask of the memory slices a GI of this profile occupies when it starts at `start`."""
        return ((1 << self.memory_slices) - 1) << start


@dataclass(frozen=True)
class GpuModel:
    """A MIG-capable GPU model: its slices, class, power and profiles."""

    name: str
    gpu_class: str
    memory_slices: int
    compute_slices: int
    memory_gb: float
    idle_power_w: float
    max_power_w: float
    profiles: tuple[Profile, ...]
    source: str = ""
    gi_create_s: float = 0.0  # seconds to create one GI (docs/solving.md#move-costs)
    gi_destroy_s: float = 0.0  # seconds to destroy one GI
    _by_name: Mapping[str, Profile] = field(default_factory=dict, repr=False, compare=False)

    def profile(self, name: str) -> Profile:
        """The profile called `name`; `KeyError` if this model has none."""
        return self._by_name[name]

    def has_profile(self, name: str) -> bool:
        return name in self._by_name

    @property
    def full_mask(self) -> int:
        return (1 << self.memory_slices) - 1


@dataclass(frozen=True)
class PmModel:
    """A server's power curve: watts at CPU load levels (percent), linear in between."""

    name: str
    cpu: float
    ram_gb: float
    load_percent: tuple[float, ...]
    power_w: tuple[float, ...]
    source: str = ""

    def power_at(self, load: float) -> float:
        """Power in watts at CPU load `load` (0..1), interpolated linearly between levels."""
        pct = min(max(load, 0.0), 1.0) * 100.0
        i = bisect.bisect_right(self.load_percent, pct)
        if i >= len(self.load_percent):
            return self.power_w[-1]
        lo_x, hi_x = self.load_percent[i - 1], self.load_percent[i]
        lo_y, hi_y = self.power_w[i - 1], self.power_w[i]
        return lo_y + (hi_y - lo_y) * (pct - lo_x) / (hi_x - lo_x)

    @property
    def idle_power_w(self) -> float:
        return self.power_w[0]


@dataclass(frozen=True)
class Catalog:
    """All GPU and PM models known to a run."""

    gpus: Mapping[str, GpuModel]
    pms: Mapping[str, PmModel]

    def gpu(self, name: str) -> GpuModel:
        try:
            return self.gpus[name]
        except KeyError:
            known = ", ".join(sorted(self.gpus))
            raise CatalogError(f"unknown GPU model {name!r} (known: {known})") from None

    def pm(self, name: str) -> PmModel:
        try:
            return self.pms[name]
        except KeyError:
            known = ", ".join(sorted(self.pms))
            raise CatalogError(f"unknown PM model {name!r} (known: {known})") from None

    def with_gpus(self, extra: Mapping[str, GpuModel]) -> Catalog:
        """A catalog where `extra` models are looked up first (snapshot-inline models)."""
        return Catalog(gpus={**self.gpus, **extra}, pms=self.pms)

    @property
    def default_pm(self) -> PmModel:
        return self.pms[DEFAULT_PM_MODEL]


DEFAULT_PM_MODEL = "DL380-Gen10Plus-2x8380"


def models_dir() -> Path:
    """Where the catalog lives: shipped inside the wheel, or `models/` of a source checkout."""
    package = Path(__file__).resolve().parent.parent
    packaged = package / "models"
    if packaged.is_dir():
        return packaged
    return package.parent / "models"


class _Fields:
    """Typed access to a TOML table that names file, field and value in every error."""

    def __init__(self, where: str, table: Any) -> None:
        if not isinstance(table, dict):
            raise CatalogError(f"{where}: expected a table, got {table!r}")
        self.where, self.table = where, table

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
        if key not in self.table:
            if default is ...:
                raise CatalogError(f"{self.where}.{key}: missing")
            return default
        value = self.table[key]
        if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            raise CatalogError(f"{self.where}.{key}: {value!r} has the wrong type")
        if not isinstance(value, kind):
            raise CatalogError(f"{self.where}.{key}: {value!r} has the wrong type")
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            problem = quantity_problem(value)
            if problem is not None:
                raise CatalogError(f"{self.where}.{key}: {problem}")
        return value

    def positive(self, key: str, kind: type | tuple[type, ...] = int, allow_zero: bool = False) -> Any:
        value = self.get(key, kind)
        if value < 0 or (value == 0 and not allow_zero):
            raise CatalogError(f"{self.where}.{key}: {value!r} must be positive")
        return value


def gpu_model_from_dict(data: Mapping[str, Any], where: str) -> GpuModel:
    """Build and validate a GPU model from a parsed table (a catalog file or a snapshot entry)."""
    f = _Fields(where, dict(data))
    name = f.get("name", str)
    gpu_class = str(f.get("class", (str, int)))
    mem = f.positive("memory_slices")
    comp = f.positive("compute_slices")
    if mem > 16:
        raise CatalogError(f"{where}.memory_slices: {mem} is more than the 16 supported")
    idle = f.positive("idle_power_w", (int, float), allow_zero=True)
    peak = f.positive("max_power_w", (int, float), allow_zero=True)
    if peak < idle:
        raise CatalogError(f"{where}.max_power_w: {peak} is below idle_power_w {idle}")
    raw_profiles = f.get("profiles", list)
    if not raw_profiles:
        raise CatalogError(f"{where}.profiles: a GPU model needs at least one profile")
    profiles: list[Profile] = []
    for n, raw in enumerate(raw_profiles):
        profiles.append(_profile_from_dict(raw, f"{where}.profiles[{n}]", name, gpu_class, mem, comp, n))
    by_name: dict[str, Profile] = {}
    for n, p in enumerate(profiles):
        if p.name in by_name:
            raise CatalogError(f"{where}.profiles[{n}].name: {p.name!r} appears twice")
        by_name[p.name] = p
    return GpuModel(
        name=name,
        gpu_class=gpu_class,
        memory_slices=mem,
        compute_slices=comp,
        memory_gb=float(f.get("memory_gb", (int, float), 0)),
        idle_power_w=float(idle),
        max_power_w=float(peak),
        profiles=tuple(profiles),
        source=f.get("source", str, ""),
        gi_create_s=float(_seconds(f, "gi_create_s")),
        gi_destroy_s=float(_seconds(f, "gi_destroy_s")),
        _by_name=by_name,
    )


def _seconds(f: _Fields, key: str) -> float:
    """An optional duration in seconds (0 when absent): finite, ≥ 0 and at most an hour."""
    value = f.get(key, (int, float), 0)
    if not 0 <= value <= 3600:
        raise CatalogError(f"{f.where}.{key}: {value!r} must be between 0 and 3600 seconds")
    return value


def _profile_from_dict(
    raw: Any, where: str, model: str, gpu_class: str, mem: int, comp: int, index: int
) -> Profile:
    f = _Fields(where, raw)
    name = f.get("name", str)
    c = f.positive("compute_slices")
    g = f.positive("memory_slices")
    if c > comp:
        raise CatalogError(f"{where}.compute_slices: {c} exceeds the GPU's {comp}")
    starts = f.get("starts", list)
    if not starts:
        raise CatalogError(f"{where}.starts: empty")
    for z in starts:
        if isinstance(z, bool) or not isinstance(z, int) or z < 0:
            raise CatalogError(f"{where}.starts: {show(z)} is not a slice index")
        if z % g:
            raise CatalogError(f"{where}.starts: {z} is not a multiple of memory_slices {g}")
        if z + g > mem:
            raise CatalogError(f"{where}.starts: {show(z)} + {g} slices runs past the GPU's {mem} slices")
    if sorted(set(starts)) != list(starts):
        raise CatalogError(f"{where}.starts: {starts} must be strictly increasing")
    smi = f.get("nvidia_smi_id", int, None)
    return Profile(
        name=name,
        gpu_model=model,
        gpu_class=gpu_class,
        compute_slices=c,
        memory_slices=g,
        memory_gb=float(f.get("memory_gb", (int, float), 0)),
        starts=tuple(starts),
        nvidia_smi_id=smi,
        index=index,
    )


def pm_model_from_dict(data: Mapping[str, Any], where: str) -> PmModel:
    """Build and validate a PM power model."""
    f = _Fields(where, dict(data))
    loads = f.get("load_percent", list)
    watts = f.get("power_w", list)
    for x in loads:
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise CatalogError(f"{where}.load_percent: {x!r} is not a number")
    if len(loads) != len(watts) or len(loads) < 2:
        raise CatalogError(f"{where}.power_w: needs one value per load level (at least two levels)")
    if loads[0] != 0 or loads[-1] != 100 or sorted(set(loads)) != list(loads):
        raise CatalogError(f"{where}.load_percent: {loads} must rise strictly from 0 to 100")
    for w in watts:
        if isinstance(w, bool) or not isinstance(w, (int, float)) or w < 0:
            raise CatalogError(f"{where}.power_w: {w!r} is not a non-negative number")
    return PmModel(
        name=f.get("name", str),
        cpu=float(f.positive("cpu", (int, float))),
        ram_gb=float(f.positive("ram_gb", (int, float))),
        load_percent=tuple(float(x) for x in loads),
        power_w=tuple(float(x) for x in watts),
        source=f.get("source", str, ""),
    )


def _load_dir(directory: Path, build: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for path in sorted(directory.glob("*.toml")):
        try:
            data = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise CatalogError(f"{path}: not valid TOML ({exc})") from None
        model = build(data, str(path))
        if model.name in out:
            raise CatalogError(f"{path}.name: {model.name!r} is defined twice")
        out[model.name] = model
    return out


def load_catalog(directory: Path | None = None) -> Catalog:
    """Load and validate every GPU and PM model under `directory` (default: the shipped catalog)."""
    root = directory or models_dir()
    gpus = _load_dir(root / "gpus", gpu_model_from_dict)
    pms = _load_dir(root / "pms", pm_model_from_dict)
    if not gpus:
        raise CatalogError(f"{root / 'gpus'}: no GPU model files (*.toml)")
    return Catalog(gpus=gpus, pms=pms)


@functools.cache
def default_catalog() -> Catalog:
    """The shipped catalog, loaded once per process."""
    return load_catalog()
