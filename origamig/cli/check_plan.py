"""`origamig check-plan SNAPSHOT PLAN.json`: replay a plan (docs/formats.md#replay), report a broken step.

PLAN.json is a bare list of steps or a `solve --json` document; with the latter, the final state
must also equal its `"placement"`. Exit codes: 0 the plan is valid, 1 a step breaks a rule (the
step's index and why), 2 the snapshot or the plan file is malformed — a step that is not an object,
an unknown op, a missing or mistyped field, or a VM or PM the snapshot does not have (one line per
unknown name: the plan was made for another snapshot).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from origamig.cli.switches import INTRA_PM_HELP, Switch
from origamig.cluster.records import GiSlot, Placement
from origamig.errors import SnapshotError
from origamig.files import LARGEST, quantity_problem
from origamig.judge.replay import malformed_steps, replay_plan
from origamig.snapshot.document import Snapshot, load_snapshot, placement_json, read_json, show


def _steps_and_target(doc: Any, path: Path, snap: Snapshot) -> tuple[list[Any], dict[str, Placement] | None]:
    if isinstance(doc, list):
        steps, target_raw, where = doc, None, f"{path}: plan"
    elif isinstance(doc, dict) and "plan" in doc:
        steps, target_raw, where = doc["plan"], doc.get("placement"), f"{path}: plan"
    else:
        raise SnapshotError(f'{path}: expected a list of steps or a `solve --json` document with "plan"')
    if not isinstance(steps, list):
        raise SnapshotError(f"{path}: plan: expected a list of steps, got {show(steps)}")
    bad = _too_large(steps, where) or malformed_steps(steps, {pm.id for pm in snap.pms}, set(snap.vms), where)
    if bad:
        raise SnapshotError(bad)
    return steps, (None if target_raw is None else _target(target_raw, path, snap))


def _too_large(steps: list[Any], where: str) -> list[str]:
    """One line per index field (`gi`, `gpu`, `start`) of a step beyond `LARGEST` (no GPU has that many)."""
    return [
        f"{where}[{n}].{key}: {quantity_problem(step[key])}"
        for n, step in enumerate(steps)
        if isinstance(step, dict)
        for key in ("gi", "gpu", "start")
        if isinstance(step.get(key), int) and not isinstance(step[key], bool) and step[key] > LARGEST
    ]


def _target(raw: Any, path: Path, snap: Snapshot) -> dict[str, Placement]:
    """The `"placement"` object of a solve document, as Placements (PM ids → indices)."""
    if not isinstance(raw, Mapping):
        raise SnapshotError(f"{path}: placement: expected an object, got {show(raw)}")
    index = {pm.id: j for j, pm in enumerate(snap.pms)}
    out: dict[str, Placement] = {}
    problems: list[str] = []
    unknown_pms: dict[str, list[str]] = {}
    for vm_id, pl in raw.items():
        where = f"{path}: placement.{vm_id}"
        try:
            slots = tuple(GiSlot(int(s["gpu"]), int(s["start"])) for s in pl["gis"])
            pm_id = pl["pm"]
            numbers = [v for slot in slots for v in (slot.gpu, slot.start)]
            if not isinstance(pm_id, str) or any(quantity_problem(v) for v in numbers):
                raise TypeError
        except (KeyError, TypeError, ValueError):
            problems.append(
                f'{where}: expected {{"pm": <PM id>, "gis": [{{"gpu", "start"}}]}}, got {show(pl)}'
            )
            continue
        if vm_id not in snap.vms:
            problems.append(f"{where}: unknown VM {vm_id!r}, not in the snapshot")
            continue
        if pm_id not in index:
            unknown_pms.setdefault(pm_id, []).append(vm_id)
            continue
        out[vm_id] = Placement(index[pm_id], slots)
    for pm_id, vms in unknown_pms.items():
        more = f" and {len(vms) - 1} more" if len(vms) > 1 else ""
        problems.append(
            f"{path}: placement.{vms[0]}.pm: unknown PM {pm_id!r}, not in the snapshot ({vms[0]}{more})"
        )
    if problems:
        raise SnapshotError(problems)
    return out


def check_plan(
    snapshot: Annotated[
        Path, typer.Argument(help="Snapshot JSON file the plan starts from.", show_default=False)
    ],
    plan: Annotated[
        Path, typer.Argument(help="A list of steps, or a `solve --json` document.", show_default=False)
    ],
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    intra_pm_moves: Annotated[Switch | None, typer.Option("--intra-pm-moves", help=INTRA_PM_HELP)] = None,
) -> None:
    """Replay a migration plan step by step and report the first step that breaks a constraint."""
    snap = load_snapshot(snapshot)
    steps, target = _steps_and_target(read_json(plan), plan, snap)
    running = {v: snap.vms[v] for v in snap.placement}
    pending = {v: snap.vms[v] for v in snap.pending}
    intra = snap.intra_pm_moves if intra_pm_moves is None else intra_pm_moves is Switch.TRUE
    result = replay_plan(
        snap.pms, running, snap.placement, pending, steps, target=target, intra_pm_moves=intra
    )
    if as_json:
        doc = {
            "ok": result.ok,
            "steps": len(steps),
            "steps_run": result.steps_run,
            "failed_step": result.failed_step,
            "reason": result.reason,
            "checked_against_placement": target is not None,
            "final_placement": placement_json(snap.pms, result.final_placement),
            "powered_on": sorted(result.powered_on),
        }
        typer.echo(json.dumps(doc, indent=2))
    elif result.ok:
        extra = " and ends in the document's placement" if target is not None else ""
        typer.echo(
            f"ok: {len(steps)} steps replayed; every intermediate state respects CPU, RAM and slices{extra}"
        )
    else:
        typer.echo(f"invalid: {result.reason}")
    if not result.ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("check-plan")(check_plan)
