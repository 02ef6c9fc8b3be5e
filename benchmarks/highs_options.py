"""HiGHS option sets side by side on recorded calls: do HiGHS's own knobs shorten the proofs?

Each recorded call (default: the 60 recorded 128-PM calls) is solved in this process by HiGHS on one
thread, to proof, once per option set, the sets interleaved call by call (the order alternates) so
that the machine's load hits all alike. The options come on top of the package's (presolve without
probing, docs/bilp.md). Reports CPU seconds per call: medians, 95th percentiles and totals, the median
per-call ratio to the default, and any call whose proved objective differs.

    python -m benchmarks.highs_options                        # the 60 recorded 128-PM calls
    python -m benchmarks.highs_options --calls benchmarks/results/solver_replay_calls.json
    python -m benchmarks.highs_options --sets "with root reduced cost,no rens" \
        --out benchmarks/results/highs_options-rrc.json      # some sets, beside the default
    python -m benchmarks.highs_options --neighborhoods 9 --sets "with root reduced cost,no rens" \
        --out benchmarks/results/highs_options-neighborhoods.json   # the 16-PM neighborhoods

Writes benchmarks/results/highs_options.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.publish import quantile, results_file, write_json
from benchmarks.solver.solver_replay import recorded_call_model
from benchmarks.solver.solvers import neighborhoods
from origamig.bilp import build_model, compile_model, restrict
from origamig.bilp.backends import highs
from origamig.bilp.backends.base import Limits
from origamig.bilp.compile import Compiled
from origamig.cluster.records import Weights

ROOT = Path(__file__).resolve().parent
CALLS = ROOT / "results" / "solver_replay-full_calls.json"
RESULTS = ROOT / "results" / "highs_options.json"
OPTION_SETS: dict[str, dict[str, Any]] = {
    "default": {},
    "less heuristics": {"mip_heuristic_effort": 0.01},
    "no restarts": {"mip_allow_restart": False},
    "no symmetry": {"mip_detect_symmetry": False},
    # The package skips the root reduced-cost heuristic in a wall-clock solve (as here); with it is
    # how such solves ran before, and how deterministic solves still run.
    "with root reduced cost": {"mip_heuristic_run_root_reduced_cost": True},
    "no rens": {"mip_heuristic_run_rens": False},
}
LIMITS = Limits(time_limit_s=60.0, threads=1, kill_at_deadline=False)


class OptionedHighs(highs.HighsBackend):
    """The package's HiGHS backend with some options of HiGHS's own set on top."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options

    def _apply_limits(self, h: Any, compiled: Any, limits: Limits) -> None:
        super()._apply_limits(h, compiled, limits)
        for key, value in self.options.items():
            h.setOptionValue(key, value)


def call_models(path: Path) -> Iterator[Compiled]:
    """The compiled model of each recorded call in `path` (a solver_replay calls file)."""
    for call in json.loads(path.read_text())["calls"]:
        yield recorded_call_model(call)


def neighborhood_models(count: int) -> Iterator[Compiled]:
    """The compiled models of the first `count` 16-PM neighborhoods of benchmarks/solver/solvers.py."""
    for dc in neighborhoods(1, count):
        yield compile_model(build_model(restrict(dc, range(len(dc.pms)), list(dc.pending)), Weights()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=Path, default=CALLS, help="a recorded calls file (solver_replay)")
    ap.add_argument(
        "--sets", default=",".join(OPTION_SETS), help="option sets to run, comma-separated (default: all)"
    )
    ap.add_argument(
        "--neighborhoods",
        type=int,
        default=0,
        help="instead of recorded calls, the first N 16-PM neighborhoods of "
        "benchmarks/solver/solvers.py (seed 1)",
    )
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    args.out = results_file(args.out, RESULTS)
    models = neighborhood_models(args.neighborhoods) if args.neighborhoods else call_models(args.calls)
    names = ["default"] + [n for n in args.sets.split(",") if n in OPTION_SETS and n != "default"]
    unknown = [n for n in args.sets.split(",") if n not in OPTION_SETS]
    if unknown:
        known = ", ".join(OPTION_SETS)
        raise SystemExit(f"error: --sets: unknown option set {unknown[0]!r} (known: {known})")
    rows: list[dict[str, Any]] = []
    for i, compiled in enumerate(models):
        row: dict[str, Any] = {"call": i}
        for name in names if i % 2 == 0 else names[::-1]:
            t0 = time.process_time()
            result = OptionedHighs(OPTION_SETS[name]).solve_in_process(compiled, compiled.hint, LIMITS)
            row[name] = {
                "cpu_s": time.process_time() - t0,
                "objective": result.objective,
                "proved": result.proved_optimal,
            }
        rows.append(row)
        print(f"call {i:3}: " + "  ".join(f"{n} {row[n]['cpu_s']:.2f} s" for n in names), flush=True)
    summary = {}
    for name in names:
        cpu = [r[name]["cpu_s"] for r in rows]
        summary[name] = {
            "median_s": statistics.median(cpu),
            "p95_s": quantile(cpu, 0.95),
            "total_s": sum(cpu),
            "median_ratio_to_default": statistics.median(
                r[name]["cpu_s"] / r["default"]["cpu_s"] for r in rows if r["default"]["cpu_s"] > 0
            ),
            "proved": sum(r[name]["proved"] for r in rows),
            "objective_differs": sum(
                r[name]["proved"]
                and r["default"]["proved"]
                and abs(r[name]["objective"] - r["default"]["objective"]) > 1e-6
                for r in rows
            ),
        }
    print(
        f"\n{'option set':20} {'median s':>9} {'p95 s':>7} {'total s':>8} {'ratio':>6} "
        f"{'proved':>7} {'differs':>8}"
    )
    for name, s in summary.items():
        print(
            f"{name:20} {s['median_s']:9.2f} {s['p95_s']:7.2f} {s['total_s']:8.1f} "
            f"{s['median_ratio_to_default']:6.3f} {s['proved']:4}/{len(rows)} {s['objective_differs']:8}"
        )
    source = f"{args.neighborhoods} neighborhoods" if args.neighborhoods else str(args.calls)
    write_json(args.out, {"calls_file": source, "summary": summary, "rows": rows})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
