"""A finished cell as the results file stores it: its identity, metrics and the derived metrics."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
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


@dataclass(frozen=True)
class RunRecord:
    """A finished cell of a sweep as its results file stores it: the cell's identity and setting, the
    run's metrics (derived ones included, `derive`), policy counters and statistics, and the code that
    computed it (`code`; `adopted_from` when it was adopted from other code, `adopt`). Runs stored by
    earlier code may lack `pms`, `cpu_s` and `code` (None here); keys the record does not know are kept
    in `extra`, so that nothing stored is lost.

    In JSON (a results file's `runs`): `{"cell", "row", "col", "policy", "seed", "pms", "load",
    "variant", "policy_options", "metrics", "counters", "requests", "calls", "wall_s", "cpu_s", "code",
    "adopted_from", ...extra}`, the optional keys only when set."""

    cell: str
    row: str
    col: str
    policy: str
    seed: int
    load: float
    variant: str
    policy_options: Mapping[str, Any]
    metrics: Mapping[str, float | None]
    counters: Mapping[str, float]
    requests: int
    calls: int
    wall_s: float
    pms: int | None = None  # a sweep over sizes has cells of several PM counts
    cpu_s: float | None = None  # every core, the solver's helper process included
    code: str | None = None
    adopted_from: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    # The order of the keys in the file the record was read from, so that it is written back the same
    # (earlier code wrote some keys in another order); no part of what the record says.
    key_order: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"cell": self.cell, "row": self.row, "col": self.col, "policy": self.policy}
        doc["seed"] = self.seed
        if self.pms is not None:
            doc["pms"] = self.pms
        doc |= {
            "load": self.load,
            "variant": self.variant,
            "policy_options": dict(self.policy_options),
            "metrics": dict(self.metrics),
            "counters": dict(self.counters),
            "requests": self.requests,
            "calls": self.calls,
            "wall_s": self.wall_s,
        }
        optional = {"cpu_s": self.cpu_s, "code": self.code, "adopted_from": self.adopted_from}
        doc |= {k: v for k, v in optional.items() if v is not None} | dict(self.extra)
        if not self.key_order:
            return doc
        return {k: doc[k] for k in self.key_order if k in doc} | doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> RunRecord:
        """The record of a stored run (values as the file holds them); keys it does not know go to
        `extra`."""
        own = {f.name for f in fields(cls)} - {"extra", "key_order"}
        values: dict[str, Any] = {
            k: dict(v) if isinstance(v, dict) else v for k, v in doc.items() if k in own
        }
        return cls(
            **values,
            extra={k: v for k, v in doc.items() if k not in own},
            key_order=tuple(doc),
        )


def record(cell: Cell, result: RunResult, code: str) -> RunRecord:
    """The results-file entry of `cell`, finished with `result` by the code whose fingerprint is `code`."""
    entry = RunRecord(
        cell=cell.key,
        row=cell.row,
        col=cell.col,
        policy=cell.policy,
        seed=cell.seed,
        pms=cell.config.pms,
        load=cell.config.load,
        variant=cell.config.variant,
        policy_options=dict(cell.config.policy_options),
        metrics=dict(result.metrics),
        counters=dict(result.counters),
        requests=result.requests,
        calls=result.calls,
        wall_s=result.wall_s,
        cpu_s=result.cpu_s,
        code=code,
    )
    return derive(entry, cell.config)


def derive(entry: RunRecord, config: SimConfig) -> RunRecord:
    """`entry` with the derived metrics: shares comparable across data-center sizes (Table 8 gives
    active GPUs in %) and migrations per admitted VM (Table 10). The admitted VMs of the measured
    window are estimated as requests × measured/total time × acceptance (arrivals are Poisson, uniform
    in time; acceptance is a share of memory slices, close to the share of VMs)."""
    metrics = dict(entry.metrics)
    pms = build_pms(config)
    gpus = sum(len(pm.gpus) for pm in pms)
    metrics["active_pms_pct"] = 100.0 * metrics["active_pms"] / len(pms) if pms else None  # type: ignore[operator]
    metrics["active_gpus_pct"] = 100.0 * metrics["active_gpus"] / gpus if gpus else None  # type: ignore[operator]
    admitted = entry.requests * config.measure_s / config.horizon_s * (metrics["acceptance"] or 0.0)
    hours = config.measure_s / HOUR
    metrics["migrations_per_admitted_vm"] = (
        metrics["migrations_per_hour"] * hours / admitted if admitted else None  # type: ignore[operator]
    )
    metrics["pms_per_100_gpus_served"] = pms_per_100_gpus_served(metrics, hours)
    return replace(entry, metrics=metrics)


def pms_per_100_gpus_served(metrics: Mapping[str, float | None], hours: float) -> float | None:
    """Active PMs per 100 GPUs' worth of admitted work (a GI counts as its share of compute slices):
    active PMs normalized by the work a policy carries, comparable between policies that admit
    different amounts (2-GPU PMs packed full would read 50). The admitted GPU-hours are the energy
    over the energy per admitted GPU-hour."""
    kwh_per_gpu_h, mwh = metrics.get("energy_kwh_per_gpu_hour"), metrics.get("energy_mwh")
    if not kwh_per_gpu_h or not mwh or not hours or metrics.get("active_pms") is None:
        return None
    served_gpus = 1000.0 * mwh / kwh_per_gpu_h / hours
    return 100.0 * metrics["active_pms"] / served_gpus  # type: ignore[operator]


def differences(stored: RunRecord, again: RunRecord) -> list[str]:
    """Where a recomputed record `again` differs from the `stored` one (`COMPARED` fields), as text."""
    out = []
    for name in COMPARED:
        a, b = json_value(getattr(stored, name)), json_value(getattr(again, name))
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
