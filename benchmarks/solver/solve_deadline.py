"""Whether `origamig solve --time-limit S` ends near S: the whole command, beside CPU-bound busy loops.

Instance: the held-out stress cluster of `stress_instances.py` (40 PMs × 8 H100-80GB, 381 running VMs,
6 pending) solved with `--neighborhood all`, by default with the default goal (an admission call,
then consolidation: several calls) and with `--goal paper --calls 1` (one call). Each command is a
fresh process of a checkout (`benchmarks/checkouts.py`), this one and `--previous PATH` in turn, with
`--busy` busy loops running beside it (2: both cores of a 2-core machine taken). Per version, goal and
limit: the command's wall time (median and max of `--repeats`), how far past S it ended, its calls,
the VMs it admitted and Eq. (5) after the plan.

    python -m benchmarks.solver.solve_deadline --previous /tmp/before             # S = 5, 3 repeats
    python -m benchmarks.solver.solve_deadline --previous /tmp/before --limits 1,5,10 --busy 0
Prints a table and writes benchmarks/results/solve_deadline.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

from benchmarks import RESULTS, ROOT
from benchmarks.checkouts import run_command
from benchmarks.publish import write_json
from benchmarks.solver.time_limit import busy_loops
from benchmarks.stress_instances import h100_cluster

GOALS = {"default": (), "paper, 1 call": ("--goal", "paper", "--calls", "1")}


def one(root: Path, snapshot: Path, limit: float, goal: tuple[str, ...], busy: int) -> dict[str, Any]:
    args = ["solve", str(snapshot), "--neighborhood", "all", "--time-limit", f"{limit:g}", "--json", *goal]
    with busy_loops(busy):
        ran = run_command(root, args, timeout_s=600)
    doc = ran.document() if ran.stdout.strip() else {}
    return {
        "wall_s": ran.wall_s,
        "exit": ran.code,
        "calls": len(doc.get("calls", [])),
        "admitted": len(doc.get("admitted", [])),
        "objective_after": doc.get("objective", {}).get("after"),
        "time": doc.get("time"),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--previous", type=Path, required=True, help="checkout of the code before")
    ap.add_argument("--limits", default="5", help="comma-separated --time-limit values (s)")
    ap.add_argument("--busy", type=int, default=2, help="busy loops beside each command")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=RESULTS / "solve_deadline.json")
    args = ap.parse_args(argv)
    snapshot = Path(tempfile.mkdtemp()) / "h100-40.json"
    snapshot.write_text(json.dumps(h100_cluster(40, 381, 6)))
    versions = {"before": args.previous.resolve(), "after": ROOT}
    rows = []
    for limit in (float(x) for x in args.limits.split(",")):
        for goal, extra in GOALS.items():
            runs: dict[str, list[dict[str, Any]]] = {v: [] for v in versions}
            for _ in range(args.repeats):  # the versions in turn, so that both meet the same minutes
                for name, root in versions.items():
                    runs[name].append(one(root, snapshot, limit, extra, args.busy))
            for name, rs in runs.items():
                walls = [r["wall_s"] for r in rs]
                row = {"version": name, "goal": goal, "limit_s": limit, "busy": args.busy, "runs": rs}
                row |= {"median_s": statistics.median(walls), "max_s": max(walls)}
                rows.append(row)
                seen = {k: sorted({r[k] for r in rs}) for k in ("calls", "admitted", "objective_after")}
                print(
                    f"{name:6} {goal:14} S={limit:g}: wall median {row['median_s']:.2f} s, max"
                    f" {row['max_s']:.2f} (S + {row['max_s'] - limit:.2f}); calls {seen['calls']},"
                    f" admitted {seen['admitted']}, Eq. (5) after {seen['objective_after']}",
                    flush=True,
                )
    write_json(args.out, {"instance": "h100_cluster(40, 381, 6), --neighborhood all", "rows": rows})
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
