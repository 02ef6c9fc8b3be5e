"""The effort budget of deterministic calls: what HiGHS reaches after K progress checks, and at what cost.

Replays recorded OrigaMIG calls (snapshots of their neighborhoods, as `solver_replay.py` records
them). Each call's model is built and its LP bound tried first, as every call does; the calls the
bound leaves open are solved twice, side by side, by HiGHS on one thread in this process:

  before   the deterministic solve of the results before: 100 branch-and-bound nodes, restarts and
           the root reduced-cost heuristic on, the current placement as start
  budget   the deterministic call now (`Limits.effort_limit`, docs/bilp.md#effort-budget): the fast
           primal answer as start, no restarts, no root reduced-cost heuristic, solved to the node
           budget with its trajectory recorded — the incumbent and the CPU time at every progress
           check — so that the answer and cost at any budget K are read off one run (the search up
           to check K is the same whatever the budget; a budgeted solve at `--check` checks is run
           too, and must match what the trajectory says)

Per budget K: HiGHS's CPU seconds over the calls, and on how many calls (and on how many of the
calls that improve) the answer reaches the objective of `before`.

    python -m benchmarks.solver.effort_budget                  # the 60 recorded 128-PM calls (stored)
    python -m benchmarks.solver.effort_budget --quick          # record a 32-PM, 48 h run's calls first
Prints a table and writes benchmarks/results/effort_budget.json (`--out`).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import RESULTS
from benchmarks.publish import write_json
from benchmarks.solver.solver_replay import Setup, record
from origamig.bilp import Limits, build_model, compile_model, no_change_proof, restrict
from origamig.bilp.backends.highs import HighsBackend, _EffortBudget, highs_lp, new_highs
from origamig.bilp.region_solve import _primal_start
from origamig.snapshot.document import parse_snapshot

STORED = RESULTS / "solver_replay-full_calls.json"  # 60 calls of a 128-PM run, hours 40–56
QUICK = Setup(pms=32, load=0.85, seed=1, record_from_h=0.0, horizon_h=48.0, calls=0, record_work_limit=100.0)
BUDGETS = (5, 10, 15, 20, 40)
BEFORE = Limits(time_limit_s=None, threads=1, deterministic=True, work_limit=100)
BUDGET = Limits(time_limit_s=None, threads=1, deterministic=True, work_limit=100, effort_limit=10**9)


def solve(compiled: Any, start: np.ndarray, limits: Limits, trajectory: bool) -> dict[str, Any]:
    """HiGHS with the backend's options for `limits`; with `trajectory`, (incumbent, CPU s) at every
    progress check (the budget's own callback, counting only)."""
    import highspy

    h = new_highs(highspy)
    HighsBackend()._apply_limits(h, compiled, limits)
    h.passModel(highs_lp(highspy, compiled))
    first = highspy.HighsSolution()
    first.col_value = list(map(float, start))
    first.value_valid = True
    h.setSolution(first)
    _EffortBudget.on(h, limits)  # as the backend's run: a budgeted solve stops at its checks
    checks: list[tuple[float, float]] = []
    t0 = time.process_time()
    if trajectory:
        h.cbMipInterrupt += lambda e: checks.append((e.data_out.mip_primal_bound, time.process_time() - t0))
    h.run()
    cpu = time.process_time() - t0
    info = h.getInfo()
    best = compiled.objective_of(start)
    if info.primal_solution_status == 2:
        best = max(best, compiled.objective_of(np.asarray(h.getSolution().col_value)))
    return {"cpu_s": cpu, "objective": best, "checks": checks}


def at_budget(row: dict[str, Any], k: int) -> tuple[float, float]:
    """The budgeted answer and HiGHS's CPU time had the search stopped after `k` checks."""
    run = row["budget"]
    if k >= len(run["checks"]):
        return run["objective"], run["cpu_s"]
    best = row["repair"]
    for bound, _ in run["checks"][: k + 1]:
        if bound < 1e300:
            best = max(best, bound)
    return best, run["checks"][k][1]


def calls_of(args: argparse.Namespace) -> list[dict[str, Any]]:
    if args.quick:
        print("recording the calls of a 32-PM, 48 h run ...", flush=True)
        return record(QUICK)
    return json.loads(args.calls.read_text())["calls"]


def replay(call: dict[str, Any], check: int) -> dict[str, Any]:
    snap = parse_snapshot(call["snapshot"])
    dc = snap.datacenter()
    region = restrict(dc, range(len(dc.pms)), list(snap.pending))
    model = build_model(region, snap.weights)
    compiled = compile_model(model)
    proof = no_change_proof(compiled, BEFORE)
    row: dict[str, Any] = {"pms": len(region.pms), "vms": len(region.vms), "proved_by_bound": proof.proved}
    if proof.proved:
        return row
    start, _ = _primal_start(dc, region, snap.weights, model, compiled, proof)
    row |= {"start": compiled.objective_of(compiled.hint), "repair": compiled.objective_of(start)}
    row["before"] = solve(compiled, compiled.hint, BEFORE, trajectory=False)
    row["budget"] = solve(compiled, start, BUDGET, trajectory=True)
    limited = Limits(time_limit_s=None, threads=1, deterministic=True, work_limit=100, effort_limit=check)
    row["checked"] = {"k": check, "objective": solve(compiled, start, limited, False)["objective"]}
    return row


def table(rows: list[dict[str, Any]]) -> dict[str, Any]:
    open_ = [r for r in rows if not r["proved_by_bound"]]
    better = [r for r in open_ if r["before"]["objective"] > r["start"] + 1e-6]
    out: dict[str, Any] = {
        "calls": len(rows),
        "proved_by_bound": len(rows) - len(open_),
        "solved": len(open_),
        "improving": len(better),
        "before_cpu_s": sum(r["before"]["cpu_s"] for r in open_),
        "repair_reaches": sum(r["repair"] >= r["before"]["objective"] - 1e-6 for r in better),
        "budgets": [],
    }
    for k in (*BUDGETS, None):
        answers = [at_budget(r, 10**9 if k is None else k) for r in open_]
        same = [a >= r["before"]["objective"] - 1e-6 for (a, _), r in zip(answers, open_, strict=True)]
        out["budgets"].append(
            {
                "k": k,
                "cpu_s": sum(c for _, c in answers),
                "same": sum(same),
                "same_improving": sum(s for s, r in zip(same, open_, strict=True) if r in better),
            }
        )
    out["trajectory_matches_budgeted_solve"] = all(
        abs(at_budget(r, r["checked"]["k"])[0] - r["checked"]["objective"]) < 1e-6 for r in open_
    )
    return out


def show(t: dict[str, Any]) -> None:
    print(
        f"{t['calls']} calls: {t['proved_by_bound']} proved by the LP bound, {t['solved']} solved,"
        f" {t['improving']} improving (the repair alone reaches `before`'s optimum on {t['repair_reaches']})"
    )
    print(f"  before: HiGHS {t['before_cpu_s']:.1f} CPU s")
    for b in t["budgets"]:
        k = "no limit" if b["k"] is None else f"K = {b['k']}"
        print(
            f"  budget {k:>9}: {b['cpu_s']:7.1f} CPU s; `before`'s objective on {b['same']}/{t['solved']}"
            f" (improving {b['same_improving']}/{t['improving']})"
        )
    print(f"  a budgeted solve gives what the trajectory says: {t['trajectory_matches_budgeted_solve']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--quick", action="store_true", help="record a 32-PM, 48 h run's calls and replay them all"
    )
    ap.add_argument("--calls", type=Path, default=STORED, help="a recorded calls file (solver_replay.py)")
    ap.add_argument(
        "--check", type=int, default=10, help="the budget solved for real to check the trajectory"
    )
    ap.add_argument("--out", type=Path, default=RESULTS / "effort_budget.json")
    args = ap.parse_args(argv)
    calls = calls_of(args)
    rows = []
    for n, call in enumerate(calls):
        rows.append(replay(call, args.check))
        if n % 20 == 0:
            print(f"  {n + 1}/{len(calls)} calls", flush=True)
    summary = table(rows)
    show(summary)
    key = "quick" if args.quick else "stored"
    doc = json.loads(args.out.read_text()) if args.out.exists() else {}
    doc[key] = {"source": "32-PM, 48 h run" if args.quick else str(args.calls.name), **summary, "rows": rows}
    write_json(args.out, doc)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
