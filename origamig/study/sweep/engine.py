"""Running a sweep: the cells not yet in its results file, each stored the moment it ends.

A sweep is a list of `Cell`s run with the runner's `run_all` in parallel processes (`workers`) or
on a Dask cluster (`scheduler`). With a results folder, the runs this code already stored are kept
and their cells skipped, the file is rewritten after every finished cell (atomically), and a running
cell saves itself every `CHECKPOINT_EVERY_S` wall seconds, so an interrupted sweep loses at most
that much of each running cell and a rerun of the same command resumes it. A cell whose run raised
is stored and reported as failed (a rerun tries it again); the others go on."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from origamig.sim.engine import CHECKPOINT_EVERY_S, checkpoint_header
from origamig.sim.workload import HOUR
from origamig.study.progress import Job, RunsProgress, failure_of
from origamig.study.runner import run_all
from origamig.study.sweep.cells import Cell
from origamig.study.sweep.records import record
from origamig.study.sweep.runs import Sweep, cells_of, covering
from origamig.study.sweep.scale import Scale
from origamig.study.sweep.store import (
    checkpoint_path,
    code_id,
    results_path,
    stored_failed,
    stored_runs,
    write_partial,
)


def run(
    name: str,
    scale: Scale,
    cells: Sequence[Cell],
    workers: int = 2,
    scheduler: str | None = None,
    show_progress: bool = True,
    out_dir: Path | None = None,
) -> Sweep:
    """Run every cell not yet finished (longest-looking first, so that the pool drains evenly); with
    `out_dir`, keep and store the results there (module docstring). The sweep holds every stored run
    of this scale, not only this command's cells."""
    stored = stored_runs(name, scale, out_dir) if out_dir is not None else []
    done_keys = {r.cell for r in stored}
    todo = [c for c in cells if c.key not in done_keys]
    scale = covering(scale, stored)
    order = sorted(range(len(todo)), key=lambda i: todo[i].policy != "origamig")
    specs = [todo[i].spec() for i in order]
    if out_dir is not None:  # a long cell saves itself; a rerun resumes it where it stopped
        specs = [
            replace(spec, checkpoint=str(checkpoint_path(name, scale, todo[i], out_dir)),
                    checkpoint_every_s=CHECKPOINT_EVERY_S)
            for spec, i in zip(specs, order, strict=True)
        ]  # fmt: skip
    sweep = Sweep(name, scale, [*cells_of(stored, scale), *(c for c in cells if c.key not in done_keys)])
    sweep.runs = list(stored)
    stored_wall_s = sum(float(r.wall_s or 0.0) for r in stored)
    sweep.wall_s = stored_wall_s
    t0 = time.perf_counter()
    if len(todo) < len(cells):
        print(f"{name}: {len(cells) - len(todo)} of {len(cells)} cells already in the results file, skipped")
    code = code_id()
    jobs = [Job(_label(todo[i]), todo[i].config.horizon_s) for i in order]
    with RunsProgress(f"{name} ({scale.name})", jobs, show=show_progress and bool(todo)) as shown:

        def done(i: int, result: Any) -> None:
            cell = todo[order[i]]
            error = failure_of(result)
            if error is None:
                sweep.runs.append(record(cell, result, code))
            else:
                sweep.failed.append({**_identity(cell), "error": error, "code": code})
            sweep.wall_s = stored_wall_s + (time.perf_counter() - t0)  # kept current for partial files
            if out_dir is not None:
                write_partial(sweep, out_dir)
            shown.finished(i, result)

        run_all(specs, workers=workers, scheduler=scheduler, progress=shown.live, done=done)
    sweep.wall_s = stored_wall_s + (time.perf_counter() - t0)
    position = {c.key: n for n, c in enumerate(sweep.cells)}
    sweep.runs.sort(key=lambda r: position.get(r.cell, len(position)))
    if sweep.failed:
        print(f"{name}: {len(sweep.failed)} cells failed (a rerun tries them again):")
        for f in sweep.failed:
            print(f"  {f['row']} {f['col']} seed {f['seed']}: {f['error']}")
    return sweep


def _label(cell: Cell) -> str:
    return " ".join(x for x in (cell.row, cell.col, f"seed {cell.seed}") if x)


def _identity(cell: Cell) -> dict[str, Any]:
    return {"cell": cell.key, "row": cell.row, "col": cell.col, "policy": cell.policy, "seed": cell.seed}


def list_cells(name: str, scale: Scale, cells: Sequence[Cell], out_dir: Path) -> None:
    """Print every cell of the command — done, failed or left — and how many other cells are stored.
    Runs of other code are listed as such (`--adopt` or a rerun takes care of them)."""
    stored = {r.cell: r for r in stored_runs(name, scale, out_dir, any_code=True)}
    failed = {f["cell"]: f for f in stored_failed(name, scale, out_dir)}
    code = code_id()
    wanted = {c.key for c in cells}
    left = 0
    for c in cells:
        run_ = stored.get(c.key)
        if run_ is not None:
            cpu = f", {run_.cpu_s:.0f} s CPU" if run_.cpu_s is not None else ""
            state = f"done ({run_.wall_s:.0f} s wall{cpu})"
            if run_.code != code:
                state += f" by other code ({run_.code or 'revision 3'}): --adopt checks it"
        else:
            left += 1
            state = f"failed: {failed[c.key]['error']}" if c.key in failed else "left"
            saved = checkpoint_header(checkpoint_path(name, scale, c, out_dir))
            if saved is not None:
                at, end = saved["t"] / HOUR, saved["end"] / HOUR
                state += (f" (checkpoint at {at:.1f} h of {end:.0f} h simulated, "
                          f"{saved['wall_s']:.0f} s spent; a rerun by the same code resumes it)")  # fmt: skip
        print(f"{c.row:<28} {c.col:<10} seed {c.seed:<3} {state}")
    others = [k for k in stored if k not in wanted]
    print(f"{len(cells) - left} of {len(cells)} cells done, {left} left; "
          f"{len(others)} other cells stored in {results_path(name, scale, out_dir)}")  # fmt: skip
