"""A finished cell as the results file stores it: its identity, metrics and the derived metrics."""

from __future__ import annotations

from typing import Any

from origamig.sim.engine import RunResult
from origamig.sim.metrics import METRIC_NAMES
from origamig.sim.scenario import SimConfig, build_pms
from origamig.sim.workload import HOUR
from origamig.study.sweep.cells import Cell, json_value

DERIVED_NAMES = (
    *METRIC_NAMES,
    "active_pms_pct",
    "active_gpus_pct",
    "migrations_per_admitted_vm",
    "pms_per_100_gpus_served",
)
# What a recomputed cell must reproduce exactly for the stored one to count as this code's result:
# everything but the counters that time the machine (`measured_on_the_machine`): no rerun repeats them.
COMPARED = ("metrics", "counters", "requests", "calls")


# Policy counters that time the machine (TC's decision time, OrigaMIG's measured call times).
WALL_CLOCK_COUNTERS = frozenset({"wall_s", "median_call_s"})


def measured_on_the_machine(counter: str) -> bool:
    """A policy counter that is a wall-clock measurement, not a computed result."""
    return counter in WALL_CLOCK_COUNTERS or counter.startswith("time_")


def record(cell: Cell, result: RunResult, code: str) -> dict[str, Any]:
    """The results-file entry of `cell`, finished with `result` by the code whose fingerprint is `code`."""
    entry = {
        "cell": cell.key,
        "row": cell.row,
        "col": cell.col,
        "policy": cell.policy,
        "seed": cell.seed,
        "pms": cell.config.pms,  # a sweep over sizes has cells of several PM counts
        "load": cell.config.load,
        "variant": cell.config.variant,
        "policy_options": dict(cell.config.policy_options),
        "metrics": dict(result.metrics),
        "counters": dict(result.counters),
        "requests": result.requests,
        "calls": result.calls,
        "wall_s": result.wall_s,
        "cpu_s": result.cpu_s,  # every core, the solver's helper process included
        "code": code,
    }
    derive(entry, cell.config)
    return entry


def derive(entry: dict[str, Any], config: SimConfig) -> None:
    """Add the derived metrics to a run record: shares comparable across data-center sizes (Table 8
    gives active GPUs in %) and migrations per admitted VM (Table 10). The admitted VMs of the measured
    window are estimated as requests × measured/total time × acceptance (arrivals are Poisson, uniform
    in time; acceptance is a share of memory slices, close to the share of VMs)."""
    metrics = entry["metrics"]
    pms = build_pms(config)
    gpus = sum(len(pm.gpus) for pm in pms)
    metrics["active_pms_pct"] = 100.0 * metrics["active_pms"] / len(pms) if pms else None
    metrics["active_gpus_pct"] = 100.0 * metrics["active_gpus"] / gpus if gpus else None
    admitted = entry["requests"] * config.measure_s / config.horizon_s * (metrics["acceptance"] or 0.0)
    hours = config.measure_s / HOUR
    metrics["migrations_per_admitted_vm"] = (
        metrics["migrations_per_hour"] * hours / admitted if admitted else None
    )
    metrics["pms_per_100_gpus_served"] = pms_per_100_gpus_served(metrics, hours)


def pms_per_100_gpus_served(metrics: dict[str, Any], hours: float) -> float | None:
    """Active PMs per 100 GPUs' worth of admitted work (a GI counts as its share of compute slices):
    active PMs normalized by the work a policy carries, comparable between policies that admit
    different amounts (2-GPU PMs packed full would read 50). The admitted GPU-hours are the energy
    over the energy per admitted GPU-hour."""
    kwh_per_gpu_h, mwh = metrics.get("energy_kwh_per_gpu_hour"), metrics.get("energy_mwh")
    if not kwh_per_gpu_h or not mwh or not hours or metrics.get("active_pms") is None:
        return None
    served_gpus = 1000.0 * mwh / kwh_per_gpu_h / hours
    return 100.0 * metrics["active_pms"] / served_gpus


def differences(stored: dict[str, Any], again: dict[str, Any]) -> list[str]:
    """Where a recomputed record `again` differs from the `stored` one (`COMPARED` fields), as text."""
    out = []
    for name in COMPARED:
        a, b = json_value(stored.get(name)), json_value(again.get(name))
        if isinstance(a, dict) and isinstance(b, dict):
            keys = sorted(
                k for k in set(a) | set(b) if not (name == "counters" and measured_on_the_machine(k))
            )
            out += [
                f"{name}.{k}: {a.get(k)!r} stored, {b.get(k)!r} now" for k in keys if a.get(k) != b.get(k)
            ]
        elif a != b:
            out.append(f"{name}: {a!r} stored, {b!r} now")
    return out
