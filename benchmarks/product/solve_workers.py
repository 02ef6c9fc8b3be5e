"""Side-by-side calls solved in worker processes (`solve_workers`) against solving them in turn.

OrigaMIG with K calls per 10 s check in the growth study's setting (ρ = 0.85, a quarter of the PMs
with A30s, deterministic HiGHS calls of at most 100 branch-and-bound nodes, no wall-clock limit) over a
short window, once with `solve_workers=1` and once with `--workers` W, in alternating order, `--pairs`
times. Both runs of a pair must give the same metrics and counters (apart from timings); the table
gives each run's wall time, the ratio per pair and the median ratio, and the ceiling: what W workers
could save at most — each check's solved calls (timed in the run in turn) dealt longest first to the
least loaded worker — since a check ends with its longest call. A spare core per worker is needed for
a gain: run it on an otherwise idle machine.

    python -m benchmarks.product.solve_workers                       # 256 PMs, K = 4, 2 workers, 3 pairs
    python -m benchmarks.product.solve_workers --pms 512 --calls-per-step 4 --warmup 6 --measure 2

Prints a table and writes benchmarks/results/solve_workers.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import statistics
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from benchmarks import ROOT
from benchmarks.paper import growth
from benchmarks.publish import write_json
from origamig.policies.base import Work
from origamig.sim.engine import RunResult
from origamig.study.runner import RunSpec, new_simulation

RESULTS = ROOT / "benchmarks" / "results" / "solve_workers.json"


def timing_free(counters: dict[str, float]) -> dict[str, float]:
    """A run's counters without its wall-clock ones (they differ between any two runs)."""
    return {k: v for k, v in counters.items() if not k.startswith("time_") and k != "median_call_s"}


def run(args: argparse.Namespace, workers: int) -> tuple[RunResult, list[list[float]]]:
    """One run with `workers` solve workers, and the wall times of the calls each check solved."""
    scale = dataclasses.replace(growth.FULL, warmup_h=args.warmup, measure_h=args.measure)
    side = {"calls_per_step": args.calls_per_step} | ({"solve_workers": workers} if workers > 1 else {})
    config = growth.config_of(scale, args.pms, scale.origamig_options(**side))
    sim = new_simulation(RunSpec(config, "origamig", args.seed))
    checks: dict[float, list[float]] = {}
    policy: Any = sim.policy

    def solved(dc: Any, nb: Any, work: Work, now: float) -> None:
        if "build_s" in work.phases_s:  # solved now, not answered from the unchanged-call memory
            checks.setdefault(now, []).append(work.wall_s)

    policy.on_call = solved
    return sim.run(), list(checks.values())


def ceiling(wall_s: float, checks: list[list[float]], workers: int) -> float:
    """The most `workers` processes could save: each check's calls dealt longest first to the least
    loaded worker, the rest of the run unchanged — wall over that wall."""
    saved = 0.0
    for calls in checks:
        loads = [0.0] * workers
        for t in sorted(calls, reverse=True):
            loads[loads.index(min(loads))] += t
        saved += sum(calls) - max(loads)
    return wall_s / (wall_s - saved)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    pairs: list[dict[str, Any]] = []
    for i in range(args.pairs):
        order = (1, args.workers) if i % 2 == 0 else (args.workers, 1)
        runs = {w: run(args, w) for w in order}
        (one, checks), (many, _) = runs[1], runs[args.workers]
        same = one.metrics == many.metrics and timing_free(one.counters) == timing_free(many.counters)
        if not same:
            raise SystemExit(f"pair {i + 1}: the runs differ (metrics or counters) — a bug to report")
        pairs.append(
            {
                "order": list(order),
                "in_turn_s": one.wall_s,
                "workers_s": many.wall_s,
                "ratio": one.wall_s / many.wall_s,
                "ceiling": ceiling(one.wall_s, checks, args.workers),
                "checks_with_calls": len(checks),
                "checks_solving_several": sum(len(c) > 1 for c in checks),
                "call_s": sum(map(sum, checks)),
                "longest_call_of_check_s": sum(max(c) for c in checks),
                "calls": one.calls,
                "calls_side_by_side": one.counters.get("calls_side_by_side", 0),
                "active_pms": one.metrics["active_pms"],
            }
        )
    return {
        "setting": {
            "pms": args.pms,
            "calls_per_step": args.calls_per_step,
            "workers": args.workers,
            "warmup_h": args.warmup,
            "measure_h": args.measure,
            "seed": args.seed,
            "budget": "deterministic HiGHS, at most 100 B&B nodes per call, 1 thread",
        },
        "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
        "pairs": pairs,
        "median_ratio": statistics.median(p["ratio"] for p in pairs),
        "median_ceiling": statistics.median(p["ceiling"] for p in pairs),
        "identical_results": True,
    }


def print_table(doc: dict[str, Any]) -> None:
    s = doc["setting"]
    table = Table(
        title=f"{s['pms']} PMs, K = {s['calls_per_step']} calls per check, {s['warmup_h']:g} h + "
        f"{s['measure_h']:g} h: solved in turn vs in {s['workers']} processes"
    )
    columns = ("pair", "order", "calls", "checks solving >1", "in turn s", f"{s['workers']} workers s")
    for col in (*columns, "ratio", "ceiling"):
        table.add_column(col, justify="right")
    for i, p in enumerate(doc["pairs"], 1):
        table.add_row(
            str(i),
            " then ".join(map(str, p["order"])),
            str(p["calls"]),
            f"{p['checks_solving_several']} of {p['checks_with_calls']}",
            f"{p['in_turn_s']:.1f}",
            f"{p['workers_s']:.1f}",
            f"{p['ratio']:.2f}×",
            f"{p['ceiling']:.2f}×",
        )
    Console().print(table)
    last = doc["pairs"][-1]
    print(
        f"median ratio {doc['median_ratio']:.2f}× (results identical in every pair); ceiling "
        f"{doc['median_ceiling']:.2f}×: of {last['call_s']:.1f} s of calls solved in turn, "
        f"{last['longest_call_of_check_s']:.1f} s are each check's longest call"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pms", type=int, default=256, help="PMs (a multiple of 4; default 256)")
    p.add_argument("--calls-per-step", type=int, default=4, help="K, calls per check (default 4)")
    p.add_argument("--workers", type=int, default=2, help="solve_workers of the parallel run (default 2)")
    p.add_argument("--warmup", type=float, default=4.0, help="warm-up hours (default 4)")
    p.add_argument("--measure", type=float, default=2.0, help="measured hours (default 2)")
    p.add_argument("--pairs", type=int, default=3, help="pairs of runs, alternating order (default 3)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", default=str(RESULTS), help="JSON output path")
    args = p.parse_args()
    if args.workers < 2 or args.calls_per_step < 2 or args.pairs < 1:
        raise SystemExit("--workers and --calls-per-step must be at least 2, --pairs at least 1")
    growth.parse_sizes(str(args.pms), ())
    doc = measure(args)
    print_table(doc)
    write_json(Path(args.out), doc)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
