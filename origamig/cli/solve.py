"""`origamig solve SNAPSHOT`: optimize a cluster snapshot, decide, print the plan, write the new state."""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import sys
from collections.abc import Iterator
from dataclasses import replace
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from origamig.call.goals import DEFAULT_GOAL, Goal
from origamig.cli.solve_files import check_destinations, output_files
from origamig.cli.solve_report import exit_code, report, summaries
from origamig.cli.switches import INTRA_PM_HELP, Switch
from origamig.cluster.records import Weights
from origamig.collector import collector_frozen, collector_paused
from origamig.files import check_quantities
from origamig.plan.steps import DEFAULT_BANDWIDTH_GBIT_S
from origamig.snapshot.document import json_text, load_snapshot, write_text_atomic
from origamig.solver_registry import DEFAULT_BACKEND, backend_names

# What the report needs only after the solve (rich and the tables), imported while the solver's helper
# works instead of on the way to the solve.
_AFTER_SOLVE = ("origamig.cli.check", "origamig.cli.terminal", "origamig.plan.render", "rich.text")

SolverName = StrEnum("SolverName", {name: name for name in backend_names()})  # type: ignore[misc]
_DEFAULT_SOLVER = SolverName(DEFAULT_BACKEND)


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Send file-descriptor 1 to stderr while solvers run: native libraries print banners there."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no real stdout (e.g. an in-process test runner): nothing to protect
        yield
        return
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _weights(base: Weights, overrides: dict[str, float | None]) -> Weights:
    given: dict[str, Any] = {k: v for k, v in overrides.items() if v is not None}
    check_quantities({f"--{k.replace('_', '-')}": v for k, v in given.items()})
    return replace(base, **given)


def solve(
    snapshot: Annotated[
        Path, typer.Argument(help="Snapshot JSON file (docs/formats.md#snapshot).", show_default=False)
    ],
    solver: Annotated[SolverName, typer.Option("--solver", help="MIP solver backend.")] = _DEFAULT_SOLVER,
    time_limit: Annotated[
        float,
        typer.Option(
            "--time-limit",
            min=0.0,
            help="Wall-clock limit of the whole command (s), from its start: the calls share it, the first"
            " taking what they need, the last what is left (docs/solving.md#time-limit). Not with"
            " --deterministic, which stops each call by its work budget only.",
        ),
    ] = 10.0,
    call_time_limit: Annotated[
        float | None,
        typer.Option(
            "--call-time-limit",
            min=0.0,
            help="The most one call's solver may take (s); default: whatever is left of --time-limit.",
        ),
    ] = None,
    threads: Annotated[
        int | None,
        typer.Option("--threads", min=1, help="Solver threads (default: all cores; 1 if deterministic)."),
    ] = None,
    deterministic: Annotated[
        bool, typer.Option("--deterministic", help="Reproducible solve: fixed threads, no wall-clock effect.")
    ] = False,
    neighborhood: Annotated[
        str, typer.Option("--neighborhood", help="auto (Algorithm 1), all, or PM ids: pm0,pm3,...")
    ] = "auto",
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print the solve document as JSON (docs/formats.md#solve-document)."),
    ] = False,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the resulting snapshot here (atomically).")
    ] = None,
    script: Annotated[
        Path | None,
        typer.Option(
            "--script",
            help="Write the plan as a dry-run shell script here (prints each command; runs them only"
            " with ORIGAMIG_EXECUTE=1).",
        ),
    ] = None,
    goal: Annotated[
        Goal,
        typer.Option(
            "--goal",
            help="balanced: admit every VM that fits with the fewest moves, then consolidate where the"
            " weights say it pays; admit: the same admissions, nothing else moves; consolidate: free"
            " servers; paper: the snapshot's weights for every call, a VM may be turned away for its"
            " cost (docs/solving.md#goals).",
        ),
    ] = DEFAULT_GOAL,
    intra_pm_moves: Annotated[
        Switch | None,
        typer.Option("--intra-pm-moves", help=INTRA_PM_HELP),
    ] = None,
    calls: Annotated[
        int | None,
        typer.Option(
            "--calls",
            min=1,
            help="At most this many calls (default: until every pending VM is admitted or retired, then"
            " consolidation); 1 = the paper's single call (docs/solving.md#the-call-loop).",
        ),
    ] = None,
    bandwidth: Annotated[
        float,
        typer.Option(
            "--bandwidth",
            min=0.001,
            max=1e6,
            help="Gbit/s at which a move copies memory (for the plan's time; docs/solving.md#move-costs).",
        ),
    ] = DEFAULT_BANDWIDTH_GBIT_S,
    no_good_cuts: Annotated[
        int,
        typer.Option(
            "--no-good-cuts",
            min=0,
            help="Per call: how many solutions whose moves have no valid order are excluded and solved"
            " again before giving up (docs/solving.md#no-good-cuts).",
        ),
    ] = 5,
    primal: Annotated[
        bool,
        typer.Option(
            "--primal/--no-primal",
            help="Start each call's solver from a fast primal answer (greedy admissions and emptied"
            " servers, milliseconds): a time limit of a second or less still returns an improving plan"
            " (docs/solving.md#fast-primal-answer).",
        ),
    ] = True,
    accept: Annotated[
        float | None, typer.Option("--accept", help="Override weight a_i (admitting a VM).")
    ] = None,
    pm: Annotated[float | None, typer.Option("--pm", help="Override weight b_j (an active PM).")] = None,
    gpu: Annotated[float | None, typer.Option("--gpu", help="Override weight e_jk (an active GPU).")] = None,
    free_start: Annotated[
        float | None, typer.Option("--free-start", help="Override weight w_p (a free start slice).")
    ] = None,
    migration: Annotated[
        float | None, typer.Option("--migration", help="Override δ_i (a migration of a running VM).")
    ] = None,
) -> None:
    """Optimize a snapshot: admit pending VMs, consolidate, and plan the live migrations to get there.

    Exit codes: 0 improved or unchanged (a plan, or proof that none is strictly better); 3 stopped at
    the limit without proof and without anything strictly better; 4 the solver failed; 5 no valid
    migration order; 2 bad input. With 3, 4 and 5 the state stays as it is (--out writes it).
    """
    from origamig.bilp.backends.base import (
        Once,
        make_limits,  # the solvers load only when a solve runs
    )
    from origamig.bilp.backends.helper_pool import start_solver_helpers
    from origamig.cli.console_entry import command_started, end_without_teardown

    end_without_teardown()  # its files are written atomically before it returns; helpers end with us
    started = command_started()
    check_quantities({"--time-limit": time_limit, "--call-time-limit": call_time_limit, "--threads": threads})
    check_destinations(snapshot, out, script)  # before anything is solved
    limits = make_limits(solver.value, time_limit, threads, deterministic)
    start_solver_helpers(solver.value, limits)  # they import their solver while this process reads
    after_solve = Once([functools.partial(importlib.import_module, m) for m in _AFTER_SOLVE])
    from origamig.call.solve import solve_snapshot  # Pyomo and the planner: after the helpers start
    from origamig.call.successive import Deadline

    with collector_paused(freeze_on_exit=True):  # a million objects, no cycles: origamig/collector.py
        snap = load_snapshot(snapshot)
    if intra_pm_moves is not None:
        snap = replace(snap, intra_pm_moves=intra_pm_moves is Switch.TRUE)
    overrides = {"accept": accept, "pm": pm, "gpu": gpu, "free_start": free_start, "migration": migration}
    weights = _weights(snap.weights, overrides)
    with _stdout_to_stderr(), collector_frozen():  # the snapshot read stays out of the collector's passes
        outcome = solve_snapshot(
            snap,
            weights,
            solver.value,
            limits,
            neighborhood,
            calls=calls,
            goal=goal,
            no_good_limit=no_good_cuts,
            bandwidth_gbit_s=bandwidth,
            bound_alongside=True,  # this process waits for the answer: the LP bound beside the solver
            primal=primal,
            while_waiting=after_solve,  # imported while the first solver works
            deadline=Deadline.after(time_limit, call_time_limit, started),
        )
    from origamig.cli.terminal import render_text, write_stdout

    with collector_paused():
        summary = summaries(snap, outcome)
        files = output_files(snap, outcome, out, script)  # everything is rendered before anything is written
        if as_json:
            before, after = summary
            text = json_text(
                {**outcome.to_json(), "summary": {"before": before.to_json(), "after": after.to_json()}}
            )
        else:
            text = render_text([*report(snapshot, snap, outcome, summary), *(f"wrote {p}" for p in files)])
    for path, (content, mode) in files.items():
        write_text_atomic(path, content, new_mode=mode)
    write_stdout(text)
    code = exit_code(outcome.status)
    if code:
        raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.command("solve")(solve)
