"""`origamig check SNAPSHOT`: validate a snapshot; summarize PMs, GPUs per class, occupancy, CF and Γ_h."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from origamig.cli.terminal import render_text, write_stdout
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import NO_GPU_CLASS, PmSpec, Weights
from origamig.errors import UserError
from origamig.judge.fit import no_fit_reason
from origamig.judge.objective import evaluate_dc
from origamig.plan.render import text_table
from origamig.snapshot.document import Snapshot, load_snapshot

_CLASS_COUNTS = ("gpus", "active_gpus", "slices", "used_slices", "cf", "cf_active")


def summarize(
    dc: DataCenter,
    pms: Sequence[PmSpec] | None = None,
    since: tuple[DataCenter, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Counts of a state: PMs, VMs, CPU/RAM, and per GPU class the GPUs, slices, CF and Γ_h; `pms`:
    the servers as they are to be reported (which are switched off), default `dc`'s. `since`: a state
    `dc` was copied from and its summary — only the PMs whose records differ are read again."""
    specs = dc.pms if pms is None else pms
    classes: dict[str, dict[str, Any]] = {}
    if since is None:
        for j in range(len(dc.pms)):
            _count_pm(classes, dc, j, 1)
    else:
        base, summary = since
        for h, c in summary["classes"].items():
            if h != NO_GPU_CLASS:
                classes[h] = {"models": list(c["models"]), **{k: c[k] for k in _CLASS_COUNTS}}
        for j in dc.differing_pms(base):
            _count_pm(classes, base, j, -1)
            _count_pm(classes, dc, j, 1)
    for h, c in classes.items():
        c["occupancy"] = c["used_slices"] / c["slices"] if c["slices"] else 0.0
        active_slices = c["active_gpus"] * dc.class_slices[h]
        c["packing_density"] = c["used_slices"] / active_slices if active_slices else 0.0
        c["gamma"] = dc.gamma(h)
    if dc.no_gpu_pms:
        classes[NO_GPU_CLASS] = {"pms": len(dc.no_gpu_pms), "gamma": dc.gamma(NO_GPU_CLASS)}
    cpu_total = sum(pm.cpu_m for pm in dc.pms)
    ram_total = sum(pm.ram_mb for pm in dc.pms)
    cpu_used = cpu_total - sum(dc.free_cpu_m(j) for j in range(len(dc.pms)))
    ram_used = ram_total - sum(dc.free_ram_mb(j) for j in range(len(dc.pms)))
    return {
        "pms": len(dc.pms),
        "active_pms": dc.active_pms,
        "powered_off_pms": sum(1 for j, pm in enumerate(specs) if pm.powered_off and not dc.is_active(j)),
        "running_vms": len(dc.vms),
        "pending_vms": len(dc.pending),
        "cpu": {"total": cpu_total / 1000, "used": cpu_used / 1000},
        "ram_gb": {"total": ram_total / 1000, "used": ram_used / 1000},
        "active_gpus": sum(c.get("active_gpus", 0) for c in classes.values()),
        "cf": sum(c.get("cf", 0) for c in classes.values()),  # over every GPU (free capacity)
        "cf_active": sum(c.get("cf_active", 0) for c in classes.values()),  # over active GPUs (Eq. 5 term)
        "classes": classes,
    }


def _count_pm(classes: dict[str, dict[str, Any]], dc: DataCenter, j: int, sign: int) -> None:
    """Add (`sign` 1) or take away (-1) PM j's GPUs in `dc` to the per-class counts."""
    for k, model in enumerate(dc.pms[j].gpus):
        c = classes.setdefault(model.gpu_class, {"models": [], **dict.fromkeys(_CLASS_COUNTS, 0)})
        if model.name not in c["models"]:
            c["models"].append(model.name)
        active = dc.gpu_active(j, k)
        cf = dc.cf(j, k)
        c["gpus"] += sign
        c["active_gpus"] += sign * int(active)
        c["slices"] += sign * model.memory_slices
        c["used_slices"] += sign * (model.memory_slices - dc.free_slices(j, k))
        c["cf"] += sign * cf
        c["cf_active"] += sign * cf if active else 0


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


def render_summary(summary: dict[str, Any], title: str) -> Table:
    """A table of `summarize` output: one row per GPU class, operator words first (paper symbols in
    brackets)."""
    rows = []
    for h, c in summary["classes"].items():
        if h == NO_GPU_CLASS:
            rows.append((h, f"{c['pms']} servers without GPUs", "", "", "", "", "", "", str(c["gamma"])))
            continue
        rows.append(
            (
                h,
                ", ".join(c["models"]),
                str(c["gpus"]),
                str(c["active_gpus"]),
                f"{c['used_slices']}/{c['slices']}",
                f"{100 * c['occupancy']:.1f}%",
                f"{100 * c['packing_density']:.1f}%",
                str(c["cf"]),
                str(c["gamma"]),
            )
        )
    return text_table(title, SUMMARY_COLUMNS, rows)


def _headline(summary: dict[str, Any]) -> str:
    return (
        f"{summary['pms']} servers ({summary['active_pms']} on, {summary['powered_off_pms']} powered off), "
        f"{summary['running_vms']} running VMs, {summary['pending_vms']} pending; "
        f"CPU {summary['cpu']['used']:g}/{summary['cpu']['total']:g} cores, "
        f"RAM {summary['ram_gb']['used']:g}/{summary['ram_gb']['total']:g} GB"
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
    summary["objective"] = objective.as_dict()
    summary["weights"] = _weights_dict(snap.weights)
    warnings = unplaceable_warnings(snap)
    if as_json:
        typer.echo(json.dumps({"valid": True, "warnings": warnings, **summary}, indent=2))
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
