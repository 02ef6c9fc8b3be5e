"""Counts of a state for reports: servers, VMs, CPU and RAM, and per GPU class the GPUs, memory slices,
free capacity (CF) and Γ_h (`check` prints them, `solve` gives them before and after its plan).

The counts are records; `StateSummary.to_json` is the `summary` object of `check --json` and of
`solve --json` (docs/formats.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import NO_GPU_CLASS, PmSpec

_CLASS_COUNTS = ("gpus", "active_gpus", "slices", "used_slices", "cf", "cf_active")


@dataclass(frozen=True)
class ClassCounts:
    """One GPU class: its models, GPUs (all, in use), memory slices (all, used), CF over every GPU and
    over the GPUs in use, occupancy, packing density and Γ_h."""

    models: tuple[str, ...]
    gpus: int
    active_gpus: int
    slices: int
    used_slices: int
    cf: int
    cf_active: int
    occupancy: float
    packing_density: float
    gamma: int

    def to_json(self) -> dict[str, Any]:
        return {
            "models": list(self.models),
            **{k: getattr(self, k) for k in _CLASS_COUNTS},
            "occupancy": self.occupancy,
            "packing_density": self.packing_density,
            "gamma": self.gamma,
        }


@dataclass(frozen=True)
class NoGpuCounts:
    """The servers without GPUs, and how many of them could be switched off (Γ)."""

    pms: int
    gamma: int

    def to_json(self) -> dict[str, Any]:
        return {"pms": self.pms, "gamma": self.gamma}


@dataclass(frozen=True)
class Usage:
    """A capacity and how much of it is used (cores, or GB)."""

    total: float
    used: float

    def to_json(self) -> dict[str, Any]:
        return {"total": self.total, "used": self.used}


@dataclass(frozen=True)
class StateSummary:
    """Counts of a state (`summarize`)."""

    pms: int
    active_pms: int
    powered_off_pms: int
    running_vms: int
    pending_vms: int
    cpu: Usage
    ram_gb: Usage
    active_gpus: int
    cf: int  # over every GPU (free capacity)
    cf_active: int  # over the GPUs in use (Eq. 5's term)
    classes: Mapping[str, ClassCounts | NoGpuCounts]

    def gpu_classes(self) -> dict[str, ClassCounts]:
        """The classes of GPUs (the servers without GPUs left out)."""
        return {h: c for h, c in self.classes.items() if isinstance(c, ClassCounts)}

    def to_json(self) -> dict[str, Any]:
        return {
            "pms": self.pms,
            "active_pms": self.active_pms,
            "powered_off_pms": self.powered_off_pms,
            "running_vms": self.running_vms,
            "pending_vms": self.pending_vms,
            "cpu": self.cpu.to_json(),
            "ram_gb": self.ram_gb.to_json(),
            "active_gpus": self.active_gpus,
            "cf": self.cf,
            "cf_active": self.cf_active,
            "classes": {h: c.to_json() for h, c in self.classes.items()},
        }


def summarize(
    dc: DataCenter,
    pms: Sequence[PmSpec] | None = None,
    since: tuple[DataCenter, StateSummary] | None = None,
) -> StateSummary:
    """Counts of a state: PMs, VMs, CPU/RAM, and per GPU class the GPUs, slices, CF and Γ_h; `pms`:
    the servers as they are to be reported (which are switched off), default `dc`'s. `since`: a state
    `dc` was copied from and its summary — only the PMs whose records differ are read again."""
    specs = dc.pms if pms is None else pms
    counts: dict[str, dict[str, Any]] = {}
    if since is None:
        for j in range(len(dc.pms)):
            _count_pm(counts, dc, j, 1)
    else:
        base, summary = since
        for h, kept in summary.gpu_classes().items():
            counts[h] = {"models": list(kept.models), **{k: getattr(kept, k) for k in _CLASS_COUNTS}}
        for j in dc.differing_pms(base):
            _count_pm(counts, base, j, -1)
            _count_pm(counts, dc, j, 1)
    classes: dict[str, ClassCounts | NoGpuCounts] = {}
    for h, c in counts.items():
        active_slices = c["active_gpus"] * dc.class_slices[h]
        classes[h] = ClassCounts(
            models=tuple(c["models"]),
            **{k: c[k] for k in _CLASS_COUNTS},
            occupancy=c["used_slices"] / c["slices"] if c["slices"] else 0.0,
            packing_density=c["used_slices"] / active_slices if active_slices else 0.0,
            gamma=dc.gamma(h),
        )
    if dc.no_gpu_pms:
        classes[NO_GPU_CLASS] = NoGpuCounts(len(dc.no_gpu_pms), dc.gamma(NO_GPU_CLASS))
    gpu_classes = [c for c in classes.values() if isinstance(c, ClassCounts)]
    cpu_total = sum(pm.cpu_m for pm in dc.pms)
    ram_total = sum(pm.ram_mb for pm in dc.pms)
    cpu_used = cpu_total - sum(dc.free_cpu_m(j) for j in range(len(dc.pms)))
    ram_used = ram_total - sum(dc.free_ram_mb(j) for j in range(len(dc.pms)))
    return StateSummary(
        pms=len(dc.pms),
        active_pms=dc.active_pms,
        powered_off_pms=sum(1 for j, pm in enumerate(specs) if pm.powered_off and not dc.is_active(j)),
        running_vms=len(dc.vms),
        pending_vms=len(dc.pending),
        cpu=Usage(cpu_total / 1000, cpu_used / 1000),
        ram_gb=Usage(ram_total / 1000, ram_used / 1000),
        active_gpus=sum(c.active_gpus for c in gpu_classes),
        cf=sum(c.cf for c in gpu_classes),
        cf_active=sum(c.cf_active for c in gpu_classes),
        classes=classes,
    )


def _count_pm(classes: dict[str, dict[str, Any]], dc: DataCenter, j: int, sign: int) -> None:
    """Add (`sign` 1) or take away (-1) PM j's GPUs in `dc` to the per-class counts."""
    for k, model in enumerate(dc.pms[j].gpus):
        c = classes.setdefault(model.gpu_class, {"models": [], **dict.fromkeys(_CLASS_COUNTS, 0)})
        if model.name not in c["models"]:
            c["models"].append(model.name)
        active = dc.gpu_active(j, k)
        cf = dc.cf(j, k)
        c["gpus"] += sign
        c["active_gpus"] += sign * int(active)
        c["slices"] += sign * model.memory_slices
        c["used_slices"] += sign * (model.memory_slices - dc.free_slices(j, k))
        c["cf"] += sign * cf
        c["cf_active"] += sign * cf if active else 0
