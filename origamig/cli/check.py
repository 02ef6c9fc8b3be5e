"""`origamig check SNAPSHOT`: validate a snapshot; summarize PMs, GPUs per class, occupancy, CF and Γ_h."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from origamig.cli.terminal import render_text, write_stdout
from origamig.cluster.records import Weights
from origamig.cluster.summary import NoGpuCounts, StateSummary, summarize
from origamig.errors import UserError
from origamig.judge.fit import no_fit_reason
from origamig.judge.objective import evaluate_dc
from origamig.plan.render import text_table
from origamig.snapshot.document import Snapshot, load_snapshot

SUMMARY_COLUMNS = (
    ("class", "left"),
    ("models", "left"),
    ("GPUs", "right"),
    ("in use", "right"),
    ("slices used", "right"),
    ("occupancy", "right"),
    ("packing", "right"),
    ("free placements (CF)", "right"),
    ("GPUs to free (Γ_h)", "right"),
)


def render_summary(summary: StateSummary, title: str) -> Table:
    """A table of `summarize` output: one row per GPU class, operator words first (paper symbols in
    brackets)."""
    rows = []
    for h, c in summary.classes.items():
        if isinstance(c, NoGpuCounts):
            rows.append((h, f"{c.pms} servers without GPUs", "", "", "", "", "", "", str(c.gamma)))
            continue
        rows.append(
            (
                h,
                ", ".join(c.models),
                str(c.gpus),
                str(c.active_gpus),
                f"{c.used_slices}/{c.slices}",
                f"{100 * c.occupancy:.1f}%",
                f"{100 * c.packing_density:.1f}%",
                str(c.cf),
                str(c.gamma),
            )
        )
    return text_table(title, SUMMARY_COLUMNS, rows)


def _headline(s: StateSummary) -> str:
    return (
        f"{s.pms} servers ({s.active_pms} on, {s.powered_off_pms} powered off), "
        f"{s.running_vms} running VMs, {s.pending_vms} pending; "
        f"CPU {s.cpu.used:g}/{s.cpu.total:g} cores, RAM {s.ram_gb.used:g}/{s.ram_gb.total:g} GB"
    )


def objective_line(terms: dict[str, float]) -> str:
    """The objective and its four terms in operator words (docs/operators.md#objective)."""
    return (
        "objective {value:g} = admitted VMs {acceptance:g} − servers and GPUs on {consolidation:g} "
        "− moves {migration:g} + free placements {free_starts:g} (Eq. 5)".format(**terms)
    )


def check(
    snapshot: Annotated[
        Path, typer.Argument(help="Snapshot JSON file (docs/formats.md#snapshot).", show_default=False)
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON document instead of tables.")] = False,
) -> None:
    """Validate a snapshot (every problem, one line each, exit 2) and summarize the cluster it describes.

    Pending VMs that fit no PM even when it is empty are valid but can never be admitted: each gets
    a `warning:` line (and an entry of `warnings` with --json). With --json a JSON document is
    printed in every case: `{"valid": false, "errors": [...]}` for an invalid snapshot (exit 2).
    """
    try:
        snap = load_snapshot(snapshot)
    except UserError as err:
        if as_json:
            typer.echo(json.dumps({"valid": False, "errors": err.problems}, indent=2))
        raise
    dc = snap.datacenter()
    summary = summarize(dc)
    objective = evaluate_dc(dc, dc.placement, snap.weights)
    warnings = unplaceable_warnings(snap)
    if as_json:
        doc = {**summary.to_json(), "objective": objective.as_dict(), "weights": _weights_dict(snap.weights)}
        typer.echo(json.dumps({"valid": True, "warnings": warnings, **doc}, indent=2))
        return
    for line in warnings:
        typer.echo(f"warning: {line}", err=True)
    lines: list[Any] = [
        f"{snapshot}: valid",
        _headline(summary),
        render_summary(summary, "GPUs per class"),
        objective_line(objective.as_dict()),
    ]
    if warnings:
        lines.append(f"{len(warnings)} pending VM(s) fit no server even when it is empty (see the warnings)")
    write_stdout(render_text(lines))


def unplaceable_warnings(snap: Snapshot) -> list[str]:
    """One line per pending VM that fits no PM even when it is empty, naming it and why."""
    position = {v: n for n, v in enumerate(snap.vms)}
    out = []
    for v in snap.pending:
        reason = no_fit_reason(snap.pms, snap.vms[v])
        if reason is not None:
            out.append(f"vms[{position[v]}] ({v}): pending, but fits no PM even when empty: {reason}")
    return out


def _weights_dict(w: Weights) -> dict[str, Any]:
    return {
        "accept": w.accept,
        "pm": w.pm,
        "gpu": w.gpu,
        "free_start": dict(w.free_start_by_profile) or w.free_start,
        "migration": w.migration,
    }


def register(app: typer.Typer) -> None:
    app.command("check")(check)
