"""The fast primal answer against the exact solve, on the recorded 128-PM calls and on fragmented
16-PM neighborhoods with pending VMs.

Instances: the 60 consolidation calls a 128-PM OrigaMIG run made in its 40–56 h
(benchmarks/results/solver_replay-full_calls.json, each a snapshot of the call's neighborhood), and
fragmented 16-PM neighborhoods with 4–8 pending VMs (the generator of `benchmarks/solver/solvers.py`, seed 1:
the neighborhoods `solve_process` times). Per instance, side by side:

- the best answer: HiGHS with a 10 s limit, no primal answer (proved optimal on 65 of the 70
  instances of the stored run; the other 5 stopped at the limit);
- the repair alone (`origamig.bilp.primal.repair`, guided by the LP relaxation as in a call): its
  gain over the start and its time;
- HiGHS with a 0.25, 0.5 and 1 s limit, without and with the repair as its start.

Per setting: how many instances its answer beats the start on, how many it reaches the best
answer on, the share of the best answer's gain over the start it reaches (median), and the wall
time (median, p95). One thread, LP bound first as in every call.

    python -m benchmarks.solver.primal                                # every instance (~6 min)
    python -m benchmarks.solver.primal --recorded 12 --fragmented 3   # fewer
    python -m benchmarks.solver.primal --table                        # the table of the stored results

Prints a table and writes benchmarks/results/primal.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks import RESULTS
from benchmarks.publish import quantile, results_file, write_json
from benchmarks.solver.solvers import neighborhoods
from origamig.bilp import Limits, restrict, solve_region
from origamig.bilp.primal import repair
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Weights
from origamig.judge.objective import evaluate
from origamig.snapshot.document import parse_snapshot

CALLS = RESULTS / "solver_replay-full_calls.json"
LIMITS_S = (0.25, 0.5, 1.0)
OPTIMUM_LIMIT_S = 10.0


def instances(recorded: int, fragmented: int) -> list[tuple[str, DataCenter, list[str], Weights]]:
    """(name, state, pending VMs, weights) of each instance; every PM of the state is the neighborhood."""
    out: list[tuple[str, DataCenter, list[str], Weights]] = []
    for n, call in enumerate(json.loads(CALLS.read_text())["calls"][:recorded]):
        snap = parse_snapshot(call["snapshot"])
        out.append((f"recorded {n}", snap.datacenter(), list(snap.pending), snap.weights))
    for n, dc in enumerate(neighborhoods(1, fragmented)):
        out.append((f"fragmented {n}", dc, list(dc.pending), Weights()))
    return out


def measure(name: str, dc: DataCenter, pending: list[str], weights: Weights) -> dict[str, Any]:
    """The best answer (10 s), the repair alone, and the limited solves without and with the repair."""
    pms = range(len(dc.pms))

    def solve(limit: float, primal: bool) -> dict[str, Any]:
        t0 = time.perf_counter()
        limits = Limits(time_limit_s=limit, threads=1)
        sol = solve_region(dc, pms, pending, weights, limits=limits, primal=primal)
        return {
            "objective": sol.result.objective,
            "proved": sol.result.proved_optimal,
            "termination": str(sol.result.termination),
            "wall_s": time.perf_counter() - t0,
            "primal_gain": sol.primal_gain,
            "primal_s": sol.timings.get("primal_s"),
        }

    region = restrict(dc, pms, pending)
    start = evaluate(dc.pms, region.vms, region.previous, region.previous, weights, region.pms, region.vms)
    t0 = time.perf_counter()
    found = repair(dc.pms, region, weights)
    repair_s = time.perf_counter() - t0
    return {
        "instance": name,
        "pms": len(dc.pms),
        "vms": len(region.vms),
        "pending": len(pending),
        "start": start.value,
        "optimum": solve(OPTIMUM_LIMIT_S, False),
        "repair": {"gain": found.value - found.start if found else 0.0, "wall_s": repair_s},
        "limited": {
            str(limit): {"exact": solve(limit, False), "with_repair": solve(limit, True)}
            for limit in LIMITS_S
        },
    }


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per setting and instance family: instances beating the start, instances at the best answer
    (the 10 s solve's), median share of the best answer's gain reached, wall time median and p95."""
    out = []
    for family in sorted({r["instance"].split()[0] for r in rows}):
        mine = [r for r in rows if r["instance"].startswith(family)]
        settings: list[tuple[str, list[tuple[float, float]]]] = [
            ("repair alone", [(r["start"] + r["repair"]["gain"], r["repair"]["wall_s"]) for r in mine]),
        ]
        for limit in LIMITS_S:
            for kind in ("exact", "with_repair"):
                got = [r["limited"][str(limit)][kind] for r in mine]
                label = f"{limit:g} s, " + ("solver alone" if kind == "exact" else "repair as start")
                settings.append((label, [(g["objective"], g["wall_s"]) for g in got]))
        settings.append(
            (
                f"{OPTIMUM_LIMIT_S:g} s, solver alone",
                [(r["optimum"]["objective"], r["optimum"]["wall_s"]) for r in mine],
            )
        )
        improvable = [r for r in mine if r["optimum"]["objective"] > r["start"] + 1e-6]
        for label, values in settings:
            reached = [
                (value - r["start"]) / (r["optimum"]["objective"] - r["start"])
                for r, (value, _) in zip(mine, values, strict=True)
                if r in improvable
            ]
            walls = [w for _, w in values]
            out.append(
                {
                    "family": family,
                    "setting": label,
                    "instances": len(mine),
                    "improvable": len(improvable),
                    "beats_start": sum(v > r["start"] + 1e-6 for r, (v, _) in zip(mine, values, strict=True)),
                    "at_best": sum(
                        v >= r["optimum"]["objective"] - 1e-6 for r, (v, _) in zip(mine, values, strict=True)
                    ),
                    "median_gain_share": statistics.median(reached) if reached else None,
                    "median_wall_s": statistics.median(walls),
                    "p95_wall_s": quantile(walls, 0.95),
                }
            )
    return out


def print_table(summary: list[dict[str, Any]]) -> None:
    print(f"{'instances':<22} {'setting':<28} {'beats start':>11} {'at best':>10} {'gain share':>10} "
          f"{'wall p50':>9} {'wall p95':>9}")  # fmt: skip
    for s in summary:
        share = "-" if s["median_gain_share"] is None else f"{100 * s['median_gain_share']:.0f}%"
        print(
            f"{s['family'] + ' (' + str(s['improvable']) + '/' + str(s['instances']) + ')':<22} "
            f"{s['setting']:<28} {s['beats_start']:>11} {s['at_best']:>10} {share:>10} "
            f"{s['median_wall_s']:>8.3f}s {s['p95_wall_s']:>8.3f}s"
        )
    print("(instances: improvable / all; best: the 10 s solve's answer; gain share: median over the")
    print(" improvable instances of the share of the best answer's gain over the start reached)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--recorded", type=int, default=60, help="recorded 128-PM calls to use (default 60)")
    ap.add_argument("--fragmented", type=int, default=10, help="fragmented 16-PM neighborhoods (default 10)")
    ap.add_argument("--out", type=Path, default=RESULTS / "primal.json")
    ap.add_argument("--table", action="store_true", help="print the table of the stored results, no runs")
    args = ap.parse_args(argv)
    out = results_file(args.out, RESULTS / "primal.json")
    if args.table:
        print_table(summarize(json.loads(out.read_text())["instances"]))
        return 0
    started, load = time.perf_counter(), os.getloadavg()
    rows = []
    for name, dc, pending, weights in instances(args.recorded, args.fragmented):
        rows.append(measure(name, dc, pending, weights))
        r = rows[-1]
        lim = r["limited"]["0.5"]
        print(
            f"  {name:<14} start {r['start']:g} best {r['optimum']['objective']:g} "
            f"repair +{r['repair']['gain']:g} in {1000 * r['repair']['wall_s']:.1f} ms; 0.5 s: "
            f"{lim['exact']['objective']:g} alone, {lim['with_repair']['objective']:g} with the repair",
            flush=True,
        )
    summary = summarize(rows)
    print_table(summary)
    doc = {
        "benchmark": "primal",
        "command": "python -m benchmarks.solver.primal"
        + (f" --recorded {args.recorded}" if args.recorded != 60 else "")
        + (f" --fragmented {args.fragmented}" if args.fragmented != 10 else ""),
        "limits_s": list(LIMITS_S),
        "summary": summary,
        "instances": rows,
        "wall_s": time.perf_counter() - started,
        "meta": {"cpus": os.cpu_count(), "loadavg_start": load, "loadavg_end": os.getloadavg()},
    }
    write_json(out, doc)
    print(f"wrote {out} in {doc['wall_s']:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
