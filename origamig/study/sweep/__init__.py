"""The resumable sweep engine: many runs of the simulator, stored cell by cell, resumed by code.

A sweep is a list of `Cell`s — (row, column, policy, configuration, seed) — at a `Scale`. The rows
are what a table compares (a policy, or a policy with options); the columns what the sweep varies (a
load, a variant, or nothing). Every run is kept in the JSON results (`store`) with the code that
made it, the scale it ran at, means and 95% CIs per (row, column). docs/studies.md is the guide.

Modules: `scale` (how big), `cells` (what runs), `records` (a finished cell as stored, `RunRecord`),
`runs` (a sweep's runs by cell), `store` (the results file), `engine` (running and listing), `adopt`
(taking over runs of other code once they recompute identically), `tables` and `figures` (showing
results). This module gathers the names the benchmark scripts use (their shared command line is
benchmarks/sweep_cli.py).
"""

from origamig.errors import UserError
from origamig.study.aggregate import MeanCi
from origamig.study.runner import run_all
from origamig.study.seeds import parse_seeds
from origamig.study.spread import ERRBAR_NOTE, errbar, errbars
from origamig.study.sweep.adopt import adopt, adoption_sample
from origamig.study.sweep.cells import Cell, cell_key
from origamig.study.sweep.engine import list_cells, run
from origamig.study.sweep.figures import OURS_COLOR, POLICY_COLORS, POLICY_LABELS, figure, save_figure
from origamig.study.sweep.records import DERIVED_NAMES, RunRecord, derive, pms_per_100_gpus_served, record
from origamig.study.sweep.runs import Sweep, cells_of, covering
from origamig.study.sweep.scale import FULL, QUICK, SCALES, SMOKE, Scale
from origamig.study.sweep.store import (
    checkpoint_path,
    code_id,
    load_sweep,
    results_path,
    stored_runs,
    summary,
    sweep_runs,
    write_json,
    write_partial,
)
from origamig.study.sweep.tables import SHOWN, SHOWN_BY_KEY, Shown, fmt, paper_at_scale, print_table, ref

__all__ = [
    "DERIVED_NAMES",
    "ERRBAR_NOTE",
    "FULL",
    "OURS_COLOR",
    "POLICY_COLORS",
    "POLICY_LABELS",
    "QUICK",
    "SCALES",
    "SHOWN",
    "SHOWN_BY_KEY",
    "SMOKE",
    "Cell",
    "MeanCi",
    "RunRecord",
    "Scale",
    "Shown",
    "Sweep",
    "UserError",
    "adopt",
    "adoption_sample",
    "cell_key",
    "cells_of",
    "checkpoint_path",
    "code_id",
    "covering",
    "derive",
    "errbar",
    "errbars",
    "figure",
    "fmt",
    "list_cells",
    "load_sweep",
    "paper_at_scale",
    "parse_seeds",
    "pms_per_100_gpus_served",
    "print_table",
    "record",
    "ref",
    "results_path",
    "run",
    "run_all",
    "save_figure",
    "stored_runs",
    "summary",
    "sweep_runs",
    "write_json",
    "write_partial",
]  # fmt: skip
