"""What a solve pays for running outside the calling process: the per-call overhead of the safety net.

Every solve with a wall-clock limit or a safety net runs in a process that can be ended at the
deadline (origamig/bilp/backends/deadline.py). Three ways of solving the same deterministic calls,
side by side in one run, interleaved call by call:
  in-process   `Limits(kill_at_deadline=False)`: no safety net (the reference)
  helper       the package's way: a long-lived helper process per calling process, the standard
               form pickled over a pipe
  fork         the way before it: a child forked per call (what fails in daemonic Dask workers)
Overhead = the call's wall time minus the in-process wall time of the same call; medians and 90th
percentiles over calls. The helper's one-time start is measured apart (it is paid once per process).

    python -m benchmarks.solve_overhead --quick   # 2- and 8-PM neighborhoods, 4 models x 3 repeats
    python -m benchmarks.solve_overhead --full    # 2/8/16 PMs, 10 models x 5 repeats
On a 2-PM model the solve takes milliseconds, so the overhead stands out of the machine's noise.
Prints a table and writes benchmarks/results/solve_overhead.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import os
import random
import time
from pathlib import Path
from typing import Any

from benchmarks.publish import quantile
from origamig.bilp import build_model, compile_model, restrict
from origamig.bilp.backends import base
from origamig.bilp.backends.base import get_backend, make_limits
from origamig.cluster.records import Weights
from tests.bilp_instances import fragmented

OUT = Path(__file__).resolve().parent / "results" / "solve_overhead.json"
MODES = ("in-process", "helper", "fork")
WORK = {"highs": 5.0, "cpsat": 0.2}  # small budgets: the overhead, not the search, is measured


def _forked_child(send: Any, name: str, compiled: Any, hint: Any, limits: base.Limits) -> None:
    send.send(get_backend(name).solve_in_process(compiled, hint, limits))
    send.close()


def forked_solve(name: str, compiled: Any, limits: base.Limits) -> base.SolveResult:
    """The mechanism before the helper: fork a child for this one call, receive its answer."""
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_forked_child, args=(send, name, compiled, compiled.hint, limits), daemon=True)
    child.start()
    send.close()
    answer = receive.recv()
    child.join()
    receive.close()
    return answer


def models(pms: int, count: int) -> list[Any]:
    out = []
    for seed in range(count):
        dc = fragmented(random.Random(seed), pms, 60, 6)
        out.append(compile_model(build_model(restrict(dc, range(pms), list(dc.pending)), Weights())))
    return out


def timed(solve: Any) -> tuple[float, base.SolveResult]:
    t0 = time.perf_counter()
    result = solve()
    return time.perf_counter() - t0, result


def measure(solver: str, pms: int, count: int, repeats: int) -> dict[str, Any]:
    compiled = models(pms, count)
    limits = make_limits(solver, deterministic=True, work_limit=WORK[solver])
    here = dataclasses.replace(limits, kill_at_deadline=False)
    backend = get_backend(solver)
    t0 = time.perf_counter()
    backend.solve(compiled[0], compiled[0].hint, limits)  # starts this process's helper
    first_call_s = time.perf_counter() - t0
    walls: dict[str, list[float]] = {m: [] for m in MODES}
    for _ in range(repeats):
        for c in compiled:
            runs = {
                "in-process": timed(lambda c=c: backend.solve(c, c.hint, here)),
                "helper": timed(lambda c=c: backend.solve(c, c.hint, limits)),
                "fork": timed(lambda c=c: forked_solve(solver, c, here)),
            }
            same = {(r.termination, r.objective, r.work) for _, r in runs.values()}
            assert len(same) == 1, f"the modes disagree: {same}"
            for mode, (wall, _) in runs.items():
                walls[mode].append(wall)
    ref = walls["in-process"]
    rows = []
    for mode in MODES:
        extra = [w - r for w, r in zip(walls[mode], ref, strict=True)]
        rows.append(
            {
                "solver": solver,
                "pms": pms,
                "columns": compiled[0].size["columns"],
                "mode": mode,
                "calls": len(extra),
                "wall_median_ms": 1000 * quantile(walls[mode], 0.5),
                "overhead_median_ms": 1000 * quantile(extra, 0.5),
                "overhead_p90_ms": 1000 * quantile(extra, 0.9),
            }
        )
    return {"rows": rows, "first_call_s": first_call_s}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    size = p.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="2 and 8 PMs, 4 models x 3 repeats (default)")
    size.add_argument("--full", action="store_true", help="2/8/16 PMs, 10 models x 5 repeats")
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    sizes, count, repeats = ((2, 8, 16), 10, 5) if args.full else ((2, 8), 4, 3)
    started = time.perf_counter()
    load = os.getloadavg()
    rows: list[dict[str, Any]] = []
    first: dict[str, float] = {}
    for solver in ("highs", "cpsat"):
        for pms in sizes:
            got = measure(solver, pms, count, repeats)
            rows.extend(got["rows"])
            first.setdefault(solver, got["first_call_s"])
    head = ("solver", "PMs", "cols", "mode", "calls", "wall ms", "overhead ms", "p90")
    print("{:7} {:>4} {:>6} {:11} {:>5} {:>8} {:>12} {:>8}".format(*head))
    for r in rows:
        print(
            f"{r['solver']:7} {r['pms']:>4} {r['columns']:>6} {r['mode']:11} {r['calls']:>5} "
            f"{r['wall_median_ms']:>8.1f} {r['overhead_median_ms']:>12.1f} {r['overhead_p90_ms']:>8.1f}"
        )
    for solver, seconds in first.items():
        print(f"{solver}: the first call of a process, helper start included: {seconds:.2f} s")
    doc = {
        "rows": rows,
        "first_call_s": first,
        "wall_s": time.perf_counter() - started,
        "meta": {"cpus": os.cpu_count(), "loadavg_start": load, "loadavg_end": os.getloadavg()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out} in {doc['wall_s']:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
