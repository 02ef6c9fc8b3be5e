"""What a paper-scale OrigaMIG simulation costs, before and after a change, and whether its results move.

Runs `origamig simulate --policy origamig` at the full scale of the stored results (128 PMs, ρ 0.85,
48 h warm-up + 72 h measured, deterministic calls of at most 100 branch-and-bound nodes on one
thread, TC's arrival rule) with two checkouts, each run a process of its own:

  before   `--previous PATH`, a checkout of the code before (`git worktree add /tmp/before COMMIT`)
  after    this checkout
  noise    this checkout with checks every 10.01 s instead of 10 s: a change of no decision rule, whose
           paired differences from `after` are the noise floor a run's chaos alone makes

  timing   seed `--timing-seed` (1), before and after at once (one core each), the same minutes of
           the same machine: wall and CPU time (the run's own, its solver helpers included)
  fresh    seeds `--seeds` (6..10) of every version, for the paired comparison, `--jobs` at a time

Each finished run is kept under `--cells` as `simulate --checkpoint-dir` writes it, and an interrupted
run resumes from its checkpoint: rerun the same command to go on. Prints the timing pair, the call
phases of each version (seconds per phase summed over the calls, calls by how they ended, the longest
call) and, per fresh seed, the active PMs, the acceptance and the migrations per hour of each
version with the paired differences; writes benchmarks/results/sim_cost.json.

    python -m benchmarks.solver.sim_cost --previous /tmp/before                  # everything
    python -m benchmarks.solver.sim_cost --previous /tmp/before --only timing    # the timing pair only
    python -m benchmarks.solver.sim_cost --previous /tmp/before --pms 32 --warmup 24 --measure 24
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import ROOT
from benchmarks.checkouts import run_command
from benchmarks.publish import write_json
from origamig.study.seeds import parse_seeds

RESULTS = ROOT / "benchmarks" / "results" / "sim_cost.json"
CELLS = ROOT / "benchmarks" / "results" / ".sim_cost"
# The stored results' OrigaMIG call budget (study/sweep/scale.py: FULL); arrivals by TC's rule.
OPTIONS = ("work_limit=100", "threads=1", "time_limit_s=null", "arrival=tc")
NOISE = ("check_interval_s=10.01",)
METRICS = (
    ("active_pms", "active PMs", 2),
    ("acceptance", "admitted %", 2),
    ("migrations_per_hour", "migr./h", 2),
)
PHASES = ("select_s", "build_s", "compile_s", "bound_s", "primal_s", "solve_s", "decode_s", "plan_s")
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26}


@dataclass(frozen=True)
class Version:
    name: str
    root: Path
    options: tuple[str, ...] = ()


def simulate_args(args: argparse.Namespace, version: Version, seed: int, folder: Path) -> list[str]:
    out = ["simulate", "--policy", "origamig", "--pms", str(args.pms), "--load", str(args.load)]
    out += ["--warmup", f"{args.warmup:g}h", "--measure", f"{args.measure:g}h", "--seeds", f"{seed}..{seed}"]
    out += ["--deterministic", "--json", "--checkpoint-dir", str(folder)]
    for option in (*OPTIONS, *version.options):
        out += ["-o", option]
    return out


def cell(args: argparse.Namespace, version: Version, seed: int) -> dict[str, Any]:
    """One run of `version`: `simulate` keeps it under `--cells` once finished (keyed by the code and
    the configuration), so asking again reads it back; an interrupted run resumes."""
    folder = args.cells / f"{version.name}-{args.pms}pms-{args.warmup:g}+{args.measure:g}h"
    folder.mkdir(parents=True, exist_ok=True)
    ran = run_command(version.root, simulate_args(args, version, seed, folder))
    if ran.code != 0:
        raise RuntimeError(f"{version.name} seed {seed}: exit {ran.code}: {ran.stderr[-2000:]}")
    run = ran.document()["runs"][0]
    print(f"  {version.name} seed {seed}: {run['wall_s']:.0f} s wall, {run['cpu_s']:.0f} s CPU", flush=True)
    return {"version": version.name, "seed": seed, **run}


def run_cells(
    args: argparse.Namespace, jobs: list[tuple[Version, int]], workers: int
) -> list[dict[str, Any]]:
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(lambda job: cell(args, *job), jobs))


def phase_table(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Seconds per call phase summed over a version's runs, calls by how they ended, the longest call."""
    counters = [r["counters"] for r in rows]
    out: dict[str, Any] = {p: sum(c.get(f"time_{p}", 0.0) for c in counters) for p in PHASES}
    out["calls"] = sum(c.get("calls", 0) for c in counters)
    out["ended"] = {
        k.removeprefix("status_"): sum(c.get(k, 0) for c in counters)
        for k in sorted({k for c in counters for k in c if k.startswith("status_")})
    }
    out["longest_call_s"] = max((c.get("time_longest_call_s", 0.0) for c in counters), default=0.0)
    out["reused"] = sum(c.get("calls_reused", 0) for c in counters)
    return out


def paired(rows: list[dict[str, Any]], a: str, b: str) -> dict[str, Any]:
    """Per metric: b − a per seed (seeds both have), mean, its 95% t-interval, mean |difference|."""
    by = {(r["version"], r["seed"]): r["metrics"] for r in rows}
    seeds = sorted({s for v, s in by if v == a} & {s for v, s in by if v == b})
    out: dict[str, Any] = {"seeds": seeds}
    for key, _, _ in METRICS:
        scale = 100.0 if key == "acceptance" else 1.0
        diffs = [scale * (by[(b, s)][key] - by[(a, s)][key]) for s in seeds]
        mean = statistics.fmean(diffs) if diffs else math.nan
        half = (
            T95.get(len(diffs) - 1, 2.0) * statistics.stdev(diffs) / math.sqrt(len(diffs))
            if len(diffs) > 1
            else math.nan
        )
        out[key] = {
            "diffs": diffs,
            "mean": mean,
            "ci95": half,
            "mean_abs": statistics.fmean(map(abs, diffs)) if diffs else math.nan,
        }
    return out


def show(doc: dict[str, Any]) -> None:
    timing = doc.get("timing")
    if timing:
        b, a = timing["before"], timing["after"]
        print(f"\ntiming pair, seed {timing['seed']} (both at once):")
        print(f"  {'':8} {'wall s':>9} {'CPU s':>9} {'calls':>6}")
        for name, r in (("before", b), ("after", a)):
            print(f"  {name:8} {r['wall_s']:9.0f} {r['cpu_s']:9.0f} {r['calls']:6}")
        print(f"  after/before: wall {a['wall_s'] / b['wall_s']:.3f}, CPU {a['cpu_s'] / b['cpu_s']:.3f}")
    for name, table in doc.get("phases", {}).items():
        spent = ", ".join(f"{p.removesuffix('_s')} {table[p]:.0f}" for p in PHASES if table.get(p))
        ended = ", ".join(f"{k} {v}" for k, v in table["ended"].items())
        print(f"\n{name}: {table['calls']} calls ({table['reused']} answered from memory); seconds: {spent}")
        print(f"  ended: {ended}; longest call {table['longest_call_s']:.1f} s")
    fresh = doc.get("fresh")
    if fresh:
        versions = fresh["versions"]
        print("\nfresh seeds: " + "  ".join(f"{label} ({', '.join(versions)})" for _, label, _ in METRICS))
        by = {(r["version"], r["seed"]): r["metrics"] for r in fresh["runs"]}
        for s in sorted({s for _, s in by}):
            cells = []
            for key, _, digits in METRICS:
                scale = 100.0 if key == "acceptance" else 1.0
                cells.append(
                    " / ".join(
                        f"{scale * by[(v, s)][key]:.{digits}f}" if (v, s) in by else "—" for v in versions
                    )
                )
            print(f"  seed {s:2}: " + "   ".join(cells))
        for pair, stats in fresh["paired"].items():
            parts = [
                f"{label} {d['mean']:+.3f} ± {d['ci95']:.3f} (|d| {d['mean_abs']:.3f})"
                for key, label, _ in METRICS
                if (d := stats[key])
            ]
            print(f"  {pair} over seeds {stats['seeds']}: " + "; ".join(parts))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--previous", type=Path, required=True, help="checkout of the code before")
    ap.add_argument("--after", type=Path, default=ROOT, help="checkout of the code after (default: this one)")
    ap.add_argument("--pms", type=int, default=128)
    ap.add_argument("--load", type=float, default=0.85)
    ap.add_argument("--warmup", type=float, default=48.0, help="hours")
    ap.add_argument("--measure", type=float, default=72.0, help="hours")
    ap.add_argument("--timing-seed", type=int, default=1)
    ap.add_argument("--seeds", default="6..10", help="fresh seeds of the paired comparison")
    ap.add_argument("--jobs", type=int, default=2, help="runs at a time for the fresh seeds")
    ap.add_argument("--only", choices=("timing", "fresh"))
    ap.add_argument("--versions", default="before,after,noise", help="fresh seeds: run these versions only")
    ap.add_argument("--cells", type=Path, default=CELLS, help="where finished runs are kept")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    before, after = Version("before", args.previous.resolve()), Version("after", args.after.resolve())
    noise = Version("noise", args.after.resolve(), NOISE)
    started = time.perf_counter()
    doc: dict[str, Any] = json.loads(args.out.read_text()) if args.out.exists() else {}
    doc |= {"scale": {k: getattr(args, k) for k in ("pms", "load", "warmup", "measure")}, "options": OPTIONS}
    if args.only in (None, "timing"):
        b, a = run_cells(args, [(before, args.timing_seed), (after, args.timing_seed)], 2)
        doc["timing"] = {"seed": args.timing_seed, "before": b, "after": a}
        doc["phases"] = {"before": phase_table([b]), "after": phase_table([a])}
    if args.only in (None, "fresh"):
        seeds = parse_seeds(args.seeds)
        wanted = args.versions.split(",")
        jobs = [(v, s) for v in (after, noise, before) if v.name in wanted for s in seeds]
        rows = run_cells(args, jobs, args.jobs)
        doc["fresh"] = {
            "versions": ["before", "after", "noise"],
            "runs": rows,
            "paired": {
                "after − before": paired(rows, "before", "after"),
                "noise − after": paired(rows, "after", "noise"),
            },
        }
        doc["fresh_phases"] = {
            v.name: phase_table([r for r in rows if r["version"] == v.name]) for v in (before, after)
        }
    doc["wall_s"] = time.perf_counter() - started
    show(doc)
    write_json(args.out, doc)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
