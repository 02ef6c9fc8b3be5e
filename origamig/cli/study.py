"""`origamig study`: a resumable comparison of policies × loads × seeds, stored cell by cell."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from origamig.cli.arguments import (
    LOADS,
    OPTIONS,
    POLICY_HELP,
    SCHEDULER,
    SEEDS_HELP,
    parse_loads,
    parse_options,
    split_list,
)
from origamig.cli.results_view import draw, refuse_overwrite
from origamig.errors import UserError
from origamig.solver_registry import backend_names
from origamig.study.results import runs_document
from origamig.study.runner import config_dict
from origamig.study.seeds import parse_seeds
from origamig.study.spread import SPREAD_NOTE
from origamig.study.sweep import SCALES, Scale, Sweep, adopt, list_cells, print_table, run, write_json
from origamig.study.sweep.grid import policy_load_cells
from origamig.study.sweep.store import checkpoint_path, results_path
from origamig.study.sweep.tables import SHOWN_BY_KEY, fmt

SHOWN_KEYS = (
    "acceptance", "active_pms", "packing_density", "energy_kwh_per_gpu_hour", "migrations_per_hour",
    "calls_per_hour",
)  # fmt: skip


def study(
    name: Annotated[str, typer.Argument(help="The study's name: its results are <out>/<name>-<scale>.json.")],
    scale_name: Annotated[
        str,
        typer.Option(
            "--scale",
            help="quick (32 PMs, 24 h + 24 h, seeds 1..2), full (the paper's 128 PMs, 48 h + 72 h, seeds "
            "1..5) or smoke (8 PMs, 2 h + 2 h, seed 1); OrigaMIG calls get a reproducible node budget.",
        ),
    ] = "quick",
    policy: Annotated[
        list[str] | None, typer.Option("--policy", help=POLICY_HELP[:-1] + "; default ff,tc,origamig.")
    ] = None,
    load: Annotated[list[str] | None, LOADS] = None,
    seeds: Annotated[
        str | None, typer.Option("--seeds", help=SEEDS_HELP + " (default: the scale's).")
    ] = None,
    option: Annotated[list[str] | None, OPTIONS] = None,
    solver: Annotated[str | None, typer.Option("--solver", help="OrigaMIG's BILP backend.")] = None,
    workers: Annotated[
        int, typer.Option("--workers", help="Parallel processes (1: in this process, live progress).")
    ] = 1,
    scheduler: Annotated[str | None, SCHEDULER] = None,
    out: Annotated[Path, typer.Option("--out", help="Folder of the results file and checkpoints.")] = Path(
        "studies"
    ),
    cells: Annotated[
        bool, typer.Option("--cells", help="List the study's cells — done, failed or left — and exit.")
    ] = False,
    fresh: Annotated[
        bool, typer.Option("--fresh", help="Discard the stored results of this study and run every cell.")
    ] = False,
    adopt_runs: Annotated[
        bool,
        typer.Option(
            "--adopt",
            help="Stored runs were made by another version of the code: recompute the cheapest cell of each "
            "policy and, if identical, keep them as this version's (then run what is left).",
        ),
    ] = False,
    png: Annotated[
        Path | None, typer.Option("--png", help="Also draw the metrics vs load to this PNG file.")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace the --png file if it exists.")] = False,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="No progress display.")] = False,
) -> None:
    """Compare policies over loads and seeds at a named scale, resumably (docs/studies.md).

    Every finished cell is stored at once in <out>/<name>-<scale>.json; a
    rerun skips the cells this version of the code already ran and resumes
    interrupted ones from their checkpoints. Cost per seed on one core: at
    quick scale FF and TC a second or two, OrigaMIG 0.5-2 minutes; at full
    scale OrigaMIG about 15 minutes.

    Example: origamig study first --policy tc,origamig --load 0.5,0.85 --seeds 2"""
    chosen = scale_of(scale_name, seeds, solver)
    policies = split_list(policy or ["ff,tc,origamig"])
    options = parse_options(option or [], policies)
    loads = parse_loads(load or ["0.85"])
    if workers < 1:
        raise UserError(f"--workers: {workers} must be at least 1")
    grid = policy_load_cells(chosen, loads, policies, options)
    if cells:
        list_cells(name, chosen, grid, out)
        return
    if png is not None:
        refuse_overwrite(png, force)
    if fresh:
        results_path(name, chosen, out).unlink(missing_ok=True)
        for cell in grid:
            checkpoint_path(name, chosen, cell, out).unlink(missing_ok=True)
    elif adopt_runs:
        adopt(name, chosen, out, workers, scheduler, not no_progress, grid)
    sweep = run(name, chosen, grid, workers, scheduler, not no_progress, out)
    path = write_json(sweep, {}, out)
    show_table(sweep)
    if png is not None:
        draw(runs_document(runs_of(sweep)), png, "default")
        typer.echo(f"figure written to {png}", err=True)
    typer.echo(f"results in {path}", err=True)


def scale_of(name: str, seeds: str | None, solver: str | None) -> Scale:
    """The named scale with the seeds and solver asked for."""
    if name not in SCALES:
        raise UserError(f"--scale: {name!r} is not one of {', '.join(SCALES)}")
    chosen = SCALES[name]
    if seeds is not None:
        chosen = replace(chosen, seeds=parse_seeds(seeds))
    if solver is not None:
        if solver not in backend_names():
            raise UserError(f"--solver: {solver!r} is not one of {', '.join(backend_names())}")
        chosen = replace(chosen, solver=solver)
    return chosen


def runs_of(sweep: Sweep) -> list[dict]:
    """The sweep's runs as `origamig simulate` writes them (for `report`'s figure)."""
    config = {c.key: config_dict(c.config) for c in sweep.cells}
    return [
        {"policy": r.row, "seed": r.seed, "config": config[r.cell], "metrics": r.metrics}
        for r in sweep.runs
        if r.cell in config
    ]


def show_table(sweep: Sweep) -> None:
    """One row per (policy, load) of the study, its metrics over the seeds stored."""
    shown = [SHOWN_BY_KEY[k] for k in SHOWN_KEYS]
    pairs = list(dict.fromkeys((c.row, c.col) for c in sweep.cells))
    rows = [
        [row, col, str(sweep.metric(row, col, "acceptance").n),
         *(fmt(sweep.metric(row, col, s.key), s.factor, s.digits) for s in shown)]
        for row, col in pairs
    ]  # fmt: skip
    print_table(
        sweep.scale.describe(), ["policy", "load", "seeds", *(s.label for s in shown)], rows, SPREAD_NOTE
    )


def register(app: typer.Typer) -> None:
    app.command("study")(study)
