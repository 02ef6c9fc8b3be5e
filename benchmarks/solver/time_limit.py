"""How far past its wall-clock limit a solve returns, on a loaded machine: the overrun distribution.

Instance: the stress cluster of `stress_instances.py` — 40 PMs × 8 H100-80GB, 381 running VMs, 6
pending, every PM in the neighborhood (about 170k columns, 436k nonzeros), the shape on which a 10 s
limit once ran for minutes (`--pms 16` for a smaller one). Each solve runs with `busy` CPU-bound
busy-loop processes beside it (default 2: both cores of a 2-core machine taken). Measured: the wall
time of `Backend.solve` minus the limit (`overrun`), how the limit was enforced (`guard`: the helper
process killed at the deadline, the in-process guard's cancel, or the solver itself), and the
objective reached against the start's.

Modes:
  guarded   the default: the solve runs in a helper process ended at the deadline (deadline.py);
            each solver's helper is started before the runs (a one-time cost per process)
  old       the solve as it ran before: in the calling process, presolve always on, only the
            cancelling guard (HiGHS only; each run in its own process, given up after --old-timeout)
  cli       the whole `origamig solve SNAPSHOT --neighborhood all --time-limit L` command (build,
            compile, solve, plan), wall time of the process

    python -m benchmarks.solver.time_limit --quick   # limits 1 and 10 s, 3 repeats, 2 busy loops (~3 min)
    python -m benchmarks.solver.time_limit --full    # limits 1, 5, 10, 30 s, 10 repeats, idle and loaded
Prints a table and writes benchmarks/results/time_limit.json (and .png).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks import RESULTS, ROOT
from benchmarks.publish import publish, quantile
from benchmarks.solver.solver_replay import snapshot_model
from benchmarks.stress_instances import h100_cluster
from origamig.bilp.backends.base import Limits, get_backend


@contextmanager
def busy_loops(n: int) -> Iterator[None]:
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        time.sleep(0.2 if n else 0.0)
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def guarded_run(compiled: Any, solver: str, limit: float, busy: int) -> dict[str, Any]:
    backend = get_backend(solver)
    with busy_loops(busy):
        t0 = time.perf_counter()
        res = backend.solve(compiled, compiled.hint, Limits(time_limit_s=limit))
        wall = time.perf_counter() - t0
    start = compiled.objective_of(compiled.hint)
    return {
        "wall_s": wall,
        "guard": res.guard or "solver",
        "termination": res.termination,
        "objective": res.objective,
        "start_objective": start,
    }


def old_run(snapshot: Path, solver: str, limit: float, busy: int, timeout: float) -> dict[str, Any]:
    """The pre-guard behaviour, in a separate process (it may not stop for minutes)."""
    me = [sys.executable, "-m", "benchmarks.solver.time_limit"]  # from the root: this checkout's benchmarks
    cmd = [*me, "--old-run", str(snapshot), solver, str(limit)]
    with busy_loops(busy):
        try:
            ran = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True, cwd=ROOT)
            out = ran.stdout
        except subprocess.TimeoutExpired:
            return {"wall_s": None, "guard": f"gave up after {timeout:g} s", "termination": None}
    return json.loads(out.strip().splitlines()[-1])


def _old_run_here(snapshot: Path, solver: str, limit: float) -> None:
    from origamig.bilp.backends import cpsat, highs

    highs.PRESOLVE_S_PER_NONZERO = cpsat.PRESOLVE_S_PER_NONZERO = 0.0
    compiled = snapshot_model(json.loads(snapshot.read_text()))
    backend = get_backend(solver)
    t0 = time.perf_counter()
    res = backend.solve(compiled, compiled.hint, Limits(time_limit_s=limit, kill_at_deadline=False))
    wall = time.perf_counter() - t0
    print(json.dumps({"wall_s": wall, "guard": res.guard or "solver", "termination": res.termination}))


def cli_run(snapshot: Path, limit: float, busy: int) -> dict[str, Any]:
    script = [sys.executable, "-c", "from origamig.cli.app import main; main()"]
    cmd = [*script, "solve", str(snapshot), "--neighborhood", "all"]
    cmd += ["--time-limit", str(limit), "--json"]
    with busy_loops(busy):
        t0 = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
    doc = json.loads(out.stdout) if out.returncode in (0, 3, 4) and out.stdout.strip() else {}
    solver = doc.get("solver", {})
    return {
        "wall_s": wall,
        "exit": out.returncode,
        "solve_s": solver.get("timings", {}).get("solve_s"),
        "termination": solver.get("termination"),
        "status": doc.get("status"),
    }


def summarize(runs: list[dict[str, Any]], limit: float) -> dict[str, Any]:
    walls = [r["wall_s"] for r in runs if r["wall_s"] is not None]
    over = [w - limit for w in walls]
    return {
        "n": len(runs),
        "gave_up": len(runs) - len(walls),
        "overrun_median_s": quantile(over, 0.5),
        "overrun_p90_s": quantile(over, 0.9),
        "overrun_max_s": max(over) if over else None,
        "within_1s": sum(1 for o in over if o <= 1.0),
        "guards": sorted({str(r["guard"]) for r in runs if "guard" in r}),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    doc = h100_cluster(args.pms, round(381 * args.pms / 40), 6)
    snapshot = Path(tempfile.mkdtemp()) / f"h100-{args.pms}.json"
    snapshot.write_text(json.dumps(doc))
    t0 = time.perf_counter()
    compiled = snapshot_model(doc)
    build_s = time.perf_counter() - t0
    for solver in args.solvers:  # start this process's solver helpers: once per process, not per solve
        get_backend(solver).solve(compiled, compiled.hint, Limits(time_limit_s=min(args.limits, default=1.0)))
    rows: list[dict[str, Any]] = []
    for busy in args.busy:
        for limit in args.limits:
            for solver in args.solvers:
                runs = [guarded_run(compiled, solver, limit, busy) for _ in range(args.repeats)]
                rows.append(
                    {
                        "mode": "guarded",
                        "solver": solver,
                        "limit_s": limit,
                        "busy": busy,
                        **summarize(runs, limit),
                        "runs": runs,
                    }
                )
            for limit_old in [x for x in args.old_limits if x == limit]:
                runs = [
                    old_run(snapshot, "highs", limit_old, busy, args.old_timeout)
                    for _ in range(args.old_repeats)
                ]
                rows.append(
                    {
                        "mode": "old",
                        "solver": "highs",
                        "limit_s": limit_old,
                        "busy": busy,
                        **summarize(runs, limit_old),
                        "runs": runs,
                    }
                )
            if limit in args.cli_limits:
                runs = [cli_run(snapshot, limit, busy) for _ in range(args.cli_repeats)]
                rows.append(
                    {
                        "mode": "cli",
                        "solver": "highs",
                        "limit_s": limit,
                        "busy": busy,
                        **summarize(runs, limit),
                        "runs": runs,
                    }
                )
    return {
        "instance": {
            "pms": args.pms,
            "gpus_per_pm": 8,
            "vms": len(doc["vms"]),
            **compiled.size,
            "build_compile_s": build_s,
        },
        "settings": {k: v for k, v in vars(args).items() if k not in ("out", "old_run")},
        "rows": rows,
    }


def print_table(doc: dict[str, Any]) -> None:
    inst = doc["instance"]
    print(
        f"instance: {inst['pms']} PMs × 8 H100-80GB, {inst['vms']} VMs; {inst['columns']} columns, "
        f"{inst['nonzeros']} nonzeros (build + compile {inst['build_compile_s']:.1f} s)"
    )
    print(f"{'mode':8} {'solver':6} {'limit':>6} {'busy':>4} {'n':>3} ", end="")
    print(f"{'median':>8} {'p90':>8} {'max':>8}  ≤1 s  how")
    for r in doc["rows"]:

        def f(x: Any) -> str:
            return "—" if x is None or x != x else f"{x:+.2f}"

        print(
            f"{r['mode']:8} {r['solver']:6} {r['limit_s']:6g} {r['busy']:4d} {r['n']:3d} "
            f"{f(r['overrun_median_s']):>8} {f(r['overrun_p90_s']):>8} {f(r['overrun_max_s']):>8} "
            f"{r['within_1s']:3d}/{r['n']}  {', '.join(r['guards'])}"
        )
    print("(overrun = wall time of the solve minus the limit, s; cli: the whole command, build included)")


def draw(doc: dict[str, Any], png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in doc["rows"] if r["mode"] != "cli"]
    fig, ax = plt.subplots(figsize=(9, 4.5), constrained_layout=True)
    data = [[x["wall_s"] - r["limit_s"] for x in r["runs"] if x["wall_s"] is not None] or [0.0] for r in rows]
    labels = [f"{r['mode']}\n{r['solver']} {r['limit_s']:g}s\nbusy {r['busy']}" for r in rows]
    ax.boxplot(data, tick_labels=labels)
    ax.axhline(1.0, color="red", linestyle="--", label="limit + 1 s")
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set_ylabel("overrun (s)")
    ax.set_title("Wall time past the limit (stress cluster)")
    ax.legend()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="limits 1 and 10 s, 3 repeats (default)")
    mode.add_argument(
        "--full", action="store_true", help="limits 1, 5, 10, 30 s, 10 repeats, idle and loaded"
    )
    ap.add_argument("--pms", type=int, default=40)
    ap.add_argument("--out", type=Path, default=RESULTS / "time_limit.json")
    ap.add_argument("--old-run", nargs=3, metavar=("SNAPSHOT", "SOLVER", "LIMIT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.old_run:
        path, solver, limit = args.old_run
        _old_run_here(Path(path), solver, float(limit))
        return 0
    full = args.full
    args.limits = [1.0, 5.0, 10.0, 30.0] if full else [1.0, 10.0]
    args.solvers = ["highs", "cpsat"]
    args.busy = [0, 2] if full else [2]
    args.repeats = 10 if full else 3
    args.old_limits = [1.0, 5.0, 10.0] if full else [1.0]
    args.old_repeats = 3 if full else 2
    args.old_timeout = 600.0 if full else 120.0
    args.cli_limits = [10.0]
    args.cli_repeats = 3 if full else 1
    started, load = time.perf_counter(), os.getloadavg()
    publish(run(args), args.out, started, load, print_table, draw)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
