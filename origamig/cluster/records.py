"""The frozen records every layer shares: PMs, VMs, GI slots, placements, the weights of Eq. (5).

Resources are integers: CPU in milli-cores (`cpu_m`), RAM in megabytes (`ram_mb`, 1 GB = 1000 MB);
`cores_to_m` and `gb_to_mb` convert at the edges (snapshot, workload). PMs are addressed by index in
data-center order, GPUs by index on their PM, VMs by string id. A record built from the catalog
carries its `GpuModel`s and `Profile`s; nothing here is mutable and nothing here computes a decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import ClassVar

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

    # Not a field (no effect on equality, hashing, `replace` or `asdict`): set once per record, as
    # every neighborhood reads it for thousands of PMs.
    _gpu_classes: ClassVar[frozenset[str]]

    def __post_init__(self) -> None:
        classes = frozenset(g.gpu_class for g in self.gpus) or frozenset({NO_GPU_CLASS})
        object.__setattr__(self, "_gpu_classes", classes)

    @property
    def gpu_classes(self) -> frozenset[str]:
        """The classes of the PM's GPUs ({NO_GPU_CLASS} without GPUs)."""
        return self._gpu_classes


@dataclass(frozen=True)
class VmSpec:
    """A VM request: CPU, RAM and its GIs (profiles of one model). No lifetime: policies never see it.

    `gis` are profiles of one GPU model. A pending VM that names no GPU model may run on any model
    that offers all its profiles (docs/formats.md#snapshot): `alternatives` holds its GIs as each
    other such class knows them (same names, in the same order; one entry per class). Placed, it runs
    on one class, and `placed_on` narrows it to that class (a running VM has no alternatives).
    `migratable=False` pins a running VM where it runs: never migrated, never parked.
    """

    id: str
    cpu_m: int
    ram_mb: int
    gis: tuple[Profile, ...] = ()
    accept_weight: float | None = None
    migration_penalty: float | None = None
    alternatives: tuple[tuple[Profile, ...], ...] = ()
    migratable: bool = True

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
        """The class of `gis` (for a VM with alternatives, the first of `gpu_classes`)."""
        return self.gis[0].gpu_class if self.gis else NO_GPU_CLASS

    @property
    def gi_choices(self) -> tuple[tuple[Profile, ...], ...]:
        """The VM's GIs on each class it may run on: `gis` first, then the alternatives."""
        return (self.gis, *self.alternatives)

    @property
    def gpu_classes(self) -> tuple[str, ...]:
        """Every class the VM may run on, in the order of `gi_choices`."""
        return tuple(choice[0].gpu_class if choice else NO_GPU_CLASS for choice in self.gi_choices)

    def on_class(self, gpu_class: str) -> VmSpec | None:
        """The VM as it runs on `gpu_class` (no alternatives left), None if it cannot run there."""
        if not self.alternatives:
            return self if self.gpu_class == gpu_class else None
        for choice in self.gi_choices:
            if choice and choice[0].gpu_class == gpu_class:
                return replace(self, gis=choice, alternatives=())
        return None

    def variants(self) -> tuple[VmSpec, ...]:
        """The VM narrowed to each class it may run on (itself when it has no alternatives)."""
        if not self.alternatives:
            return (self,)
        return tuple(replace(self, gis=choice, alternatives=()) for choice in self.gi_choices)

    def placed_on(self, pm: PmSpec, placement: Placement) -> VmSpec:
        """The VM as it runs at `placement` on `pm`: narrowed to the class of its first GI's GPU
        (unchanged when it has no alternatives, or when that GPU does not exist: the caller's check
        then reports it)."""
        if not self.alternatives or not placement.gis:
            return self
        k = placement.gis[0].gpu
        if not 0 <= k < len(pm.gpus):
            return self
        return self.on_class(pm.gpus[k].gpu_class) or self


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
    vm_weights: bool = True  # whether per-VM `accept_weight` and `migration_penalty` apply
    # δ_i in proportion to what moving VM i between PMs copies (its RAM and GI memory), per GB, in place
    # of `migration` (None: `migration` for every VM). A per-VM `migration_penalty` still wins.
    migration_per_gb: float | None = None

    def a(self, vm: VmSpec) -> float:
        return self.accept if vm.accept_weight is None or not self.vm_weights else vm.accept_weight

    def b(self, pm: PmSpec) -> float:
        return self.pm if pm.weight is None else pm.weight

    def delta(self, vm: VmSpec) -> float:
        """δ_i for a running VM (the caller uses 0 for pending VMs): its own `migration_penalty`, else
        `migration_per_gb` × the GB a move between PMs copies, else `migration`."""
        if not self.vm_weights:
            return self.migration
        if vm.migration_penalty is not None:
            return vm.migration_penalty
        if self.migration_per_gb is not None:
            return self.migration_per_gb * (vm.ram_gb + sum(p.memory_gb for p in vm.gis))
        return self.migration

    def w(self, profile_name: str) -> float:
        return self.free_start_by_profile.get(profile_name, self.free_start)
