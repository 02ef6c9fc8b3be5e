"""The command line every sweep script of benchmarks/ shares: scale, seeds, workers, resume, list,
adopt, replot (the package's `origamig study` command has its own, in `origamig/cli/study.py`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from origamig.errors import UserError
from origamig.solver_registry import backend_names
from origamig.study.seeds import parse_seeds
from origamig.study.sweep import Cell, Sweep
from origamig.study.sweep.adopt import adopt
from origamig.study.sweep.engine import list_cells, run
from origamig.study.sweep.scale import FULL, QUICK, Scale
from origamig.study.sweep.store import checkpoint_path, load_sweep, results_path

SEEDS_HELP = "seeds: N (seeds 1..N), A..B or a list such as 1,2,3"


def parser(
    description: str, quick: Scale = QUICK, full: Scale = FULL, results: Path = Path("results")
) -> argparse.ArgumentParser:
    """The options every sweep script shares; `quick`/`full` are the script's own scales (for --help)."""
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="CI-sized run (default): " + quick.describe())
    size.add_argument(
        "--full", action="store_true", help="the paper's scale (for a cluster): " + full.describe()
    )
    p.add_argument("--workers", type=int, default=2, help="parallel processes (default 2)")
    p.add_argument("--scheduler", default=None, help="run on a Dask cluster: tcp://HOST:PORT")
    p.add_argument("--seeds", default=None, help=SEEDS_HELP + " (default: the scale's)")
    p.add_argument(
        "--solver", choices=backend_names(), default=None, help="OrigaMIG's solver (default highs)"
    )
    p.add_argument(
        "--fleet", type=Path, default=None, help="simulate this fleet file (examples/fleets/) at its own size"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress display")
    p.add_argument("--replot", action="store_true", help="redo table/figure from the stored JSON, no runs")
    p.add_argument(
        "--cells", action="store_true", help="list the cells of this command, done or left, and exit"
    )
    p.add_argument(
        "--fresh", action="store_true", help="discard the stored results of this scale and run every cell"
    )
    p.add_argument(
        "--adopt",
        action="store_true",
        help="stored runs were made by other code: recompute the cheapest cell of each policy and, if "
        "identical, keep them as this code's (then run what is left)",
    )
    p.add_argument("--out", type=Path, default=results, help=f"results folder (default {results})")
    return p


def add_warmup(p: argparse.ArgumentParser, name: str, quick: Scale, full: Scale) -> None:
    """`--warmup H`: another warm-up than the scale's, into a results file of its own."""
    p.add_argument(
        "--warmup",
        type=float,
        default=None,
        help=f"warm-up hours (default {full.warmup_h:g} full, {quick.warmup_h:g} quick); another value "
        f"writes its own results file, {name}-<scale>-warmup<H>h.json",
    )


def with_warmup(scale: Scale, hours: float | None) -> Scale:
    """`scale` with `hours` of warm-up, named for them (a results file of its own); unchanged for None
    or the scale's own warm-up."""
    if hours is None or hours == scale.warmup_h:
        return scale
    return replace(scale, name=f"{scale.name}-warmup{hours:g}h", warmup_h=hours)


def scale_from(args: argparse.Namespace, quick: Scale, full: Scale) -> Scale:
    chosen = full if args.full else quick
    if args.seeds is not None:
        chosen = replace(chosen, seeds=parse_seeds(args.seeds))
    if getattr(args, "solver", None):
        chosen = replace(chosen, solver=args.solver)
    if getattr(args, "fleet", None):
        from origamig.sim.fleet import load_fleet

        fleet = load_fleet(args.fleet)
        chosen = replace(chosen, name=f"{chosen.name}-{fleet.name}", pms=fleet.pm_count, fleet=fleet)
    return chosen


def run_or_load(name: str, scale: Scale, cells: Sequence[Cell], args: argparse.Namespace) -> Sweep:
    """`run` the cells not yet in the results file (`--fresh`: all of them, starting a new file;
    `--adopt`: first adopt the runs of other code), or with `--replot` read the stored results of this
    scale instead; `--cells` lists the cells and exits."""
    if getattr(args, "cells", False):
        list_cells(name, scale, cells, args.out)
        raise SystemExit(0)
    if getattr(args, "replot", False):
        return load_sweep(name, scale, args.out)
    if getattr(args, "fresh", False):
        results_path(name, scale, args.out).unlink(missing_ok=True)
        for cell in cells:
            checkpoint_path(name, scale, cell, args.out).unlink(missing_ok=True)
    elif getattr(args, "adopt", False):
        adopt(name, scale, args.out, args.workers, args.scheduler, not args.no_progress, cells)
    return run(name, scale, cells, args.workers, args.scheduler, not args.no_progress, args.out)


def main_wrapper(fn: Callable[[argparse.Namespace], object], args: argparse.Namespace) -> None:
    """Turn a `UserError` into `error: ...` lines and exit code 2, as the CLI does."""
    try:
        fn(args)
    except UserError as exc:
        for line in str(exc).splitlines():
            print(f"error: {line}", file=sys.stderr)
        raise SystemExit(2) from None
