"""The mutable record of one PM inside a `DataCenter`: its GPUs' slices, free CPU/RAM, the VMs on it and
the moves under way that hold resources there (`DataCenter.hold`). Only `DataCenter` changes them."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from origamig.cluster.catalog import GpuModel
from origamig.cluster.mig import Geometry
from origamig.cluster.records import PmSpec


@dataclass
class GpuRecord:
    """One GPU: its model, used slices (bit mask), used compute slices, and who owns each GI start."""

    model: GpuModel
    geo: Geometry
    occ: int = 0
    compute: int = 0
    owners: dict[int, tuple[str, int]] = field(default_factory=dict)  # start -> (vm id, gi index)


@dataclass
class PmRecord:
    """One PM's state. `vms` and `held` are insertion-ordered sets of VM ids and hold keys; a PM is
    active (switched on) while either is non-empty."""

    spec: PmSpec
    gpus: list[GpuRecord]
    free_cpu_m: int
    free_ram_mb: int
    vms: dict[str, None] = field(default_factory=dict)
    free_mem: int = 0  # free memory slices over all GPUs
    memo: dict[Hashable, Any] = field(default_factory=dict)  # answers about this record's state
    held: dict[str, None] = field(default_factory=dict)  # keys of the holds on this PM

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "memo": {}}  # answers are remade where the state goes

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("held", {})  # a record pickled before holds existed

    @property
    def busy(self) -> bool:
        """Hosts a VM or a move's hold: the PM must be on."""
        return bool(self.vms) or bool(self.held)

    def clone(self) -> PmRecord:
        """A record of the same state that shares nothing mutable with this one (and no answers)."""
        return PmRecord(
            spec=self.spec,
            gpus=[GpuRecord(g.model, g.geo, g.occ, g.compute, dict(g.owners)) for g in self.gpus],
            free_cpu_m=self.free_cpu_m,
            free_ram_mb=self.free_ram_mb,
            vms=dict(self.vms),
            free_mem=self.free_mem,
            held=dict(self.held),
        )
