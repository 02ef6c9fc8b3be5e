"""The PM-pattern bound against the LP bound and the MIP, call by call: how much of the root gap a bound
that sees whole PMs closes, and what it costs.

For each recorded call (default: the 60 recorded 128-PM calls) it solves the MIP to optimality (HiGHS,
one thread, as `root_gap` does), then computes the LP bound and the PM-pattern bound of
`benchmarks/pm_pattern_bound.py` to convergence, side by side in one run. The root gap is a bound minus
the MIP optimum; the pattern bound's share closed is 1 − its gap / the LP's gap.

    python -m benchmarks.pattern_bound                 # the 60 recorded 128-PM calls (about 30 min)
    python -m benchmarks.pattern_bound --every 10      # every 10th call
    python -m benchmarks.pattern_bound --cold          # also without warm-started pricing, side by side

Prints a line per call and the medians; writes benchmarks/results/pattern_bound.json.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks.pm_pattern_bound import pattern_bound
from benchmarks.publish import write_json
from benchmarks.root_gap import EXACT, calls_parser, parse_calls
from benchmarks.solver.solver_replay import snapshot_models
from origamig.bilp.backends import highs

RESULTS = Path(__file__).resolve().parent / "results" / "pattern_bound.json"


def measure(call: dict[str, Any], smoothing: float, cold: bool = False) -> dict[str, Any]:
    """The MIP optimum and its time, and the LP and pattern bounds of one recorded call (`cold`: the
    pattern bound also without warm-started pricing, side by side)."""
    model, compiled = snapshot_models(call["snapshot"])
    t = time.perf_counter()
    mip = highs.HighsBackend().solve_in_process(compiled, compiled.hint, EXACT)
    mip_s = time.perf_counter() - t
    assert mip.objective is not None
    pb = pattern_bound(model, compiled, smoothing=smoothing)
    lp_gap = pb.lp_bound - mip.objective
    gap = pb.bound - mip.objective
    row = {
        "t_s": call.get("t_s"),
        "pms": len(call["snapshot"]["pms"]),
        "vms": len(call["snapshot"]["vms"]),
        "columns": compiled.size["columns"],
        "start": compiled.objective_of(compiled.hint),
        "mip": mip.objective,
        "mip_proved": mip.proved_optimal,
        "mip_s": mip_s,
        "lp_bound": pb.lp_bound,
        "pattern_bound": pb.bound,
        "lp_gap": lp_gap,
        "pattern_gap": gap,
        "closed": 1.0 - gap / lp_gap if lp_gap > 1e-9 else None,
        "converged": pb.converged,
        "integral": pb.integral,
        "master": pb.master,
        "iterations": pb.iterations,
        "patterns": pb.patterns,
        "pricing_mips": pb.pricing_mips,
        "pattern_s": pb.wall_s,
        "pricing_s": pb.pricing_s,
    }
    if cold:
        unwarmed = pattern_bound(model, compiled, smoothing=smoothing, warm=False)
        row.update(cold_s=unwarmed.wall_s, cold_rounds=unwarmed.iterations, cold_bound=unwarmed.bound)
    return row


def main() -> None:
    ap = calls_parser(__doc__.splitlines()[0], RESULTS)
    ap.add_argument("--smoothing", type=float, default=0.9, help="weight of the best multipliers so far")
    ap.add_argument("--cold", action="store_true", help="also without warm-started pricing, side by side")
    args, calls = parse_calls(ap)
    rows = []
    for i, call in enumerate(calls):
        row = measure(call, args.smoothing, args.cold)
        rows.append(row)
        print(
            f"call {i:3} ({row['pms']} PMs, {row['columns']} columns): "
            f"MIP {row['mip']:.1f} in {row['mip_s']:.2f} s; "
            f"LP gap {row['lp_gap']:.1f}, pattern gap {row['pattern_gap']:.2f} "
            f"({row['iterations']} rounds, {row['patterns']} patterns, {row['pattern_s']:.2f} s)",
            flush=True,
        )
    gapped = [r for r in rows if r["closed"] is not None]
    summary = {
        "calls": len(rows),
        "smoothing": args.smoothing,
        "converged": sum(r["converged"] for r in rows),
        "integral": sum(r["integral"] for r in rows),
        "lp_gap_median": statistics.median(r["lp_gap"] for r in rows),
        "pattern_gap_median": statistics.median(r["pattern_gap"] for r in rows),
        "pattern_gap_max": max(r["pattern_gap"] for r in rows),
        "closed_median": statistics.median(r["closed"] for r in gapped) if gapped else None,
        "closed_min": min(r["closed"] for r in gapped) if gapped else None,
        "under_one_step": sum(r["pattern_gap"] < 1.0 for r in rows),
        "mip_s_median": statistics.median(r["mip_s"] for r in rows),
        "mip_s_max": max(r["mip_s"] for r in rows),
        "pattern_s_median": statistics.median(r["pattern_s"] for r in rows),
        "pattern_s_max": max(r["pattern_s"] for r in rows),
        "iterations_median": statistics.median(r["iterations"] for r in rows),
        "lp_gap_total": sum(r["lp_gap"] for r in rows),
        "pattern_gap_total": sum(r["pattern_gap"] for r in rows),
    }
    if args.cold:
        summary["cold_s_median"] = statistics.median(r["cold_s"] for r in rows)
        summary["cold_over_warm_median"] = statistics.median(r["cold_s"] / r["pattern_s"] for r in rows)
        summary["cold_iterations_median"] = statistics.median(r["cold_rounds"] for r in rows)
    print(
        f"\n{len(rows)} calls: root gap median LP {summary['lp_gap_median']:.1f} -> pattern "
        f"{summary['pattern_gap_median']:.2f} (max {summary['pattern_gap_max']:.2f}); "
        f"{summary['under_one_step']} of {len(rows)} within one objective step of the optimum; "
        f"the master's solution integral (a proved optimal placement) on {summary['integral']}"
    )
    print(
        f"time median / max: MIP to proof {summary['mip_s_median']:.2f} / {summary['mip_s_max']:.2f} s, "
        f"pattern bound {summary['pattern_s_median']:.2f} / {summary['pattern_s_max']:.2f} s"
    )
    if args.cold:
        print(
            f"without warm-started pricing: median {summary['cold_s_median']:.2f} s, "
            f"{summary['cold_over_warm_median']:.2f}x the warm-started time (median per call)"
        )
    write_json(args.out, {"calls_file": str(args.calls), "summary": summary, "rows": rows})
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
