"""The frozen records every layer shares: PMs, VMs, GI slots, placements, the weights of Eq. (5).

Resources are integers: CPU in milli-cores (`cpu_m`), RAM in megabytes (`ram_mb`, 1 GB = 1000 MB);
`cores_to_m` and `gb_to_mb` convert at the edges (snapshot, workload). PMs are addressed by index in
data-center order, GPUs by index on their PM, VMs by string id. A record built from the catalog
carries its `GpuModel`s and `Profile`s; nothing here is mutable and nothing here computes a decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from origamig.cluster.catalog import DEFAULT_PM_MODEL, GpuModel, Profile

NO_GPU_CLASS = "none"  # the class of the PMs without GPUs (paper Eq. 18)

MILLI = 1000  # milli-cores per core, megabytes per gigabyte


def cores_to_m(cores: float) -> int:
    """Cores → integer milli-cores."""
    return round(cores * MILLI)


def gb_to_mb(gb: float) -> int:
    """Gigabytes → integer megabytes."""
    return round(gb * MILLI)


@dataclass(frozen=True)
class PmSpec:
    """A physical machine: capacities, GPUs (each a GPU model), power model, optional weight b_j."""

    id: str
    cpu_m: int
    ram_mb: int
    gpus: tuple[GpuModel, ...] = ()
    power_model: str = DEFAULT_PM_MODEL
    weight: float | None = None
    powered_off: bool = False

    @property
    def cpu(self) -> float:
        return self.cpu_m / MILLI

    @property
    def ram_gb(self) -> float:
        return self.ram_mb / MILLI

    @property
    def gpu_classes(self) -> frozenset[str]:
        return frozenset(g.gpu_class for g in self.gpus) or frozenset({NO_GPU_CLASS})


@dataclass(frozen=True)
class VmSpec:
    """A VM request: CPU, RAM and its GIs (profiles of one model). No lifetime: policies never see it."""

    id: str
    cpu_m: int
    ram_mb: int
    gis: tuple[Profile, ...] = ()
    accept_weight: float | None = None
    migration_penalty: float | None = None

    @property
    def cpu(self) -> float:
        return self.cpu_m / MILLI

    @property
    def ram_gb(self) -> float:
        return self.ram_mb / MILLI

    @property
    def memory_slices(self) -> int:
        return sum(p.memory_slices for p in self.gis)

    @property
    def gpu_class(self) -> str:
        return self.gis[0].gpu_class if self.gis else NO_GPU_CLASS


@dataclass(frozen=True)
class GiSlot:
    """Where one GI runs: GPU index on its PM and start slice."""

    gpu: int
    start: int


@dataclass(frozen=True)
class Placement:
    """Where a running VM is: PM index and one slot per GI (in the order of `VmSpec.gis`)."""

    pm: int
    gis: tuple[GiSlot, ...] = ()


@dataclass(frozen=True)
class Weights:
    """Weights of Eq. (5). Defaults are the paper's (§6.1); per-VM/PM overrides live on the specs."""

    accept: float = 100.0  # a_i
    pm: float = 50.0  # b_j
    gpu: float = 20.0  # e_jk
    free_start: float = 1.0  # w_p (default for every profile)
    migration: float = 10.0  # δ_i of a running VM (0 for a pending one)
    free_start_by_profile: Mapping[str, float] = field(default_factory=dict)

    def a(self, vm: VmSpec) -> float:
        return self.accept if vm.accept_weight is None else vm.accept_weight

    def b(self, pm: PmSpec) -> float:
        return self.pm if pm.weight is None else pm.weight

    def delta(self, vm: VmSpec) -> float:
        """δ_i for a running VM (the caller uses 0 for pending VMs)."""
        return self.migration if vm.migration_penalty is None else vm.migration_penalty

    def w(self, profile_name: str) -> float:
        return self.free_start_by_profile.get(profile_name, self.free_start)
