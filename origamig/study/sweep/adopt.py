"""Adopting stored runs of other code: recompute a sample with this code and, when every sampled
cell comes out identical, record the stored runs as this code's, so that a rerun skips them.

The sample is the cheapest stored cell of each policy (by its recorded wall time): every policy's
code path is exercised at the least cost. A difference in any metric, counter, request or call count
refuses the adoption and names it; the file is then left as it was."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from origamig.errors import UserError
from origamig.study.progress import Job, RunsProgress
from origamig.study.runner import FailedRun, run_all
from origamig.study.sweep.cells import Cell
from origamig.study.sweep.records import RunRecord, differences, record
from origamig.study.sweep.runs import cells_of
from origamig.study.sweep.scale import Scale
from origamig.study.sweep.store import (
    LAST_REVISION,
    check_setting,
    code_id,
    read_doc,
    results_path,
    sweep_runs,
    write,
)


def adoption_sample(stale: list[RunRecord]) -> list[RunRecord]:
    """The cheapest run of each policy among `stale` (in policy order of first appearance)."""
    cheapest: dict[str, RunRecord] = {}
    for r in stale:
        best = cheapest.get(r.policy)
        if best is None or float(r.wall_s or 0.0) < float(best.wall_s or 0.0):
            cheapest[r.policy] = r
    return list(cheapest.values())


def _sample_cells(path: Path, sample: list[RunRecord], scale: Scale, known: Sequence[Cell]) -> list[Cell]:
    """The cell of each sampled run: the command's own with its key (`known`), else rebuilt from the
    record; `UserError` when one does not rebuild to its key."""
    by_key = {c.key: c for c in known}
    rebuilt = cells_of(sample, scale)
    cells = [by_key.get(r.cell, cell) for r, cell in zip(sample, rebuilt, strict=True)]
    for r, cell in zip(sample, cells, strict=True):
        if cell.key != r.cell:
            raise UserError(f"--adopt: {path}: cell {r.cell!r} does not rebuild at this scale ({cell.key})")
    return cells


def adopt(
    name: str,
    scale: Scale,
    out_dir: Path,
    workers: int = 1,
    scheduler: str | None = None,
    show: bool = True,
    known: Sequence[Cell] = (),
) -> list[str]:
    """Adopt the runs of other code in <out_dir>/<name>-<scale>.json (module docstring); returns
    the keys of the cells recomputed. A sampled run is recomputed as the cell of `known` (the
    command's own cells, which may say where a trace is) with its key, else as rebuilt from its
    record. Raises `UserError` naming the first differences."""
    path = results_path(name, scale, out_dir)
    doc = read_doc(path)
    if doc is None:
        raise UserError(f"--adopt: {path}: no stored results to adopt")
    check_setting(path, doc, scale)
    code = code_id()
    stale = [r for r in sweep_runs(doc) if r.code != code]
    if not stale:
        print(f"{path}: every run was made by this code ({code}); nothing to adopt")
        return []
    sample = adoption_sample(stale)
    cells = _sample_cells(path, sample, scale, known)
    print(f"{path}: checking {len(sample)} of {len(stale)} runs made by other code: " +
          ", ".join(f"{c.row} {c.col} seed {c.seed}" for c in cells))  # fmt: skip
    jobs = [Job(f"{c.row} {c.col} seed {c.seed}", c.config.horizon_s) for c in cells]
    with RunsProgress(f"adopt {name}", jobs, show=show) as shown:
        results = run_all([c.spec() for c in cells], workers=workers, scheduler=scheduler,
                          progress=shown.live, done=shown.finished)  # fmt: skip
    problems: list[str] = []
    for r, cell, result in zip(sample, cells, results, strict=True):
        diffs = (
            [result.error] if isinstance(result, FailedRun) else differences(r, record(cell, result, code))
        )
        problems += [f"{cell.row} {cell.col} seed {cell.seed}: {d}" for d in diffs[:3]]
    if problems:
        raise UserError(
            [f"--adopt: {path}: this code computes differently; the stored runs are kept as they were, "
             "--fresh reruns every cell", *problems]
        )  # fmt: skip
    sources = sorted({str(r.code or f"revision {LAST_REVISION}") for r in stale})
    doc["runs"] = [_adopted(r, code) for r in doc["runs"]]
    doc.setdefault("adoptions", []).append(
        {"from": sources, "to": code, "checked": [r.cell for r in sample], "runs": len(stale),
         "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    )  # fmt: skip
    doc["scale"] = {k: v for k, v in doc["scale"].items() if k != "revision"}
    write(path, doc)
    print(f"{path}: {len(sample)} recomputed cells identical; {len(stale)} runs adopted as code {code}")
    return [r.cell for r in sample]


def _adopted(doc: Any, code: str) -> Any:
    """A stored run (JSON) as adopted by `code`: its record names the code it was made by (or the last
    hand-numbered revision) in `adopted_from`; entries that are no run of a cell stay as they are."""
    if not (isinstance(doc, dict) and doc.get("cell")):
        return doc
    run_ = RunRecord.from_json(doc)
    if run_.code == code:
        return doc
    adopted = RunRecord.from_json(
        doc | {"adopted_from": run_.code or f"revision {LAST_REVISION}", "code": code}
    )
    return adopted.to_json()
