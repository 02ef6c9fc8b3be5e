"""Counts of a state for reports: servers, VMs, CPU and RAM, and per GPU class the GPUs, memory slices,
free capacity (CF) and Γ_h (`check` prints them, `solve` gives them before and after its plan)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import NO_GPU_CLASS, PmSpec

_CLASS_COUNTS = ("gpus", "active_gpus", "slices", "used_slices", "cf", "cf_active")


def summarize(
    dc: DataCenter,
    pms: Sequence[PmSpec] | None = None,
    since: tuple[DataCenter, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Counts of a state: PMs, VMs, CPU/RAM, and per GPU class the GPUs, slices, CF and Γ_h; `pms`:
    the servers as they are to be reported (which are switched off), default `dc`'s. `since`: a state
    `dc` was copied from and its summary — only the PMs whose records differ are read again."""
    specs = dc.pms if pms is None else pms
    classes: dict[str, dict[str, Any]] = {}
    if since is None:
        for j in range(len(dc.pms)):
            _count_pm(classes, dc, j, 1)
    else:
        base, summary = since
        for h, c in summary["classes"].items():
            if h != NO_GPU_CLASS:
                classes[h] = {"models": list(c["models"]), **{k: c[k] for k in _CLASS_COUNTS}}
        for j in dc.differing_pms(base):
            _count_pm(classes, base, j, -1)
            _count_pm(classes, dc, j, 1)
    for h, c in classes.items():
        c["occupancy"] = c["used_slices"] / c["slices"] if c["slices"] else 0.0
        active_slices = c["active_gpus"] * dc.class_slices[h]
        c["packing_density"] = c["used_slices"] / active_slices if active_slices else 0.0
        c["gamma"] = dc.gamma(h)
    if dc.no_gpu_pms:
        classes[NO_GPU_CLASS] = {"pms": len(dc.no_gpu_pms), "gamma": dc.gamma(NO_GPU_CLASS)}
    cpu_total = sum(pm.cpu_m for pm in dc.pms)
    ram_total = sum(pm.ram_mb for pm in dc.pms)
    cpu_used = cpu_total - sum(dc.free_cpu_m(j) for j in range(len(dc.pms)))
    ram_used = ram_total - sum(dc.free_ram_mb(j) for j in range(len(dc.pms)))
    return {
        "pms": len(dc.pms),
        "active_pms": dc.active_pms,
        "powered_off_pms": sum(1 for j, pm in enumerate(specs) if pm.powered_off and not dc.is_active(j)),
        "running_vms": len(dc.vms),
        "pending_vms": len(dc.pending),
        "cpu": {"total": cpu_total / 1000, "used": cpu_used / 1000},
        "ram_gb": {"total": ram_total / 1000, "used": ram_used / 1000},
        "active_gpus": sum(c.get("active_gpus", 0) for c in classes.values()),
        "cf": sum(c.get("cf", 0) for c in classes.values()),  # over every GPU (free capacity)
        "cf_active": sum(c.get("cf_active", 0) for c in classes.values()),  # over active GPUs (Eq. 5 term)
        "classes": classes,
    }


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
