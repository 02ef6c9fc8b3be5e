"""A sweep's runs by cell: the records of its finished cells and the statistics over their seeds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from origamig.study.aggregate import MeanCi, mean_ci
from origamig.study.sweep.cells import Cell
from origamig.study.sweep.records import RunRecord
from origamig.study.sweep.scale import Scale


def cells_of(runs: Sequence[RunRecord], scale: Scale) -> list[Cell]:
    """The cells of stored runs, rebuilt from their records (at the scale's PM count unless a record
    names its own: a sweep over data-center sizes)."""
    return [
        Cell(
            r.row,
            r.col,
            r.policy,
            scale.config(
                pms=scale.pms if r.pms is None else r.pms,
                load=r.load,
                variant=r.variant,
                policy_options=tuple(sorted(r.policy_options.items())),
            ),
            r.seed,
        )
        for r in runs
    ]


def covering(scale: Scale, runs: Sequence[RunRecord]) -> Scale:
    """`scale` naming every seed of `runs` too: a sweep holds every stored run, so its scale names
    every seed they cover (titles, JSON)."""
    return replace(scale, seeds=tuple(sorted(set(scale.seeds) | {int(r.seed) for r in runs})))


@dataclass
class Sweep:
    """The runs of a sweep, by (row, column, seed), with their wall times; `failed` holds the cells
    whose run raised (their record names the cell and the error)."""

    name: str
    scale: Scale
    cells: list[Cell]
    runs: list[RunRecord] = field(default_factory=list)
    wall_s: float = 0.0
    failed: list[dict[str, Any]] = field(default_factory=list)

    def metric(self, row: str, col: str, name: str) -> MeanCi:
        """Mean, 95% CI half-width, n and values of `name` over the seeds of (row, col)."""
        return mean_ci(r.metrics.get(name) for r in self.runs if r.row == row and r.col == col)

    def by_seed(self, row: str, col: str, name: str) -> dict[int, float]:
        return {
            r.seed: value
            for r in self.runs
            if r.row == row and r.col == col and (value := r.metrics.get(name)) is not None
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
