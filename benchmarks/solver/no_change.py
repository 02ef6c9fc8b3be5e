"""No-change proofs: the LP bound before the MIP, on the calls of an OrigaMIG simulation.

Records the calls of a deterministic OrigaMIG simulation (as `solver_replay.py` does: each call's
neighborhood as a snapshot) and solves each one twice in the same run, in alternating order: the MIP
alone (`solve_region(..., prove_first=False)`, the previous version) and with the LP bound tried
first (the default, docs/model.md#no-change-proof). HiGHS, one thread, 10 s limit. Per call: wall
and CPU time of each, the termination, the optimum, the start's objective, the LP bound and the root
gap (LP bound − best objective found). Checks, counted in the table: where both prove their
optimum, it is the same, and the bound proves "no change" only where the optimum is the start's.

    python -m benchmarks.solver.no_change --quick                 # 32 PMs, 12 h: every call
    python -m benchmarks.solver.no_change --full                  # 128 PMs, calls in 40–44 h
    python -m benchmarks.solver.no_change --replay FILE.json      # replay a recorded calls file only
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks import RESULTS
from benchmarks.publish import publish, quantile, results_file, scale_parser, write_json
from benchmarks.solver.solver_replay import Setup, record
from origamig.bilp import Limits, build_model, compile_model, no_change_proof, restrict, solve_region
from origamig.bilp.backends.base import BOUND
from origamig.bilp.backends.cpu_time import cpu_seconds
from origamig.snapshot.document import parse_snapshot

QUICK = Setup(pms=32, load=0.85, seed=1, record_from_h=0.0, horizon_h=12.0, calls=0, record_work_limit=100.0)
FULL = Setup(pms=128, load=0.85, seed=1, record_from_h=40.0, horizon_h=44.0, calls=0, record_work_limit=100.0)
LIMITS = Limits(time_limit_s=10.0, threads=1)
EPS = 1e-6
VERSIONS = ("mip", "bound+mip")


def replay(call: dict[str, Any], order: int) -> dict[str, Any]:
    """Solve one recorded call both ways (the order alternates with `order`)."""
    snap = parse_snapshot(call["snapshot"])
    out: dict[str, Any] = {"t_s": call["t_s"], "kind": call["kind"]}
    out |= {"pms": len(snap.pms), "vms": len(snap.vms)}
    dc = snap.datacenter()
    pms = range(len(dc.pms))
    compiled = compile_model(build_model(restrict(dc, pms, snap.pending), snap.weights))
    proof = no_change_proof(compiled, LIMITS)
    out |= {"columns": compiled.size["columns"], "start": proof.start, "lp_bound": proof.bound}
    solves: dict[str, Any] = {}
    for version in VERSIONS[::-1] if order % 2 else VERSIONS:
        cpu0 = cpu_seconds()
        t0 = time.perf_counter()
        sol = solve_region(dc, pms, snap.pending, snap.weights, limits=LIMITS, prove_first=version != "mip")
        res = sol.result
        solves[version] = {
            "wall_s": time.perf_counter() - t0,  # the whole call: build, compile, bound, solve, decode
            "cpu_s": cpu_seconds() - cpu0,  # with the solver's helper process
            "termination": res.termination,
            "proved": res.proved_optimal,
            "objective": res.objective,
            "bound_s": sol.timings["bound_s"],
        }
    out["solves"] = solves
    best = max(s["objective"] for s in solves.values())
    out["root_gap"] = proof.bound - best
    # Known to end with no change: some version proved its optimum, and it is the start's value.
    out["no_change"] = any(x["proved"] for x in solves.values()) and best <= proof.start + EPS
    return out


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def times(version: str, which: list[dict[str, Any]]) -> list[float]:
        return [r["solves"][version]["wall_s"] for r in which]

    unchanged = [r for r in rows if r["no_change"]]
    proved = [r for r in rows if r["solves"]["bound+mip"]["termination"] == BOUND]
    per: dict[str, Any] = {}
    for version in VERSIONS:
        all_t, unch_t = times(version, rows), times(version, unchanged)
        per[version] = {
            "median_s": statistics.median(all_t),
            "p95_s": quantile(all_t, 0.95),
            "max_s": max(all_t),
            "total_s": sum(all_t),
            "unchanged_total_s": sum(unch_t),
            "proved": sum(r["solves"][version]["proved"] for r in rows),
            "cpu_median_s": statistics.median(r["solves"][version]["cpu_s"] for r in rows),
            "cpu_p95_s": quantile([r["solves"][version]["cpu_s"] for r in rows], 0.95),
        }
    ratios = [r["solves"]["bound+mip"]["wall_s"] / r["solves"]["mip"]["wall_s"] for r in rows]
    gaps = [r["root_gap"] for r in rows]
    unch_gaps = [r["root_gap"] for r in unchanged]
    return {
        "calls": len(rows),
        "unchanged_calls": len(unchanged),
        "proved_by_bound": len(proved),
        "versions": per,
        "median_ratio": statistics.median(ratios),
        "root_gap_median": statistics.median(gaps),
        "root_gap_max": max(gaps),
        "root_gap_unchanged_median": statistics.median(unch_gaps) if unch_gaps else None,
        "root_gap_unchanged_max": max(unch_gaps) if unch_gaps else None,
        "objective_mismatches": sum(  # among calls both versions proved (a time limit can cut either)
            abs(r["solves"]["mip"]["objective"] - r["solves"]["bound+mip"]["objective"]) > EPS
            for r in rows
            if r["solves"]["mip"]["proved"] and r["solves"]["bound+mip"]["proved"]
        ),
        "wrong_proofs": sum(not r["no_change"] for r in proved),
    }


def print_table(doc: dict[str, Any]) -> None:
    s = doc["summary"]
    print(f"\nNo-change proofs — {doc['scale']}")
    print(
        f"{s['calls']} calls, {s['unchanged_calls']} proved to end with nothing better than the start, "
        f"{s['proved_by_bound']} proved so by the LP bound (wrong proofs: {s['wrong_proofs']}, "
        f"objective mismatches: {s['objective_mismatches']})"
    )
    head = f"{'version':10} {'median s':>9} {'p95 s':>7} {'max s':>7} {'total s':>8} {'unch. s':>8}"
    print(head + f" {'proved':>7} {'CPU median / p95 s':>19}")
    for version, v in s["versions"].items():
        print(
            f"{version:10} {v['median_s']:9.3f} {v['p95_s']:7.2f} {v['max_s']:7.2f} {v['total_s']:8.1f} "
            f"{v['unchanged_total_s']:8.1f} {v['proved']:4}/{s['calls']} "
            f"{v.get('cpu_median_s', float('nan')):10.3f} / {v.get('cpu_p95_s', float('nan')):6.2f}"
        )
    print(f"median per-call time ratio bound+mip / mip: {s['median_ratio']:.3f}")
    unchanged = (
        f"median {s['root_gap_unchanged_median']:.1f}, max {s['root_gap_unchanged_max']:.1f}"
        if s["unchanged_calls"]
        else "none"
    )
    print(
        f"root gap (LP bound - best found): median {s['root_gap_median']:.1f}, max {s['root_gap_max']:.1f}; "
        f"on calls with no change: {unchanged}"
    )


def draw(doc: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = doc["calls"]
    fig, ax = plt.subplots(figsize=(6, 4))
    for flag, colour, label in ((True, "tab:green", "no change"), (False, "tab:blue", "improves")):
        pick = [r for r in rows if r["no_change"] is flag]
        ax.scatter(
            [r["solves"]["mip"]["wall_s"] for r in pick],
            [r["solves"]["bound+mip"]["wall_s"] for r in pick],
            s=12,
            c=colour,
            label=label,
        )
    times = [r["solves"][v]["wall_s"] for r in rows for v in VERSIONS]
    low, top = min([*times, 0.1]), max([*times, 0.1])
    ax.plot([low, top], [low, top], "k:", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("MIP alone: call wall time (s)")
    ax.set_ylabel("LP bound first: call wall time (s)")
    ax.set_title("No-change proofs, same calls, one run")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = scale_parser(__doc__, "32 PMs, 12 h, every call (default)", "128 PMs, the calls in 40-44 h")
    ap.add_argument("--out", type=Path, default=RESULTS / "no_change.json")
    args = ap.parse_args(argv)
    args.out = results_file(args.out, RESULTS / "no_change.json")
    setup = FULL if args.full else QUICK
    started = time.perf_counter()
    load = os.getloadavg()
    if args.replay:
        calls = json.loads(args.replay.read_text())["calls"]
        scale = f"replay of {args.replay} ({len(calls)} calls)"
    else:
        scale = (
            f"{setup.pms} PMs, load {setup.load}, seed {setup.seed}, deterministic (100 nodes) recording, "
            f"calls in {setup.record_from_h:g}-{setup.horizon_h:g} h; replay HiGHS 1 thread, 10 s limit"
        )
        print(scale, flush=True)
        calls = record(setup)
        calls_file = args.out.with_name(args.out.stem + "_calls.json")
        write_json(calls_file, {"setup": asdict(setup), "calls": calls})
        spent = time.perf_counter() - started
        print(f"recorded {len(calls)} calls in {spent:.0f} s -> {calls_file}", flush=True)
    rows = []
    for n, call in enumerate(calls):
        rows.append(replay(call, n))
        r = rows[-1]
        print(
            f"  call {n:3} ({r['pms']} PMs, {r['vms']} VMs) start={r['start']:g} lp={r['lp_bound']:.1f} "
            + " ".join(f"{k}={s['wall_s']:.2f}{'*' if s['proved'] else ''}" for k, s in r["solves"].items())
            + (" [bound]" if r["solves"]["bound+mip"]["termination"] == BOUND else ""),
            flush=True,
        )
    doc = {"scale": scale, "setup": asdict(setup), "summary": summarize(rows), "calls": rows}
    publish(doc, args.out, started, load, print_table, draw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
