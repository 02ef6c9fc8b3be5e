"""Shared machinery of the simulation sweeps (loads, variants, migration_penalty, ablation).

A sweep is a list of `Cell`s — (row, column, policy, configuration, seed) — run with the simulator's
`run_all` in parallel processes (`--workers`) or on a Dask cluster (`--scheduler`), with a live rich
progress bar. The rows are what a table compares (a policy, or a policy with options); the columns
are what the sweep varies (a load, a variant, or nothing). Every run is kept in the JSON results
together with the scale it ran at, means and 95% CIs per (row, column), and differences paired by seed.

`Scale` names the size of a sweep: `quick` (CI-sized: 32 PMs, 24 h + 24 h, few seeds), `full` (the
paper's: 128 PMs, 48 h + 72 h, 5 seeds) and `smoke` (a few simulated hours on 8 PMs, for the tests);
all three give OrigaMIG's solver a reproducible node budget instead of a wall-clock limit.
`--fleet FILE.toml` runs any sweep on a fleet file's data center and workload instead of the paper's
(its own PM count; results `<name>-<scale>-<fleet>`).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import os
import platform
import sys
import textwrap
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from origamig.errors import UserError
from origamig.policies.optimizer.policy import DEFAULT_ARRIVAL
from origamig.sim.engine import CHECKPOINT_EVERY_S, checkpoint_header
from origamig.sim.fleet import Fleet, fleet_from_dict
from origamig.sim.metrics import METRIC_NAMES
from origamig.sim.scenario import SimConfig, build_pms
from origamig.sim.workload import HOUR
from origamig.solver_registry import backend_names
from origamig.study.aggregate import mean_ci
from origamig.study.runner import FailedRun, RunSpec, run_all

# Bumped whenever a code change alters what a sweep computes, so that stored results of the earlier
# code are refused on a rerun instead of being mixed with new runs (a cell key fingerprints the
# configuration, not the code). 1: consolidation neighborhoods from worth-emptying sources only, HiGHS
# presolve probing on. 2: consolidation neighborhoods as Algorithm 1 reads (docs/policies.md#algorithm-1),
# presolve probing off. 3: OrigaMIG places arrivals by TC's rule unless told otherwise, and every
# OrigaMIG cell names its arrival rule (the revision-2 files were carried over by making their
# first-fit rule explicit: those runs compute the same under revision 3).
RESULTS_REVISION = 3
DERIVED_NAMES = (
    *METRIC_NAMES,
    "active_pms_pct",
    "active_gpus_pct",
    "migrations_per_admitted_vm",
    "pms_per_100_gpus_served",
)
RESULTS = Path(__file__).resolve().parent / "results"
OURS_COLOR = "tab:blue"
POLICY_COLORS = {"ff": "tab:gray", "mfi": "tab:green", "tc": "tab:orange", "origamig": "tab:blue"}
POLICY_LABELS = {"ff": "FF", "mfi": "MFI", "tc": "TC", "origamig": "OrigaMIG"}


@dataclass(frozen=True)
class Scale:
    """How big a sweep is; `describe()` is printed and stored with the results."""

    name: str
    pms: int
    warmup_h: float
    measure_h: float
    seeds: tuple[int, ...]
    time_limit_s: float | None  # OrigaMIG's per-call wall-clock limit (None: no wall-clock effect)
    deterministic: bool  # True: calls take modeled time; with no time limit, only `work_limit` stops them
    work_limit: float | None = None
    threads: int | None = 1
    solver: str = "highs"  # OrigaMIG's BILP backend (`solver_registry`)
    fleet: Fleet | None = None  # a fleet file's data center and workload (`--fleet`); None: the paper's
    revision: int = RESULTS_REVISION  # the code revision the results were made with (stored files lack it: 1)

    def config(self, **changes: Any) -> SimConfig:
        """The base configuration of this scale, with `changes` (load, variant, policy_options...)."""
        base = SimConfig(
            pms=self.pms,
            warmup_s=self.warmup_h * HOUR,
            measure_s=self.measure_h * HOUR,
            deterministic=self.deterministic,
            solver=self.solver,
            fleet=self.fleet,
        )
        return base.replace(**changes)

    def origamig_options(self, **overrides: Any) -> tuple[tuple[str, Any], ...]:
        """OrigaMIG's solver options at this scale (`overrides` win), as `SimConfig.policy_options`."""
        # The arrival rule is always named, so a cell's key says which rule it ran with.
        opts: dict[str, Any] = {
            "arrival": DEFAULT_ARRIVAL,
            "time_limit_s": self.time_limit_s,
            "threads": self.threads,
        }
        if self.work_limit is not None:
            opts["work_limit"] = self.work_limit
        opts.update(overrides)
        return tuple(sorted(opts.items()))

    def describe(self) -> str:
        budget = (
            f"deterministic, at most {self.work_limit:g} B&B nodes per call, no wall-clock limit"
            if self.deterministic and self.work_limit is not None and self.time_limit_s is None
            else f"{self.time_limit_s} s per call" + (", deterministic" if self.deterministic else "")
        )
        fleet = f" of fleet {self.fleet.name}" if self.fleet is not None else ""
        return (
            f"{self.name} scale: {self.pms} PMs{fleet}, "
            f"{self.warmup_h:g} h warm-up + {self.measure_h:g} h measured, "
            f"seeds {','.join(map(str, self.seeds))}; OrigaMIG calls: {self.solver}, {budget}, "
            f"{self.threads or 'all'} thread(s)"
        )


# Quick runs are reproducible: no wall-clock limit (a wall-clock guard on a loaded 2-core machine
# interrupted half of the calls in a first trial), a node budget that almost never binds instead.
QUICK = Scale("quick", pms=32, warmup_h=24, measure_h=24, seeds=(1, 2), time_limit_s=None,
              deterministic=True, work_limit=100)  # fmt: skip
# Full runs are the paper's size with the same reproducible call budget as quick runs: the results do
# not depend on the machine's load, so a sweep can run for days in the background, resume, and be
# recomputed exactly; call times are modeled from the work spent (docs/model.md#solvers).
FULL = Scale("full", pms=128, warmup_h=48, measure_h=72, seeds=(1, 2, 3, 4, 5), time_limit_s=None,
             deterministic=True, work_limit=100)  # fmt: skip
SMOKE = Scale("smoke", pms=8, warmup_h=2, measure_h=2, seeds=(1,), time_limit_s=None,
              deterministic=True, work_limit=20)  # fmt: skip


@dataclass(frozen=True)
class Cell:
    """One run of a sweep: the row it belongs to, its column (load/variant/""), and what to run."""

    row: str
    col: str
    policy: str
    config: SimConfig
    seed: int

    def spec(self) -> RunSpec:
        return RunSpec(self.config, self.policy, self.seed)

    @property
    def key(self) -> str:
        return cell_key(self.row, self.col, self.policy, self.seed, self.config)


@dataclass
class Sweep:
    """The runs of a sweep, by (row, column, seed), with their wall times."""

    name: str
    scale: Scale
    cells: list[Cell]
    runs: list[dict[str, Any]] = field(default_factory=list)
    wall_s: float = 0.0
    failed: list[dict[str, Any]] = field(default_factory=list)  # cells whose run raised (a rerun retries)

    def metric(self, row: str, col: str, name: str) -> dict[str, Any]:
        """Mean, 95% CI half-width, n and values of `name` over the seeds of (row, col)."""
        return mean_ci(r["metrics"].get(name) for r in self.runs if r["row"] == row and r["col"] == col)

    def by_seed(self, row: str, col: str, name: str) -> dict[int, float]:
        return {
            r["seed"]: r["metrics"][name]
            for r in self.runs
            if r["row"] == row and r["col"] == col and r["metrics"].get(name) is not None
        }

    def paired(self, row: str, base: str, col: str, name: str) -> list[tuple[int, float, float]]:
        """(seed, value of row, value of base) over the seeds both ran."""
        a, b = self.by_seed(row, col, name), self.by_seed(base, col, name)
        return [(s, a[s], b[s]) for s in sorted(set(a) & set(b))]

    def reduction_pct(self, row: str, base: str, col: str, name: str = "active_pms") -> dict[str, Any]:
        """100·(base − row)/base paired by seed: how much lower `row` keeps `name` (mean ± CI)."""
        return mean_ci(100.0 * (b - a) / b for _, a, b in self.paired(row, base, col, name) if b)

    def gain(self, row: str, base: str, col: str, name: str, scale: float = 1.0) -> dict[str, Any]:
        """scale·(row − base) paired by seed (e.g. acceptance gain in percentage points)."""
        return mean_ci(scale * (a - b) for _, a, b in self.paired(row, base, col, name))


# --- running ---------------------------------------------------------------------------------------
def cell_key(row: str, col: str, policy: str, seed: int, config: SimConfig) -> str:
    """What identifies a finished run in a results file: row, column, policy, seed and a fingerprint
    of the whole configuration (scale, load, variant, options), so a changed setting never reuses it."""
    fields = json.dumps(
        _clean(_without_unset_hardware(dataclasses.asdict(config))), sort_keys=True, default=str
    )
    digest = hashlib.sha1(fields.encode()).hexdigest()[:12]
    return f"{row}|{col}|{policy}|{seed}|{digest}"


def _without_unset_hardware(fields: dict[str, Any]) -> dict[str, Any]:
    """`fields` without an unset `fleet` / `snapshot`: a run on the paper's data center keeps the
    fingerprint it had before fleets existed, so stored sweeps resume."""
    return {k: v for k, v in fields.items() if not (k in ("fleet", "snapshot") and v is None)}


def results_path(name: str, scale: Scale, out_dir: Path = RESULTS) -> Path:
    return out_dir / f"{name}-{scale.name}.json"


def stored_runs(name: str, scale: Scale, out_dir: Path = RESULTS) -> list[dict[str, Any]]:
    """The runs already in <out_dir>/<name>-<scale>.json (finished cells of earlier invocations).

    A file written at another setting of the same scale name (PMs, hours, solver budget) is refused
    rather than mixed: its runs would not be comparable."""
    path = results_path(name, scale, out_dir)
    if not path.exists():
        return []
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: cannot read stored results ({exc}); move it away to start afresh") from None
    stored = {k: v for k, v in _without_unset_hardware(doc.get("scale") or {}).items() if k != "seeds"}
    wanted = {k: v for k, v in _without_unset_hardware(_clean(asdict(scale))).items() if k != "seeds"}
    if stored.get("revision", 1) != scale.revision:
        raise UserError(
            f"{path}: holds runs of results revision {stored.get('revision', 1)}, made by earlier code that "
            f"computes differently (this is revision {scale.revision}); move it away or use --fresh"
        )
    if stored != wanted:
        diff = ", ".join(
            f"{k}: {stored.get(k)!r} there, {wanted[k]!r} now" for k in wanted if stored.get(k) != wanted[k]
        )
        raise UserError(f"{path}: holds runs at another setting ({diff}); move it away or use --out")
    runs = [r for r in doc.get("runs", []) if r.get("cell")]
    for r in runs:  # runs stored before a derived metric existed get it from their own metrics
        served = pms_per_100_gpus_served(r["metrics"], scale.measure_h)
        r["metrics"].setdefault("pms_per_100_gpus_served", served)
    return runs


def run(
    name: str,
    scale: Scale,
    cells: Sequence[Cell],
    workers: int = 2,
    scheduler: str | None = None,
    show_progress: bool = True,
    out_dir: Path | None = None,
) -> Sweep:
    """Run every cell not yet finished (longest-looking first, so that the pool drains evenly).

    With `out_dir`, the runs already stored in its results file are kept and their cells skipped,
    and the file is rewritten after every finished cell (atomically); a running cell saves itself
    every `CHECKPOINT_EVERY_S` (`checkpoint_path`), so an interrupted sweep loses at most that much of
    each running cell and a rerun of the same command resumes it. The sweep holds
    every stored run of this scale, not only this command's cells."""
    stored = stored_runs(name, scale, out_dir) if out_dir is not None else []
    done_keys = {r["cell"] for r in stored}
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
    sweep = Sweep(name, scale, [*_cells_of(stored, scale), *(c for c in cells if c.key not in done_keys)])
    sweep.runs = list(stored)
    stored_wall_s = sum(float(r.get("wall_s") or 0.0) for r in stored)
    sweep.wall_s = stored_wall_s
    t0 = time.perf_counter()
    if len(todo) < len(cells):
        print(f"{name}: {len(cells) - len(todo)} of {len(cells)} cells already in the results file, skipped")
    with _progress(show_progress and bool(todo)) as bar:
        task = bar.add_task(f"{name} ({scale.name})", total=len(specs)) if bar else None

        def done(i: int, result: Any) -> None:
            cell = todo[order[i]]
            if isinstance(result, FailedRun):
                sweep.failed.append({"cell": cell.key, "error": result.error})
                line = f"{name}: {cell.row} {cell.col} seed {cell.seed} failed: {result.error}"
                if bar is not None:
                    bar.console.print(line, markup=False, highlight=False, soft_wrap=True)
                else:
                    print(line)
            else:
                sweep.runs.append(_record(cell, result))
            sweep.wall_s = stored_wall_s + (time.perf_counter() - t0)  # kept current for partial files
            if out_dir is not None:
                write_partial(sweep, out_dir)
            if bar is not None:
                bar.update(task, advance=1, description=f"{name}: {cell.row} {cell.col} seed {cell.seed}")

        run_all(specs, workers=workers, scheduler=scheduler, done=done)
    if sweep.failed:
        print(f"{name}: {len(sweep.failed)} cells failed (stored as failed); rerun the command to retry them")
    sweep.wall_s = stored_wall_s + (time.perf_counter() - t0)
    position = {c.key: n for n, c in enumerate(sweep.cells)}
    sweep.runs.sort(key=lambda r: position.get(r["cell"], len(position)))
    return sweep


def covering(scale: Scale, runs: Sequence[dict[str, Any]]) -> Scale:
    """`scale` naming every seed of `runs` too: a sweep holds every stored run, so its scale names
    every seed they cover (titles, JSON)."""
    return replace(scale, seeds=tuple(sorted(set(scale.seeds) | {int(r["seed"]) for r in runs})))


def _cells_of(runs: Sequence[dict[str, Any]], scale: Scale) -> list[Cell]:
    """The cells of stored runs, rebuilt from their records."""
    return [
        Cell(
            r["row"],
            r["col"],
            r["policy"],
            scale.config(
                load=r["load"],
                variant=r["variant"],
                policy_options=tuple(sorted(r["policy_options"].items())),
            ),
            r["seed"],
        )
        for r in runs
    ]


def checkpoint_path(name: str, scale: Scale, cell: Cell, out_dir: Path) -> Path:
    """Where a running cell of this sweep saves itself (git-ignored), by results revision and cell key."""
    digest = hashlib.sha256(cell.key.encode()).hexdigest()[:16]
    return out_dir / ".checkpoints" / f"{name}-{scale.name}-r{scale.revision}-{digest}.ckpt"


def list_cells(name: str, scale: Scale, cells: Sequence[Cell], out_dir: Path = RESULTS) -> None:
    """Print every cell of the command, finished or left, and the stored cells of other commands."""
    stored = {r["cell"]: r for r in stored_runs(name, scale, out_dir)}
    wanted = {c.key for c in cells}
    left = 0
    for c in cells:
        run_ = stored.get(c.key)
        state = f"done ({run_['wall_s']:.0f} s)" if run_ else "left"
        saved = None if run_ else checkpoint_header(checkpoint_path(name, scale, c, out_dir))
        if saved is not None:
            state += (f" (checkpoint at {saved['t'] / HOUR:.1f} h of {saved['end'] / HOUR:.0f} h simulated, "
                      f"{saved['wall_s']:.0f} s spent; a rerun resumes it)")  # fmt: skip
        left += run_ is None
        print(f"{c.row:<28} {c.col:<10} seed {c.seed:<3} {state}")
    others = [k for k in stored if k not in wanted]
    print(f"{len(cells) - left} of {len(cells)} cells done, {left} left; "
          f"{len(others)} other cells stored in {results_path(name, scale, out_dir)}")  # fmt: skip


def load_sweep(name: str, scale: Scale, out_dir: Path = RESULTS) -> Sweep:
    """The sweep stored in <out_dir>/<name>-<scale>.json (to redo its tables and figure without running)."""
    path = results_path(name, scale, out_dir)
    doc = json.loads(path.read_text())
    stored = dict(doc["scale"], seeds=tuple(doc["scale"]["seeds"]))
    stored.setdefault("revision", 1)
    stored["fleet"] = fleet_from_dict(stored["fleet"]) if stored.get("fleet") else None
    scale = Scale(**stored)
    cells = _cells_of(doc["runs"], scale)
    for run_, cell in zip(doc["runs"], cells, strict=True):
        derive(run_, cell.config)
    return Sweep(name, scale, cells, runs=list(doc["runs"]), wall_s=float(doc.get("wall_s") or 0.0))


def run_or_load(name: str, scale: Scale, cells: Sequence[Cell], args: argparse.Namespace) -> Sweep:
    """`run` the cells not yet in the results file (`--fresh`: all of them, starting a new file), or
    with `--replot` read the stored results of this scale instead; `--cells` lists the cells and exits."""
    if getattr(args, "cells", False):
        list_cells(name, scale, cells, args.out)
        raise SystemExit(0)
    if getattr(args, "replot", False):
        return load_sweep(name, scale, args.out)
    if getattr(args, "fresh", False):
        results_path(name, scale, args.out).unlink(missing_ok=True)
        for cell in cells:
            checkpoint_path(name, scale, cell, args.out).unlink(missing_ok=True)
    return run(name, scale, cells, args.workers, args.scheduler, not args.no_progress, args.out)


class _NoBar:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _progress(show: bool) -> Any:
    if not show:
        return _NoBar()
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=False,
    )


def _record(cell: Cell, result: Any) -> dict[str, Any]:
    record = {
        "cell": cell.key,
        "row": cell.row,
        "col": cell.col,
        "policy": cell.policy,
        "seed": cell.seed,
        "load": cell.config.load,
        "variant": cell.config.variant,
        "policy_options": dict(cell.config.policy_options),
        "metrics": dict(result.metrics),
        "counters": dict(result.counters),
        "requests": result.requests,
        "calls": result.calls,
        "wall_s": result.wall_s,
    }
    derive(record, cell.config)
    return record


def derive(record: dict[str, Any], config: SimConfig) -> None:
    """Add the derived metrics to a run record: shares comparable across data-center sizes (Table 8
    gives active GPUs in %) and migrations per admitted VM (Table 10). The admitted VMs of the measured
    window are estimated as requests × measured/total time × acceptance (arrivals are Poisson, uniform
    in time; acceptance is a share of memory slices, close to the share of VMs)."""
    metrics = record["metrics"]
    pms = build_pms(config)
    gpus = sum(len(pm.gpus) for pm in pms)
    metrics["active_pms_pct"] = 100.0 * metrics["active_pms"] / len(pms) if pms else None
    metrics["active_gpus_pct"] = 100.0 * metrics["active_gpus"] / gpus if gpus else None
    admitted = record["requests"] * config.measure_s / config.horizon_s * (metrics["acceptance"] or 0.0)
    hours = config.measure_s / HOUR
    metrics["migrations_per_admitted_vm"] = (
        metrics["migrations_per_hour"] * hours / admitted if admitted else None
    )
    metrics["pms_per_100_gpus_served"] = pms_per_100_gpus_served(metrics, hours)


def pms_per_100_gpus_served(metrics: dict[str, Any], hours: float) -> float | None:
    """Active PMs per 100 GPUs' worth of admitted work (a GI counts as its share of compute slices):
    active PMs normalized by the work a policy carries, comparable between policies that admit
    different amounts (2-GPU PMs packed full would read 50). The admitted GPU-hours are the energy
    over the energy per admitted GPU-hour."""
    kwh_per_gpu_h, mwh = metrics.get("energy_kwh_per_gpu_hour"), metrics.get("energy_mwh")
    if not kwh_per_gpu_h or not mwh or not hours or metrics.get("active_pms") is None:
        return None
    served_gpus = 1000.0 * mwh / kwh_per_gpu_h / hours
    return 100.0 * metrics["active_pms"] / served_gpus


@dataclass(frozen=True)
class Shown:
    """A metric as a table shows it: key in the run's metrics, label with unit, factor, digits, and how
    the paper's value scales to ours ("pms": with the PM count, "energy": PMs and measured hours)."""

    key: str
    label: str
    factor: float = 1.0
    digits: int = 1
    paper_key: str | None = None
    extensive: str | None = None


SHOWN = (
    Shown("acceptance", "Accept. (%)", 100, 1, "acceptance_pct"),
    Shown("active_pms", "Active PMs", 1, 1, "active_pms", "pms"),
    Shown("active_pms_pct", "Active PMs (% of PMs)", 1, 1),
    Shown("pms_per_100_gpus_served", "Active PMs per 100 GPUs served", 1, 2),
    Shown("active_gpus_pct", "Active GPUs (%)", 1, 1, "active_gpus_pct"),
    Shown("packing_density", "Packing (%)", 100, 1, "packing_pct"),
    Shown("energy_mwh", "Energy (MWh)", 1, 3, "energy_mwh", "energy"),
    Shown("energy_kwh_per_gpu_hour", "Energy per GPU-h (kWh)", 1, 3),
    Shown("switch_ons_per_hour", "Switch-ons/h", 1, 1, "switch_ons_per_hour", "pms"),
    Shown("migrations_per_hour", "Migr./h", 1, 1, "migrations_per_hour", "pms"),
    Shown("migrated_gb_per_hour", "Migrated GB/h", 1, 0, "migrated_gb_per_hour", "pms"),
    Shown("mean_wait_s", "Wait (s)", 1, 1, "mean_wait_s"),
    Shown("calls_per_hour", "Calls/h", 1, 1, "calls_per_hour", "pms"),
    Shown("median_call_s", "Median call (s)", 1, 2, "median_call_s"),
)
SHOWN_BY_KEY = {s.key: s for s in SHOWN}


def paper_at_scale(value: float | None, shown: Shown, scale: Scale) -> float | None:
    """The paper's value (128 PMs, 72 h measured) as it would read at `scale` (extensive metrics only)."""
    if value is None:
        return None
    if shown.extensive == "pms":
        return value * scale.pms / 128
    if shown.extensive == "energy":
        return value * scale.pms / 128 * scale.measure_h / 72
    return value


# --- results ---------------------------------------------------------------------------------------
def summary(sweep: Sweep) -> list[dict[str, Any]]:
    """Every metric as mean ± 95% CI per (row, column), in the order the cells were built."""
    keys = list(dict.fromkeys((c.row, c.col) for c in sweep.cells))
    return [
        {"row": row, "col": col, "metrics": {m: sweep.metric(row, col, m) for m in DERIVED_NAMES}}
        for row, col in keys
    ]


def write_json(sweep: Sweep, extra: dict[str, Any], out_dir: Path = RESULTS) -> Path:
    """benchmarks/results/<name>-<scale>.json: the scale, every run, the summary and `extra`."""
    adopt_stored(sweep, out_dir)
    doc = {
        "benchmark": sweep.name,
        "scale": asdict(sweep.scale),
        "scale_text": sweep.scale.describe(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "wall_s": round(sweep.wall_s, 1),
        "runs": sweep.runs,
        **({"failed": sweep.failed} if sweep.failed else {}),
        "summary": summary(sweep),
        **extra,
    }
    return _write(results_path(sweep.name, sweep.scale, out_dir), doc)


def write_partial(sweep: Sweep, out_dir: Path = RESULTS) -> Path:
    """The results file of an unfinished sweep: its scale and the runs finished so far."""
    adopt_stored(sweep, out_dir)
    doc = {
        "benchmark": sweep.name,
        "scale": asdict(sweep.scale),
        "scale_text": sweep.scale.describe(),
        "partial": True,
        "wall_s": round(sweep.wall_s, 1),
        "runs": sweep.runs,
        **({"failed": sweep.failed} if sweep.failed else {}),
    }
    return _write(results_path(sweep.name, sweep.scale, out_dir), doc)


def adopt_stored(sweep: Sweep, out_dir: Path) -> None:
    """Take into `sweep` the runs that another command stored in its results file since it read
    it, so that two commands sharing one file (say, two seeds in two shells) never drop each
    other's finished cells when they write."""
    mine = {r["cell"] for r in sweep.runs}
    new = [r for r in stored_runs(sweep.name, sweep.scale, out_dir) if r["cell"] not in mine]
    if new:
        sweep.runs.extend(new)
        sweep.cells.extend(_cells_of(new, sweep.scale))
        sweep.scale = covering(sweep.scale, new)


def _write(path: Path, doc: dict[str, Any]) -> Path:
    """Write `doc` as JSON through a temporary file (one per process) and a rename: never half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(_clean(doc), indent=1) + "\n")
    os.replace(tmp, path)
    return path


def _clean(x: Any) -> Any:
    """JSON-safe: NaN/inf become null, tuples lists."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def fmt(stats: dict[str, Any], scale: float = 1.0, digits: int = 1) -> str:
    """'mean ± ci' of a `mean_ci` result times `scale` ('–' when empty)."""
    if stats.get("mean") is None:
        return "–"
    mean = stats["mean"] * scale
    if stats.get("n", 0) > 1 and stats.get("ci95") is not None:
        return f"{mean:.{digits}f} ± {abs(stats['ci95'] * scale):.{digits}f}"
    return f"{mean:.{digits}f}"


def ref(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def print_table(title: str, header: Sequence[str], rows: Iterable[Sequence[str]], caption: str = "") -> None:
    """A rich table (first column left-aligned, the others right-aligned)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, caption=caption, show_lines=False)
    for n, h in enumerate(header):
        table.add_column(h, justify="left" if n == 0 else "right", no_wrap=n == 0)
    for row in rows:
        table.add_row(*row)
    Console(width=max(120, 14 * len(header))).print(table)


# --- figures ---------------------------------------------------------------------------------------
def figure(nrows: int, ncols: int, width: float, height: float, title: str) -> tuple[Any, Any]:
    """A matplotlib figure (Agg backend) with a suptitle naming the scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), squeeze=False)
    lines = textwrap.wrap(f"{title} ({ERRBAR_NOTE})", width=int(width * 11))
    fig.suptitle("\n".join(lines), fontsize=11)
    return fig, axes


ERRBAR_NOTE = "bars: 95% CI over seeds when n ≥ 3, else min–max over seeds"


def errbar(stats: dict[str, Any], factor: float = 1.0) -> tuple[float, float]:
    """(below, above) the mean for an error bar: the 95% CI when n ≥ 3, else the range of the values
    (a t-interval over two seeds is ±12.7 standard errors and would flatten every plot)."""
    if stats.get("mean") is None:
        return (0.0, 0.0)
    mean = stats["mean"] * factor
    if stats.get("n", 0) >= 3 and stats.get("ci95") is not None:
        half = abs(stats["ci95"] * factor)
        return (half, half)
    values = [v * factor for v in stats.get("values", [])] or [mean]
    return (max(0.0, mean - min(values)), max(0.0, max(values) - mean))


def errbars(stats: Sequence[dict[str, Any]], factor: float = 1.0) -> list[list[float]]:
    """`yerr`/`xerr` for matplotlib: [[below...], [above...]] of the non-empty `stats`."""
    pairs = [errbar(s, factor) for s in stats if s.get("mean") is not None]
    return [[p[0] for p in pairs], [p[1] for p in pairs]]


def save_figure(fig: Any, sweep: Sweep, out_dir: Path = RESULTS, bottom: float = 0.0) -> Path:
    """Write <out_dir>/<name>-<scale>.png; `bottom` leaves room for a figure-wide legend."""
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{sweep.name}-{sweep.scale.name}.png"
    lines = fig.get_suptitle().count("\n") + 1
    top = 1.0 - 0.2 * (lines + 0.5) / fig.get_figheight()  # room for the title (inches → fraction)
    fig.tight_layout(rect=(0, bottom, 1, top))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# --- command line ----------------------------------------------------------------------------------
def parser(description: str, quick: Scale = QUICK, full: Scale = FULL) -> argparse.ArgumentParser:
    """The options every sweep script shares; `quick`/`full` are the script's own scales (for --help)."""
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="CI-sized run (default): " + quick.describe())
    size.add_argument(
        "--full", action="store_true", help="the paper's scale (for a cluster): " + FULL.describe()
    )
    p.add_argument("--workers", type=int, default=2, help="parallel processes (default 2)")
    p.add_argument("--scheduler", default=None, help="run on a Dask cluster: tcp://HOST:PORT")
    p.add_argument("--seeds", default=None, help="seeds: N (1..N), A..B or 1,2,3 (default: the scale's)")
    p.add_argument(
        "--solver", choices=backend_names(), default=None, help="OrigaMIG's solver (default highs)"
    )
    p.add_argument(
        "--fleet", type=Path, default=None, help="simulate this fleet file (examples/fleets/) at its own size"
    )
    p.add_argument("--no-progress", action="store_true", help="no live progress bar")
    p.add_argument("--replot", action="store_true", help="redo table/figure from the stored JSON, no runs")
    p.add_argument(
        "--cells", action="store_true", help="list the cells of this command, done or left, and exit"
    )
    p.add_argument(
        "--fresh", action="store_true", help="discard the stored results of this scale and run every cell"
    )
    p.add_argument("--out", type=Path, default=RESULTS, help=f"results folder (default {RESULTS})")
    return p


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


def parse_seeds(text: str) -> tuple[int, ...]:
    """`--seeds`: `N` (seeds 1..N), `A..B`, or a comma-separated list such as `6,7,8`."""
    seeds: list[int] = []
    try:
        if text.strip().isdigit():
            seeds = list(range(1, int(text) + 1))
        else:
            for part in text.split(","):
                lo, sep, hi = part.strip().partition("..")
                seeds.extend(range(int(lo), int(hi) + 1) if sep else [int(lo)])
    except ValueError:
        raise UserError(f"--seeds: {text!r} is not N, A..B or a list such as 1,2,3") from None
    if not seeds or min(seeds) < 1:
        raise UserError(f"--seeds: {text!r} must name seeds of at least 1")
    return tuple(dict.fromkeys(seeds))


def gpus_of(scale: Scale, variant: str = "default") -> int:
    """The number of GPUs of the scale's data center (for 'active GPUs (%)')."""
    return sum(len(pm.gpus) for pm in build_pms(scale.config(variant=variant)))


def main_wrapper(fn: Callable[[argparse.Namespace], None], args: argparse.Namespace) -> None:
    """Turn a `UserError` into `error: ...` lines and exit code 2, as the CLI does."""
    from origamig.errors import UserError

    try:
        fn(args)
    except UserError as exc:
        for line in str(exc).splitlines():
            print(f"error: {line}", file=sys.stderr)
        raise SystemExit(2) from None
