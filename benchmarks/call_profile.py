"""Where a recorded call's solve time goes: presolve, the main search, HiGHS's sub-MIP heuristics.

Each recorded call (default: the 60 recorded 128-PM calls) is solved in this process by HiGHS as
the simulations solve it (deterministic, one thread, at most 100 branch-and-bound nodes, the package's
options), with HiGHS's log written to a temporary file. Its closing "Timing" block splits the solve
into presolve and solve, each into the main MIP and the sub-MIPs of HiGHS's primal heuristics
(RINS, RENS and the like); the LP iterations split into separation, heuristics and strong branching.
Calls are grouped by outcome: those whose optimum beats the current placement (improving) and those
that prove it optimal (unchanged).

    python -m benchmarks.call_profile                       # the 60 recorded 128-PM calls
    python -m benchmarks.call_profile --calls benchmarks/results/solver_replay_calls.json

Prints a table and writes benchmarks/results/call_profile.json.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.highs_options import OptionedHighs
from benchmarks.publish import results_file, write_json
from benchmarks.solver.solver_replay import recorded_call_model
from origamig.bilp.backends.base import Limits

ROOT = Path(__file__).resolve().parent
CALLS = ROOT / "results" / "solver_replay-full_calls.json"
RESULTS = ROOT / "results" / "call_profile.json"
LIMITS = Limits(time_limit_s=None, threads=1, deterministic=True, work_limit=100, kill_at_deadline=False)
PARTS = ("presolve_mip_s", "presolve_submip_s", "solve_mip_s", "solve_submip_s")
_NUMBER = r"([0-9.]+)"


def parse_timing(log: str) -> dict[str, float]:
    """The closing "Timing" block and LP-iteration split of a HiGHS MIP log, in seconds and counts."""
    out: dict[str, float] = {}
    block = log[log.rindex("Timing") :] if "Timing" in log else ""
    total = re.search(r"Timing\s+" + _NUMBER, block)
    out["total_s"] = float(total.group(1)) if total else 0.0
    for phase in ("Presolve", "Solve"):
        part = re.search(
            _NUMBER + rf" \({phase}\)\s+MIP\s+time \[calls\] = {_NUMBER} \[\d+\]\s+"
            rf"subMIP time \[calls\] = {_NUMBER} \[(\d+)\]",
            block,
        )
        key = phase.lower()
        out[f"{key}_mip_s"] = float(part.group(2)) if part else 0.0
        out[f"{key}_submip_s"] = float(part.group(3)) if part else 0.0
        out[f"{key}_submip_calls"] = float(part.group(4)) if part else 0.0
    for name, label in (("lp_iterations", "LP iterations"), ("nodes", "Nodes")):
        hit = re.search(rf"{label}\s+(\d+)", block)
        out[name] = float(hit.group(1)) if hit else 0.0
    for name, label in (("separation", "separation"), ("heuristics", "heuristics"), ("strong", "strong br.")):
        hit = re.search(rf"(\d+) \({re.escape(label)}\)", block)
        out[f"lp_iterations_{name}"] = float(hit.group(1)) if hit else 0.0
    return out


def profile(call: dict[str, Any], folder: Path, index: int) -> dict[str, Any]:
    """One recorded call solved as the simulations solve it, with HiGHS's timing split."""
    compiled = recorded_call_model(call)
    log = folder / f"call{index}.log"
    backend = OptionedHighs({"output_flag": True, "log_to_console": False, "log_file": str(log)})
    t0 = time.process_time()
    result = backend.solve_in_process(compiled, compiled.hint, LIMITS)
    cpu = time.process_time() - t0
    start = compiled.objective_of(compiled.hint)
    improving = result.objective is not None and result.objective > start + 0.5 * compiled.objective_step
    return {
        "call": index,
        "columns": compiled.size["columns"],
        "cpu_s": cpu,
        "proved": result.proved_optimal,
        "improving": improving,
        **parse_timing(log.read_text()),
    }


def _group(rows: list[dict[str, Any]]) -> dict[str, float]:
    total = sum(r["total_s"] for r in rows)
    out = {"calls": float(len(rows)), "cpu_s": sum(r["cpu_s"] for r in rows), "highs_s": total}
    for part in PARTS:
        out[part] = sum(r[part] for r in rows)
    out["nodes"] = sum(r["nodes"] for r in rows)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=Path, default=CALLS, help="a recorded calls file (solver_replay)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    args.out = results_file(args.out, RESULTS)
    calls = json.loads(args.calls.read_text())["calls"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, call in enumerate(calls):
            row = profile(call, Path(tmp), i)
            rows.append(row)
            print(
                f"call {i:3}: {row['cpu_s']:6.2f} s CPU, {'improving' if row['improving'] else 'unchanged'}"
                f", presolve {row['presolve_mip_s'] + row['presolve_submip_s']:.2f} s, sub-MIPs "
                f"{row['presolve_submip_s'] + row['solve_submip_s']:.2f} s, {row['nodes']:.0f} nodes",
                flush=True,
            )
    groups = {
        "all": _group(rows),
        "improving": _group([r for r in rows if r["improving"]]),
        "unchanged": _group([r for r in rows if not r["improving"]]),
    }
    print(f"\n{'calls':10} {'n':>3} {'CPU s':>8} {'HiGHS s':>8} " + " ".join(f"{p:>18}" for p in PARTS))
    for name, g in groups.items():
        print(
            f"{name:10} {g['calls']:3.0f} {g['cpu_s']:8.1f} {g['highs_s']:8.1f} "
            + " ".join(f"{g[p]:18.1f}" for p in PARTS)
        )
    write_json(
        args.out,
        {"calls_file": str(args.calls), "limits": "deterministic, 100 nodes", "groups": groups, "rows": rows},
    )
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
