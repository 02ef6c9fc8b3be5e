"""The cells of a sweep — (row, column, policy, configuration, seed) — and a sweep's runs by cell."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from origamig.sim.scenario import SimConfig
from origamig.study.aggregate import MeanCi, mean_ci
from origamig.study.runner import RunSpec
from origamig.study.sweep.scale import Scale


@dataclass(frozen=True)
class Cell:
    """One run of a sweep: the row it belongs to, its column (load/variant/""), and what to run."""

    row: str
    col: str
    policy: str
    config: SimConfig
    seed: int

    def spec(self) -> RunSpec:
        return RunSpec(self.config, self.policy, self.seed)

    @property
    def key(self) -> str:
        return cell_key(self.row, self.col, self.policy, self.seed, self.config)


def cell_key(row: str, col: str, policy: str, seed: int, config: SimConfig) -> str:
    """What identifies a run in a results file: row, column, policy, seed and a fingerprint of the
    whole configuration (scale, load, variant, options), so a changed setting never reuses it. The
    folder a trace is read from is not a setting: a copy of the trace elsewhere keeps the key."""
    settings = dataclasses.asdict(config) | {"trace_dir": None}
    fields = json.dumps(json_value(without_unset_hardware(settings)), sort_keys=True, default=str)
    digest = hashlib.sha1(fields.encode()).hexdigest()[:12]
    return f"{row}|{col}|{policy}|{seed}|{digest}"


def without_unset_hardware(fields: dict[str, Any]) -> dict[str, Any]:
    """`fields` without an unset `fleet` / `snapshot`: a run on the paper's data center keeps the
    fingerprint it had before fleets existed, so stored sweeps resume."""
    return {k: v for k, v in fields.items() if not (k in ("fleet", "snapshot") and v is None)}


def cells_of(runs: Sequence[dict[str, Any]], scale: Scale) -> list[Cell]:
    """The cells of stored runs, rebuilt from their records (at the scale's PM count unless a record
    names its own: a sweep over data-center sizes)."""
    return [
        Cell(
            r["row"],
            r["col"],
            r["policy"],
            scale.config(
                pms=r.get("pms", scale.pms),
                load=r["load"],
                variant=r["variant"],
                policy_options=tuple(sorted(r["policy_options"].items())),
            ),
            r["seed"],
        )
        for r in runs
    ]


def covering(scale: Scale, runs: Sequence[dict[str, Any]]) -> Scale:
    """`scale` naming every seed of `runs` too: a sweep holds every stored run, so its scale names
    every seed they cover (titles, JSON)."""
    return replace(scale, seeds=tuple(sorted(set(scale.seeds) | {int(r["seed"]) for r in runs})))


@dataclass
class Sweep:
    """The runs of a sweep, by (row, column, seed), with their wall times; `failed` holds the cells
    whose run raised (their record names the cell and the error)."""

    name: str
    scale: Scale
    cells: list[Cell]
    runs: list[dict[str, Any]] = field(default_factory=list)
    wall_s: float = 0.0
    failed: list[dict[str, Any]] = field(default_factory=list)

    def metric(self, row: str, col: str, name: str) -> MeanCi:
        """Mean, 95% CI half-width, n and values of `name` over the seeds of (row, col)."""
        return mean_ci(r["metrics"].get(name) for r in self.runs if r["row"] == row and r["col"] == col)

    def by_seed(self, row: str, col: str, name: str) -> dict[int, float]:
        return {
            r["seed"]: r["metrics"][name]
            for r in self.runs
            if r["row"] == row and r["col"] == col and r["metrics"].get(name) is not None
        }

    def paired(self, row: str, base: str, col: str, name: str) -> list[tuple[int, float, float]]:
        """(seed, value of row, value of base) over the seeds both ran."""
        a, b = self.by_seed(row, col, name), self.by_seed(base, col, name)
        return [(s, a[s], b[s]) for s in sorted(set(a) & set(b))]

    def reduction_pct(self, row: str, base: str, col: str, name: str = "active_pms") -> MeanCi:
        """100·(base − row)/base paired by seed: how much lower `row` keeps `name` (mean ± CI)."""
        return mean_ci(100.0 * (b - a) / b for _, a, b in self.paired(row, base, col, name) if b)

    def gain(self, row: str, base: str, col: str, name: str, scale: float = 1.0) -> MeanCi:
        """scale·(row − base) paired by seed (e.g. acceptance gain in percentage points)."""
        return mean_ci(scale * (a - b) for _, a, b in self.paired(row, base, col, name))


def json_value(x: Any) -> Any:
    """`x` as a JSON file gives it back: NaN/inf become None, tuples lists, keys strings, a `MeanCi`
    its `to_json()` (the findings a sweep script writes hold them)."""
    if isinstance(x, MeanCi):
        return json_value(x.to_json())
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {str(k): json_value(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_value(v) for v in x]
    return x
