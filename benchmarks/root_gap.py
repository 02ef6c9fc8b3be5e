"""Where the LP relaxation's gap sits: the objective by variable family, LP optimum against MIP optimum.

For each recorded call (default: the 60 recorded 128-PM calls) the LP relaxation and the MIP are
solved to optimality (HiGHS, one thread) and the difference of their objectives is split by the
model's variable families (docs/model.md): `phi` and `gamma` (PMs and GPUs switched off), `q` (the
GPUs' configurations, with their free-start credit), `mig` and `omega` (migrations), `x` (admissions).
A positive share is what the LP gains there over the integer optimum; the families sum to the gap.
This says which part of the model a stronger formulation or bound has to tighten.

It also counts the binary columns that reduced-cost fixing at the LP's duals could fix even with the
MIP optimum known (`fixable_at_optimum`: holding the column at its other value drops the Lagrangian
bound of `bilp/bound.py` below the optimum plus one step), which says how much fixing columns from
the LP before the MIP could shrink a proof.

    python -m benchmarks.root_gap                     # the 60 recorded 128-PM calls
    python -m benchmarks.root_gap --every 6           # every 6th call

Prints a line per call and the totals; writes benchmarks/results/root_gap.json.
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.publish import results_file, write_json
from benchmarks.solver.solver_replay import recorded_call_model
from origamig.bilp import Limits
from origamig.bilp.backends import highs
from origamig.bilp.bound import lp_terms

ROOT = Path(__file__).resolve().parent
CALLS = ROOT / "results" / "solver_replay-full_calls.json"
RESULTS = ROOT / "results" / "root_gap.json"
EXACT = Limits(time_limit_s=120.0, threads=1, kill_at_deadline=False)


def lp_solution(compiled: Any) -> tuple[np.ndarray, np.ndarray]:
    """The LP relaxation's optimal solution and row duals (HiGHS simplex)."""
    import highspy

    h = highs.new_highs(highspy)
    h.setOptionValue("output_flag", False)
    h.passModel(highs.highs_lp(highspy, compiled, relaxed=True))
    h.run()
    solution = h.getSolution()
    return np.asarray(solution.col_value, dtype=float), np.asarray(solution.row_dual, dtype=float)


def _binary(compiled: Any) -> np.ndarray:
    """Which columns are binaries."""
    return (compiled.col_lo == 0) & (compiled.col_hi == 1) & compiled.integer.astype(bool)


def fixable_binaries(compiled: Any, duals: np.ndarray, optimum: float) -> int:
    """Binary columns that reduced-cost fixing could fix knowing `optimum`: held at the value they do
    not take in the bound, the Lagrangian bound of the LP's duals falls below optimum + one step."""
    target = optimum + compiled.objective_step - 1e-6
    bound, reduced, term = lp_terms(compiled, duals)
    binary = _binary(compiled)
    other = np.where(reduced > 0, compiled.col_lo, compiled.col_hi)  # the value the bound does not take
    return int(np.sum(binary & (bound - term + reduced * other < target)))


def split(call: dict[str, Any]) -> dict[str, Any]:
    """The LP − MIP objective difference of one recorded call, by variable family."""
    compiled = recorded_call_model(call)
    families = [var.parent_component().name for var in compiled.columns]
    x_lp, duals = lp_solution(compiled)
    mip = highs.HighsBackend().solve_in_process(compiled, compiled.hint, EXACT)
    assert mip.x is not None and mip.objective is not None
    by_family: collections.Counter[str] = collections.Counter()
    for j, family in enumerate(families):
        by_family[family] += float(compiled.c[j] * (x_lp[j] - mip.x[j]))
    return {
        "t_s": call.get("t_s"),
        "columns": compiled.size["columns"],
        "lp": compiled.objective_of(x_lp),
        "mip": mip.objective,
        "mip_proved": mip.proved_optimal,
        "start": compiled.objective_of(compiled.hint),
        "gap": compiled.objective_of(x_lp) - mip.objective,
        "binaries": int(np.sum(_binary(compiled))),
        "fixable_at_optimum": fixable_binaries(compiled, duals, mip.objective),
        "by_family": {k: v for k, v in sorted(by_family.items()) if abs(v) > 1e-9},
    }


def calls_parser(description: str, results: Path) -> argparse.ArgumentParser:
    """The options of a benchmark over recorded calls: --calls, --every and --out."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--calls", type=Path, default=CALLS, help="a recorded calls file (solver_replay)")
    ap.add_argument("--every", type=int, default=1, help="take every n-th call (default: all)")
    ap.add_argument("--out", type=Path, default=results)
    return ap


def parse_calls(ap: argparse.ArgumentParser) -> tuple[argparse.Namespace, list[dict[str, Any]]]:
    """The parsed options (--out made a results file) and the recorded calls they choose."""
    args = ap.parse_args()
    args.out = results_file(args.out, ap.get_default("out"))
    return args, json.loads(args.calls.read_text())["calls"][:: max(1, args.every)]


def main() -> None:
    args, calls = parse_calls(calls_parser(__doc__.splitlines()[0], RESULTS))
    rows = []
    total: collections.Counter[str] = collections.Counter()
    for i, call in enumerate(calls):
        row = split(call)
        rows.append(row)
        total.update(row["by_family"])
        shares = ", ".join(f"{k} {v:+.1f}" for k, v in row["by_family"].items() if abs(v) >= 0.05)
        print(
            f"call {i:3}: gap {row['gap']:6.1f} = {shares}; fixable at the optimum "
            f"{row['fixable_at_optimum']} of {row['binaries']} binaries",
            flush=True,
        )
    gaps = [r["gap"] for r in rows]
    summary = {
        "calls": len(rows),
        "gap_median": float(np.median(gaps)),
        "gap_total": float(sum(gaps)),
        "by_family_total": {k: v for k, v in sorted(total.items()) if abs(v) > 1e-9},
        "mip_proved": sum(r["mip_proved"] for r in rows),
        "fixable_share_median": float(np.median([r["fixable_at_optimum"] / r["binaries"] for r in rows])),
        "fixable_share_hard_median": float(
            np.median([r["fixable_at_optimum"] / r["binaries"] for r in rows if r["gap"] >= 1] or [np.nan])
        ),
    }
    print(
        f"\n{len(rows)} calls, LP − MIP gap median {summary['gap_median']:.1f}, "
        f"total {summary['gap_total']:.1f}:"
    )
    for k, v in summary["by_family_total"].items():
        print(f"  {k:6} {v:+9.1f}")
    print(
        "binaries fixable by reduced cost at the optimum: median share "
        f"{summary['fixable_share_median']:.1%}, {summary['fixable_share_hard_median']:.1%} on calls "
        "with a gap of a unit or more"
    )
    write_json(args.out, {"calls_file": str(args.calls), "summary": summary, "rows": rows})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
