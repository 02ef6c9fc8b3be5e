"""`origamig simulate`: run policies × loads × seeds through the simulator; table and JSON results."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from origamig.cli.arguments import (
    LOADS,
    OPTIONS,
    POLICY_HELP,
    SCHEDULER,
    SEEDS_HELP,
    parse_duration,
    parse_loads,
    parse_options,
    parse_settings,
    split_list,
)
from origamig.cli.results_view import summary_table
from origamig.cli.terminal import operator_console
from origamig.errors import UserError
from origamig.sim.scenario import VARIANTS, data_center_fields
from origamig.snapshot.document import write_json_atomic
from origamig.solver_registry import DEFAULT_BACKEND, backend_names
from origamig.study.plan import RunSetting, plan_runs
from origamig.study.progress import Job, RunsProgress
from origamig.study.results import document
from origamig.study.runner import FailedRun, RunSpec, kept_result, kept_run_path, run_all
from origamig.study.seeds import parse_seeds


def simulate(
    policy: Annotated[list[str], typer.Option("--policy", help=POLICY_HELP)],
    load: Annotated[list[str] | None, LOADS] = None,
    seeds: Annotated[str, typer.Option("--seeds", help=SEEDS_HELP + ".")] = "1..5",
    pms: Annotated[
        int | None,
        typer.Option(
            "--pms",
            help="Number of PMs (default 128: 3/4 with 2x A100, 1/4 with 2x A30; with --fleet: the "
            "fleet's own, or the fleet scaled to N PMs).",
        ),
    ] = None,
    fleet: Annotated[
        Path | None,
        typer.Option("--fleet", help="Fleet file (TOML): your PM kinds and workload (examples/fleets/)."),
    ] = None,
    start: Annotated[
        Path | None,
        typer.Option(
            "--from", help="Start from this cluster snapshot (JSON): its PMs, running and pending VMs."
        ),
    ] = None,
    variant: Annotated[
        str, typer.Option("--variant", help=f"Table 9 variant: {', '.join(VARIANTS)}.")
    ] = "default",
    warmup: Annotated[
        str, typer.Option("--warmup", help="Warm-up before measuring (48h, 30m, 3600).")
    ] = "48h",
    measure: Annotated[str, typer.Option("--measure", help="Measured window.")] = "72h",
    solver: Annotated[
        str, typer.Option("--solver", help=f"BILP backend: {', '.join(backend_names())}.")
    ] = DEFAULT_BACKEND,
    deterministic: Annotated[
        bool,
        typer.Option(
            "--deterministic",
            help="Single-thread solver with a work limit; call time modeled; a solve still running "
            "after 300 s is ended (docs/model.md#solvers).",
        ),
    ] = False,
    workers: Annotated[int, typer.Option("--workers", help="Parallel worker processes.")] = 1,
    scheduler: Annotated[str | None, SCHEDULER] = None,
    requests: Annotated[
        Path | None, typer.Option("--requests", help="Replay requests from a CSV/JSON file instead.")
    ] = None,
    trace_dir: Annotated[
        str | None,
        typer.Option("--trace-dir", help="Folder of the Alibaba 2023 GPU trace (variant alibaba)."),
    ] = None,
    option: Annotated[list[str] | None, OPTIONS] = None,
    migration: Annotated[
        list[str] | None,
        typer.Option(
            "--migration",
            help="Migration model setting KEY=VALUE (repeatable; docs/plans.md#in-time): "
            "bandwidth_gbit_s (each PM's link, 12.5), local_gbit_s (copies inside a PM), "
            "gi_operation_s (each GI created or destroyed; default: the GPU model's).",
        ),
    ] = None,
    bound: Annotated[
        str | None,
        typer.Option("--bound", help="OrigaMIG neighborhoods bounded by 'pms' (default) or 'vms'."),
    ] = None,
    baseline: Annotated[str | None, typer.Option("--baseline", help="Policy for paired differences.")] = None,
    debug_check: Annotated[
        bool, typer.Option("--debug-check", help="Check every state with origamig.judge.check (slow).")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the results JSON instead of a table.")
    ] = False,
    out: Annotated[Path | None, typer.Option("--out", help="Write the results JSON to this file.")] = None,
    checkpoint_dir: Annotated[
        Path | None,
        typer.Option(
            "--checkpoint-dir",
            help="Keep every run's checkpoint (saved every 10 min) and finished result in this folder; "
            "rerunning the same command resumes interrupted runs and skips finished ones.",
        ),
    ] = None,
) -> None:
    """Simulate placement policies on the paper's workload (docs/simulator.md), or on your fleet (--fleet) or
    cluster (--from), and report their metrics.

    The default scale (128 PMs, 48 h warm-up + 72 h measured, seeds 1..5,
    load 0.85) costs, per seed on one core: about 1 s for FF, 10-30 s for TC,
    about 15 minutes for OrigaMIG. For a first look try --pms 32 --warmup 24h
    --measure 24h --seeds 2 (OrigaMIG: 0.5-2 minutes per seed)."""
    policies = split_list(policy)
    options = parse_options(option or [], policies)
    if bound is not None:
        options = (*options, *parse_options([f"bound={bound}"], policies))
    if workers < 1:
        raise UserError(f"--workers: {workers} must be at least 1")
    setting = RunSetting(
        data_center_fields(pms, fleet, start, names=("--pms", "--fleet", "--from")),
        parse_duration(warmup, "--warmup"),
        parse_duration(measure, "--measure"),
        variant,
        deterministic,
        solver,
        str(requests) if requests else None,
        trace_dir,
        debug_check,
        options,
        parse_settings(migration or [], "--migration"),
    )
    specs = plan_runs(setting, policies, parse_loads(load or ["0.85"]), parse_seeds(seeds))
    if checkpoint_dir is not None and not as_json:
        kept = sum(kept_result(kept_run_path(checkpoint_dir, s, ".json")) is not None for s in specs)
        if kept:
            operator_console(stderr=True).print(
                f"{kept} of {len(specs)} runs already finished in {checkpoint_dir}"
            )
    outcomes = _run_with_progress(specs, workers, scheduler, quiet=as_json, keep_dir=checkpoint_dir)
    results = [r for r in outcomes if not isinstance(r, FailedRun)]
    doc = document(results, baseline)
    if out:
        write_json_atomic(out, doc, indent=1)
    if as_json:
        typer.echo(json.dumps(doc, indent=1))
    else:
        console = operator_console()
        console.print(summary_table(doc))
        if out:
            console.print(f"results written to {out}")
    if len(results) < len(outcomes):
        failed = [r for r in outcomes if isinstance(r, FailedRun)]
        print(
            f"{len(failed)} of {len(outcomes)} runs failed"
            + ("" if as_json else " (the lines above say why)"),
            file=sys.stderr,
        )
        if as_json:  # no progress lines were shown: say why here
            for run in failed:
                print(f"run {run.describe()}", file=sys.stderr)
        raise typer.Exit(1)


def _run_with_progress(
    specs: list[RunSpec], workers: int, scheduler: str | None, quiet: bool, keep_dir: Path | None = None
) -> list[Any]:
    """Run the specs under the progress display (on stderr; `study.progress`)."""
    jobs = [Job(f"{s.policy} ρ={s.config.load:g} seed {s.seed}", s.config.horizon_s) for s in specs]
    with RunsProgress(f"{len(specs)} runs", jobs, show=not quiet) as shown:
        return run_all(
            specs, workers=workers, scheduler=scheduler, progress=shown.live, done=shown.finished,
            keep_dir=keep_dir,
        )  # fmt: skip


def register(app: typer.Typer) -> None:
    app.command("simulate")(simulate)
