"""A sweep's results file, `<out>/<name>-<scale>.json`: what it holds, reading it, writing it.

Every run record names the code that computed it (`code`: the runner's source fingerprint, the one
its checkpoints carry). A rerun skips the cells stored by this very code; a file holding runs of other
code is refused until `adopt` has shown, by recomputing some of them, that this code gives the same
results. Files written before runs named their code carry `"revision": 3` in their scale (the last
hand-numbered revision); they are adopted the same way."""

from __future__ import annotations

import hashlib
import json
import os
import platform
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from origamig.errors import UserError
from origamig.sim.fleet import fleet_from_dict
from origamig.snapshot.document import write_text_atomic
from origamig.study.runner import source_fingerprint
from origamig.study.sweep.cells import Cell, json_value, without_unset_hardware
from origamig.study.sweep.records import DERIVED_NAMES, RunRecord, derive, pms_per_100_gpus_served
from origamig.study.sweep.runs import Sweep, cells_of, covering
from origamig.study.sweep.scale import Scale

# The last hand-numbered results revision: files of earlier revisions were made by code that computes
# differently and can never be adopted.
LAST_REVISION = 3
# Fields of a stored scale that name no setting (the seeds are the union of the runs').
_NOT_SETTINGS = ("seeds", "revision")


def code_id() -> str:
    """The code a run is computed by: the runner's source fingerprint (first 16 hex digits)."""
    return source_fingerprint()[:16]


def results_path(name: str, scale: Scale, out_dir: Path) -> Path:
    return out_dir / f"{name}-{scale.name}.json"


def checkpoint_path(name: str, scale: Scale, cell: Cell, out_dir: Path) -> Path:
    """Where a running cell saves itself (git-ignored). The checkpoint names the run and the code it
    is a run of, so a checkpoint left by other code is never resumed (`RunSpec.identity`)."""
    digest = hashlib.sha256(cell.key.encode()).hexdigest()[:16]
    return out_dir / ".checkpoints" / f"{name}-{scale.name}-{digest}.ckpt"


def read_doc(path: Path) -> dict[str, Any] | None:
    """The results document at `path`, or None when there is none."""
    if not path.exists():
        return None
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: cannot read stored results ({exc}); move it away to start afresh") from None
    if not isinstance(doc, dict):
        raise UserError(f"{path}: not a results file (expected an object); move it away to start afresh")
    return doc


def check_setting(path: Path, doc: dict[str, Any], scale: Scale) -> None:
    """Refuse a file written at another setting of the same scale name (PMs, hours, solver budget):
    its runs would not be comparable; and a file of a hand-numbered revision before the last."""
    stored = {
        k: v for k, v in without_unset_hardware(doc.get("scale") or {}).items() if k not in _NOT_SETTINGS
    }
    wanted = {
        k: v for k, v in without_unset_hardware(json_value(asdict(scale))).items() if k not in _NOT_SETTINGS
    }
    revision = (doc.get("scale") or {}).get("revision", 1)
    if doc.get("runs") and not _has_code(doc) and revision != LAST_REVISION:
        raise UserError(
            f"{path}: holds runs of results revision {revision}, made by earlier code that computes "
            f"differently (the last revision is {LAST_REVISION}); move it away or use --fresh"
        )
    if stored != wanted:
        diff = ", ".join(
            f"{k}: {stored.get(k)!r} there, {wanted[k]!r} now" for k in wanted if stored.get(k) != wanted[k]
        )
        raise UserError(f"{path}: holds runs at another setting ({diff}); move it away or use --out")


def _has_code(doc: dict[str, Any]) -> bool:
    return any(isinstance(r, dict) and r.get("code") for r in doc.get("runs", []))


def stored_runs(name: str, scale: Scale, out_dir: Path, *, any_code: bool = False) -> list[RunRecord]:
    """The runs already in the results file (finished cells of earlier invocations).

    Unless `any_code`, a file holding runs of other code is refused with the way out (`--adopt`)."""
    path = results_path(name, scale, out_dir)
    doc = read_doc(path)
    if doc is None:
        return []
    check_setting(path, doc, scale)
    runs = sweep_runs(doc)
    stale = [r for r in runs if r.code != code_id()]
    if stale and not any_code:
        made_by = sorted({str(r.code or f"revision {LAST_REVISION}") for r in stale})
        raise UserError(
            f"{path}: {len(stale)} of {len(runs)} runs were made by other code ({', '.join(made_by)}; "
            f"this is {code_id()}); --adopt recomputes a sample and, if identical, keeps them as this "
            "code's; --fresh reruns every cell"
        )
    # runs stored before a derived metric existed get it from their own metrics
    return [r if "pms_per_100_gpus_served" in r.metrics else _with_served(r, scale) for r in runs]


def _with_served(run_: RunRecord, scale: Scale) -> RunRecord:
    served = pms_per_100_gpus_served(run_.metrics, scale.measure_h)
    return replace(run_, metrics={**run_.metrics, "pms_per_100_gpus_served": served})


def sweep_runs(doc: dict[str, Any]) -> list[RunRecord]:
    """The run records of a results document: its `runs` that name a cell."""
    return [RunRecord.from_json(r) for r in doc.get("runs", []) if isinstance(r, dict) and r.get("cell")]


def stored_failed(name: str, scale: Scale, out_dir: Path) -> list[dict[str, Any]]:
    """The cells whose run raised, as the results file records them."""
    doc = read_doc(results_path(name, scale, out_dir)) or {}
    return [f for f in doc.get("failed", []) if isinstance(f, dict) and f.get("cell")]


def summary(sweep: Sweep) -> list[dict[str, Any]]:
    """Every metric as mean ± 95% CI per (row, column), in the order the cells were built."""
    keys = list(dict.fromkeys((c.row, c.col) for c in sweep.cells))
    return [
        {"row": row, "col": col, "metrics": {m: sweep.metric(row, col, m).to_json() for m in DERIVED_NAMES}}
        for row, col in keys
    ]


def write_json(sweep: Sweep, extra: dict[str, Any], out_dir: Path) -> Path:
    """<out_dir>/<name>-<scale>.json: the scale, every run, the summary and `extra` (whose `MeanCi`
    records are written as their `to_json()`)."""
    merge_stored(sweep, out_dir)
    doc = {
        **_head(sweep),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "wall_s": round(sweep.wall_s, 1),
        "runs": [r.to_json() for r in sweep.runs],
        **({"failed": sweep.failed} if sweep.failed else {}),
        "summary": summary(sweep),
        **extra,
    }
    return write(results_path(sweep.name, sweep.scale, out_dir), doc)


def write_partial(sweep: Sweep, out_dir: Path) -> Path:
    """The results file of an unfinished sweep: its scale and the runs finished (or failed) so far."""
    merge_stored(sweep, out_dir)
    doc = {
        **_head(sweep),
        "partial": True,
        "wall_s": round(sweep.wall_s, 1),
        "runs": [r.to_json() for r in sweep.runs],
        **({"failed": sweep.failed} if sweep.failed else {}),
    }
    return write(results_path(sweep.name, sweep.scale, out_dir), doc)


def _head(sweep: Sweep) -> dict[str, Any]:
    return {"benchmark": sweep.name, "scale": asdict(sweep.scale), "scale_text": sweep.scale.describe()}


def merge_stored(sweep: Sweep, out_dir: Path) -> None:
    """Take into `sweep` the runs that another command stored in its results file since it read
    it, so that two commands sharing one file (say, two seeds in two shells) never drop each
    other's finished cells when they write; failures of cells that have since finished are dropped."""
    mine = {r.cell for r in sweep.runs}
    new = [r for r in stored_runs(sweep.name, sweep.scale, out_dir, any_code=True) if r.cell not in mine]
    if new:
        sweep.runs.extend(new)
        sweep.cells.extend(cells_of(new, sweep.scale))
        sweep.scale = covering(sweep.scale, new)
    done = {r.cell for r in sweep.runs}
    failed = {f["cell"]: f for f in [*stored_failed(sweep.name, sweep.scale, out_dir), *sweep.failed]}
    sweep.failed = [f for k, f in failed.items() if k not in done]


def write(path: Path, doc: dict[str, Any]) -> Path:
    """Write `doc` as JSON through a temporary file and a rename: never half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(json_value(doc), indent=1) + "\n")
    return path


def load_sweep(name: str, scale: Scale, out_dir: Path) -> Sweep:
    """The sweep stored in <out_dir>/<name>-<scale>.json (to redo its tables and figure without running)."""
    path = results_path(name, scale, out_dir)
    doc = read_doc(path)
    if doc is None:
        raise UserError(f"{path}: no stored results to redraw; run the sweep first")
    stored = {k: v for k, v in doc["scale"].items() if k != "revision"}
    stored["seeds"] = tuple(stored["seeds"])
    stored["fleet"] = fleet_from_dict(stored["fleet"]) if stored.get("fleet") else None
    scale = Scale(**stored)
    runs = [RunRecord.from_json(r) for r in doc["runs"]]
    cells = cells_of(runs, scale)
    return Sweep(
        name,
        scale,
        cells,
        runs=[derive(run_, cell.config) for run_, cell in zip(runs, cells, strict=True)],
        wall_s=float(doc.get("wall_s") or 0.0),
        failed=list(doc.get("failed", [])),
    )
