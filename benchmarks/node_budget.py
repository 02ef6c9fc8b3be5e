"""Does a larger node budget change a call HiGHS proves within the default budget? (It must not.)

Each recorded call (default: the 60 recorded 128-PM calls) is solved deterministically on one
thread with the simulations' budget of 100 branch-and-bound nodes and with 10x that. A call proved
within the smaller budget must come back with the very same placement from the larger one (HiGHS
is deterministic and a node limit only ends its search); for the calls that stop at the smaller
budget, the table shows what the larger one reaches.

    python -m benchmarks.node_budget                                   # the 60 recorded 128-PM calls
    python -m benchmarks.node_budget --calls benchmarks/results/solver_replay_calls.json --budgets 100,1000

Prints one line per call that is not proved or differs, a summary, and writes
benchmarks/results/node_budget.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.publish import results_file, write_json
from benchmarks.solver.solver_replay import recorded_call_model
from origamig.bilp.backends.base import Limits, get_backend

ROOT = Path(__file__).resolve().parent
CALLS = ROOT / "results" / "solver_replay-full_calls.json"
RESULTS = ROOT / "results" / "node_budget.json"


def compare(call: dict[str, Any], small: int, large: int) -> dict[str, Any]:
    """One recorded call solved with both budgets: proofs, objectives, whether the placements match."""
    compiled = recorded_call_model(call)
    backend = get_backend("highs")
    out: dict[str, Any] = {"t_s": call.get("t_s"), "columns": compiled.size["columns"]}
    answers = {}
    for nodes in (small, large):
        limits = Limits(
            time_limit_s=None, threads=1, deterministic=True, work_limit=nodes, kill_at_deadline=False
        )
        t0 = time.process_time()
        answers[nodes] = backend.solve_in_process(compiled, compiled.hint, limits)
        r = answers[nodes]
        out[str(nodes)] = {
            "proved": r.proved_optimal,
            "objective": r.objective,
            "cpu_s": time.process_time() - t0,
        }
    a, b = answers[small], answers[large]
    out["same_placement"] = bool(a.x is not None and b.x is not None and np.array_equal(a.x, b.x))
    return out


def _word(solve: dict[str, Any]) -> str:
    return "proved" if solve["proved"] else "not proved"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=Path, default=CALLS, help="a recorded calls file (solver_replay)")
    ap.add_argument("--budgets", default="100,1000", help="SMALL,LARGE node budgets (default 100,1000)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    args.out = results_file(args.out, RESULTS)
    small, large = (int(x) for x in args.budgets.split(","))
    calls = json.loads(args.calls.read_text())["calls"]
    rows = []
    for i, call in enumerate(calls):
        row = compare(call, small, large)
        rows.append(row)
        a, b = row[str(small)], row[str(large)]
        if not a["proved"] or not row["same_placement"]:
            print(
                f"call {i:3}: {small} nodes {_word(a)} at {a['objective']:g}; "
                f"{large} nodes {_word(b)} at {b['objective']:g}; "
                f"same placement: {row['same_placement']}",
                flush=True,
            )
    proved = [r for r in rows if r[str(small)]["proved"]]
    summary = {
        "calls": len(rows),
        "proved_with_small": len(proved),
        "proved_and_identical_with_large": sum(r["same_placement"] for r in proved),
        "unproved_with_small": len(rows) - len(proved),
        "unproved_better_with_large": sum(
            r[str(large)]["objective"] > r[str(small)]["objective"] + 1e-6 for r in rows if r not in proved
        ),
    }
    print(
        f"{summary['calls']} calls: {summary['proved_with_small']} proved within {small} nodes, "
        f"{summary['proved_and_identical_with_large']} of them with the very same placement at {large}; "
        f"{summary['unproved_with_small']} not proved within {small}, "
        f"{summary['unproved_better_with_large']} of them better at {large}"
    )
    doc = {"calls_file": str(args.calls), "budgets": [small, large], "summary": summary, "rows": rows}
    write_json(args.out, doc)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
