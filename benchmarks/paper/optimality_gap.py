"""Table 12 / Fig. 8 (paper §6.8): OrigaMIG against OPT, the full BILP over the whole data center.

OrigaMIG runs from an empty data center of 2x A100 PMs (80 cores, 512 GB) under the §6.8 workload:
Poisson arrivals at 2.1 per hour per 8 PMs (ρ = 0.74), 70% jobs (mean 2 h) / 30% tenants (24 h),
one or two A100 GIs per VM. Snapshots are taken every 4 h from 48 h to 96 h; a snapshot waits (up to
`settle_s`) for a moment with no call running and no VM queued, so that OrigaMIG's placement is
settled. At each snapshot OPT solves the BILP over every PM (every running VM stays placed) and both
placements are compared in Eq. (5): extra active PMs of OrigaMIG relative to OPT, and the relative
gap (OPT − OrigaMIG)/OPT. Runtimes: every OrigaMIG call of the run, every OPT solve (build +
compile + solve). M_max = 8 and 4 give the other points of Fig. 8(a).

    python -m benchmarks.paper.optimality_gap --quick # 8/16/32 PMs (M_max 16; 8, 4 at 8/16), 1 seed, each 8 h
    python -m benchmarks.paper.optimality_gap --full  # 8/16/32 PMs, 3 seeds, every 4 h, OPT limit 2 h
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import statistics
import sys
import textwrap
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import RESULTS
from benchmarks.paper_values import (
    CALL_TIME_LIMIT_S,
    FIG8A_EXTRA_ACTIVE_PMS_PCT,
    GAP_LOAD,
    ORIGAMIG_ARRIVAL,
    TABLE12_CALL_MEDIAN_S,
    TABLE12_EQ5_GAP_PCT,
    TABLE12_OPT_MEDIAN_S,
    TABLE12_VMS,
)
from benchmarks.publish import publish, quantile
from origamig.bilp import Limits
from origamig.cluster.catalog import default_catalog
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Weights
from origamig.judge.objective import evaluate, evaluate_dc
from origamig.policies.base import Work
from origamig.policies.opt import solve_opt
from origamig.policies.optimizer.policy import OrigaMIG
from origamig.sim.engine import Simulation
from origamig.sim.scenario import SimConfig, build_pms, requests_for
from origamig.sim.workload import HOUR
from origamig.solver_registry import backend_names
from origamig.study.runner import run_tasks

PAPER_POINTS = tuple(FIG8A_EXTRA_ACTIVE_PMS_PCT)  # the (PMs, M_max) pairs of Fig. 8(a)


@dataclass(frozen=True)
class Setup:
    """The scale of one run of this benchmark."""

    points: tuple[tuple[int, int], ...]  # (PMs, M_max)
    seeds: tuple[int, ...]
    first_h: float = 48.0
    last_h: float = 96.0
    every_h: float = 4.0
    settle_s: float = 1800.0  # how long a snapshot may wait for an empty queue and no running call
    solver: str = "highs"
    call_limit_s: float = CALL_TIME_LIMIT_S
    call_threads: int = 1
    opt_limit_s: float = 7200.0
    opt_threads: int = 2

    @property
    def snapshot_hours(self) -> list[float]:
        n = math.floor((self.last_h - self.first_h) / self.every_h + 1e-9) + 1
        return [self.first_h + i * self.every_h for i in range(n)]


QUICK = Setup(
    points=((8, 16), (16, 16), (32, 16), (16, 8), (8, 4), (16, 4)),
    seeds=(1,),
    every_h=8.0,
    call_limit_s=5.0,
    opt_limit_s=60.0,
)
FULL = Setup(points=PAPER_POINTS, seeds=(1, 2, 3))


@dataclass(frozen=True)
class StateSample:
    """The state of the run at one sampling time (a copy), and whether OrigaMIG had settled."""

    target_h: float
    taken_s: float
    settled: bool
    dc: DataCenter = field(repr=False)


@dataclass(frozen=True)
class RunOutcome:
    pms: int
    m_max: int
    seed: int
    snapshots: tuple[StateSample, ...]
    call_s: tuple[float, ...]
    requests: int
    wall_s: float


class _TimedOrigaMIG(OrigaMIG):
    """OrigaMIG that keeps the wall time of each of its calls (through the public `work`)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.call_s: list[float] = []

    def work(self, dc: DataCenter, now: float, locked: frozenset[int] = frozenset()) -> Work | None:
        done = super().work(dc, now, locked)
        if done is not None and done.pms:
            self.call_s.append(done.wall_s)
        return done


def gap_config(n_pms: int, horizon_h: float) -> SimConfig:
    """The §6.8 data center and workload: A100 PMs only, ρ = 0.74 (2.1 arrivals/h per 8 PMs)."""
    return SimConfig(load=GAP_LOAD, pms=n_pms, variant="a100-only", warmup_s=0.0, measure_s=horizon_h * HOUR)


def simulate(n_pms: int, m_max: int, seed: int, setup: Setup) -> RunOutcome:
    """Run OrigaMIG from an empty data center and copy the state at each snapshot."""
    config = gap_config(n_pms, setup.last_h + setup.settle_s / HOUR)
    catalog = default_catalog()
    pms = build_pms(config, catalog)
    requests = requests_for(config, seed, pms, catalog)
    policy = _TimedOrigaMIG(
        solver=setup.solver,
        time_limit_s=setup.call_limit_s,
        threads=setup.call_threads,
        m_max=m_max,
        arrival=ORIGAMIG_ARRIVAL,
    )
    step = 10.0
    tries = int(setup.settle_s // step)
    owner: dict[float, float] = {}
    for h in setup.snapshot_hours:
        for i in range(tries + 1):
            owner[h * HOUR + i * step] = h
    taken: dict[float, StateSample] = {}
    holder: list[Simulation] = []

    def on_sample(t: float, dc: DataCenter) -> None:
        h = owner[t]
        if h in taken:
            return
        settled = not holder[0].running and not dc.pending
        if settled or t >= h * HOUR + tries * step:
            taken[h] = StateSample(h, t, settled, dc.copy())

    sim = Simulation(pms, requests, policy, 0.0, config.measure_s, samples=sorted(owner), on_sample=on_sample)
    holder.append(sim)
    started = time.perf_counter()
    sim.run()
    return RunOutcome(
        n_pms,
        m_max,
        seed,
        tuple(taken[h] for h in sorted(taken)),
        tuple(policy.call_s),
        len(requests),
        time.perf_counter() - started,
    )


def compare(snap: StateSample, setup: Setup, weights: Weights) -> dict[str, Any]:
    """OPT from the snapshot's state against OrigaMIG's placement at that moment, in Eq. (5)."""
    dc = snap.dc
    sol = solve_opt(
        dc,
        weights,
        solver=setup.solver,
        limits=Limits(time_limit_s=setup.opt_limit_s, threads=setup.opt_threads),
    )
    vms = {**dc.vms, **dc.pending}
    origamig = evaluate_dc(dc, dc.placement, weights).value
    opt = evaluate(dc.pms, vms, sol.target, dc.placement, weights).value
    active_origamig = sum(1 for j in range(len(dc.pms)) if dc.is_active(j))
    active_opt = len({pl.pm for pl in sol.target.values()})
    bound = sol.result.bound
    return {
        "target_h": snap.target_h,
        "taken_h": snap.taken_s / HOUR,
        "settled": snap.settled,
        "vms": len(dc.vms),
        "pending": len(dc.pending),
        "gamma": {h: dc.gamma(h) for h in dc.classes},  # Γ_h (Eq. 17): ≥ θ = 1 triggers consolidation
        "active_pms_origamig": active_origamig,
        "active_pms_opt": active_opt,
        "extra_active_pms_pct": 100.0 * (active_origamig - active_opt) / max(1, active_opt),
        "eq5_origamig": origamig,
        "eq5_opt": opt,
        "eq5_gap_pct": 100.0 * (opt - origamig) / abs(opt) if opt else 0.0,
        "eq5_gap_to_bound_pct": 100.0 * (bound - origamig) / abs(bound) if bound else None,
        "opt_proved": sol.result.proved_optimal,
        "opt_s": sum(sol.timings.values()),
        "opt_solve_s": sol.result.wall_s,
        "opt_objective_matches": sol.result.objective is not None and abs(sol.result.objective - opt) < 1e-6,
        **{f"opt_{k}": v for k, v in sol.size.items()},
    }


def seed_gaps(rows: Sequence[dict[str, Any]]) -> tuple[float, float]:
    """Gaps of one seed over all its snapshots: extra active PMs Σ(OrigaMIG − OPT)/Σ OPT and the
    relative Eq. (5) gap Σ(OPT − OrigaMIG)/Σ OPT, both in %."""
    opt_pms = sum(r["active_pms_opt"] for r in rows)
    extra = sum(r["active_pms_origamig"] - r["active_pms_opt"] for r in rows)
    opt = sum(r["eq5_opt"] for r in rows)
    gap = sum(r["eq5_opt"] - r["eq5_origamig"] for r in rows)
    return 100.0 * extra / max(1, opt_pms), 100.0 * gap / abs(opt) if opt else 0.0


def summarize(
    point: tuple[int, int], call_s: Sequence[float], rows: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """One line of Table 12 / one point of Fig. 8: gaps of the worst seed (over all its snapshots,
    the paper's "worst-case gap"), the worst single snapshot, and median runtimes."""
    opt_s = [r["opt_s"] for r in rows]
    by_seed: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        by_seed.setdefault(r["seed"], []).append(r)
    per_seed = [seed_gaps(rs) for rs in by_seed.values()]
    nan = float("nan")
    return {
        "pms": point[0],
        "m_max": point[1],
        "seeds": len(by_seed),
        "snapshots": len(rows),
        "unsettled": sum(not r["settled"] for r in rows),
        "vms_median": statistics.median(r["vms"] for r in rows) if rows else nan,
        "extra_active_pms_pct": max((g[0] for g in per_seed), default=nan),
        "eq5_gap_pct": max((g[1] for g in per_seed), default=nan),
        "extra_active_pms_pct_worst_snapshot": max((r["extra_active_pms_pct"] for r in rows), default=nan),
        "eq5_gap_pct_worst_snapshot": max((r["eq5_gap_pct"] for r in rows), default=nan),
        "snapshots_with_extra_pms": sum(r["active_pms_origamig"] > r["active_pms_opt"] for r in rows),
        "opt_proved": sum(r["opt_proved"] for r in rows),
        "calls": len(call_s),
        "call_median_s": quantile(call_s, 0.5),
        "call_p5_s": quantile(call_s, 0.05),
        "call_p95_s": quantile(call_s, 0.95),
        "opt_median_s": quantile(opt_s, 0.5),
        "opt_p5_s": quantile(opt_s, 0.05),
        "opt_p95_s": quantile(opt_s, 0.95),
        "opt_columns_median": statistics.median(r["opt_columns"] for r in rows) if rows else 0,
        "opt_nonzeros_median": statistics.median(r["opt_nonzeros"] for r in rows) if rows else 0,
        "mismatches": sum(not r["opt_objective_matches"] for r in rows),
    }


def resummarize(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The summary of a results document from its snapshot rows and runs (to redraw without rerunning)."""
    out = []
    for pms, m_max in [tuple(p) for p in doc["setup"]["points"]]:
        rows = [r for r in doc["snapshots"] if (r["pms"], r["m_max"]) == (pms, m_max)]
        calls = [c for r in doc["runs"] if (r["pms"], r["m_max"]) == (pms, m_max) for c in r["call_s"]]
        out.append(summarize((pms, m_max), calls, rows))
    return out


def run_cell(point: tuple[int, int], seed: int, setup: Setup) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One (PMs, M_max, seed): simulate, then OPT at each snapshot. Picklable, for worker processes."""
    weights = Weights()
    outcome = simulate(point[0], point[1], seed, setup)
    rows = [
        {"pms": point[0], "m_max": point[1], "seed": seed, **compare(snap, setup, weights)}
        for snap in outcome.snapshots
    ]
    run_out = {
        "pms": point[0],
        "m_max": point[1],
        "seed": seed,
        "requests": outcome.requests,
        "calls": len(outcome.call_s),
        "sim_wall_s": outcome.wall_s,
        "call_s": list(outcome.call_s),
    }
    return rows, run_out


def run(
    setup: Setup, progress: bool = True, workers: int = 1, scheduler: str | None = None
) -> dict[str, Any]:
    """Every (PMs, M_max, seed) cell, every snapshot compared with OPT; summary per (PMs, M_max).

    Cells run in parallel with `workers` > 1 or on a Dask `scheduler`; runtimes are then measured
    under that contention (the solver threads of the cells share the cores)."""
    cells = [(point, seed) for point in setup.points for seed in setup.seeds]
    results: dict[tuple[tuple[int, int], int], tuple[list[dict[str, Any]], dict[str, Any]]] = {}

    def done(cell: tuple[tuple[int, int], int], result: tuple[list[dict[str, Any]], dict[str, Any]]) -> None:
        results[cell] = result
        if progress:
            (pms, m_max), seed = cell
            extra, gap = seed_gaps(result[0])
            print(
                f"  {pms:3} PMs M_max={m_max:2} seed {seed}: {result[1]['calls']} calls, "
                f"sim {result[1]['sim_wall_s']:.0f} s, {len(result[0])} snapshots, "
                f"+{extra:.1f}% active PMs, Eq.(5) gap {gap:.2f}%",
                flush=True,
            )

    tasks = [functools.partial(run_cell, point, seed, setup) for point, seed in cells]
    run_tasks(tasks, workers, scheduler, done=lambda i, result: done(cells[i], result))
    snapshots = [row for cell in cells for row in results[cell][0]]
    runs_out = [results[cell][1] for cell in cells]
    doc = {"setup": asdict(setup), "snapshots": snapshots, "runs": runs_out}
    doc["summary"] = resummarize(doc)
    return doc


def print_table(doc: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title="Table 12 / Fig. 8: OrigaMIG vs OPT (ours | paper). Gaps: worst seed, summed over its"
        " snapshots; in brackets the worst single snapshot"
    )
    for col in (
        "PMs",
        "M_max",
        "VMs",
        "snaps",
        "with extra PMs",
        "extra active PMs",
        "Eq.(5) gap",
        "OrigaMIG call (median)",
        "OPT (median)",
        "OPT proved",
    ):
        table.add_column(col, justify="right")
    for s in doc["summary"]:
        key = (s["pms"], s["m_max"])
        main = s["m_max"] == 16 and s["pms"] in TABLE12_VMS
        paper_pms = FIG8A_EXTRA_ACTIVE_PMS_PCT.get(key)
        table.add_row(
            str(s["pms"]),
            str(s["m_max"]),
            f"{s['vms_median']:.0f} | {TABLE12_VMS.get(s['pms'], '-')}",
            f"{s['snapshots']}" + (f" ({s['unsettled']} unsettled)" if s["unsettled"] else ""),
            str(s["snapshots_with_extra_pms"]),
            f"{s['extra_active_pms_pct']:.1f}% [{s['extra_active_pms_pct_worst_snapshot']:.0f}%] | "
            + (f"{paper_pms}%" if paper_pms is not None else "-"),
            f"{s['eq5_gap_pct']:.2f}% [{s['eq5_gap_pct_worst_snapshot']:.2f}%] | "
            + (f"{TABLE12_EQ5_GAP_PCT[s['pms']]}%" if main else "-"),
            f"{s['call_median_s']:.2f} s | " + (f"{TABLE12_CALL_MEDIAN_S[s['pms']]} s" if main else "-"),
            f"{s['opt_median_s']:.2f} s | " + (f"{TABLE12_OPT_MEDIAN_S[s['pms']]:g} s" if main else "-"),
            f"{s['opt_proved']}/{s['snapshots']}",
        )
    Console(width=170).print(table)


def draw(doc: dict[str, Any], path: Path) -> None:
    """Fig. 8: (a) worst gap vs median call time per (PMs, M_max); (b) median runtime vs PMs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 5.6))
    colors = {8: "tab:blue", 16: "tab:orange", 32: "tab:green"}
    markers = {16: "o", 8: "s", 4: "^"}
    for s in doc["summary"]:
        c = colors.get(s["pms"], "k")
        ax.scatter(
            s["call_median_s"],
            s["extra_active_pms_pct"],
            color=c,
            marker=markers.get(s["m_max"], "o"),
            s=60,
        )
        ax.annotate(
            f"{s['pms']} PMs, M={s['m_max']}",
            (s["call_median_s"], s["extra_active_pms_pct"]),
            textcoords="offset points",
            xytext=(6, 4) if s["m_max"] == 16 else (6, -12),
            fontsize=8,
        )
        if s["m_max"] == 16:
            ax.scatter(s["opt_median_s"], 0.0, color=c, marker="*", s=120, clip_on=False, zorder=3)
    for (pms, m_max), pct in FIG8A_EXTRA_ACTIVE_PMS_PCT.items():
        x = TABLE12_CALL_MEDIAN_S[pms] if m_max == 16 else None
        if x is not None:
            ax.scatter(
                x, pct, facecolors="none", edgecolors=colors[pms], marker=markers[m_max], s=90, linewidths=1.5
            )
        else:
            ax.axhline(pct, color=colors[pms], ls=":", lw=0.8, alpha=0.7)
            ax.annotate(
                f"paper {pms} PMs, M={m_max}: {pct}%",
                (0.98, pct),
                xycoords=("axes fraction", "data"),
                fontsize=7,
                color=colors[pms],
                ha="right",
                va="bottom",
            )
    for pms in TABLE12_OPT_MEDIAN_S:
        ax.scatter(
            TABLE12_OPT_MEDIAN_S[pms],
            0.0,
            facecolors="none",
            edgecolors=colors[pms],
            marker="*",
            s=140,
            clip_on=False,
            zorder=3,
        )
    ax.set_xscale("log")
    ax.set_xlim(0.01, 2e4)
    ax.set_xlabel("median runtime of an OrigaMIG call / an OPT solve (s, log)")
    ax.set_ylabel("extra active PMs vs OPT, worst seed (%)")
    ax.set_title("(a) optimality gap vs runtime")
    ax.set_ylim(bottom=-0.5)
    handles = (
        [plt.Line2D([], [], color="gray", marker=m, ls="", label=f"M_max = {k}") for k, m in markers.items()]
        + [
            plt.Line2D([], [], color="gray", marker="*", ls="", ms=10, label="OPT (no gap, at its runtime)"),
            plt.Line2D(
                [],
                [],
                color="gray",
                marker="o",
                mfc="none",
                ls="",
                label="paper (hollow; dotted = no runtime given)",
            ),
        ]
        + [plt.Line2D([], [], color=c, lw=3, label=f"{p} PMs") for p, c in colors.items()]
    )
    ax.legend(handles=handles, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=4)

    main = [s for s in doc["summary"] if s["m_max"] == 16]
    xs = [s["pms"] for s in main]
    for key, label, col in (
        ("call", "OrigaMIG call, M_max = 16", "tab:blue"),
        ("opt", "OPT solve", "tab:red"),
    ):
        med = [s[f"{key}_median_s"] for s in main]
        lo = [m - s[f"{key}_p5_s"] for m, s in zip(med, main, strict=True)]
        hi = [s[f"{key}_p95_s"] - m for m, s in zip(med, main, strict=True)]
        bx.errorbar(xs, med, yerr=[lo, hi], marker="o", color=col, capsize=4, label=f"{label} (ours, p5–p95)")
    paper_x = list(TABLE12_CALL_MEDIAN_S)
    bx.plot(
        paper_x,
        list(TABLE12_CALL_MEDIAN_S.values()),
        "o--",
        mfc="none",
        color="tab:blue",
        label="OrigaMIG call (paper)",
    )
    bx.plot(
        paper_x, list(TABLE12_OPT_MEDIAN_S.values()), "s--", mfc="none", color="tab:red", label="OPT (paper)"
    )
    if main and main[0]["opt_nonzeros_median"]:
        base = main[0]
        model = [base["opt_median_s"] * s["opt_nonzeros_median"] / base["opt_nonzeros_median"] for s in main]
        bx.plot(xs, model, ":", color="tab:red", label="OPT if time ∝ model size (nonzeros)")
    bx.axhline(doc["setup"]["call_limit_s"], color="gray", ls="-.", lw=0.8, label="call time limit")
    bx.set_xscale("log", base=2)
    bx.set_yscale("log")
    bx.set_xticks(sorted(set(xs) | set(paper_x)))
    bx.set_xticklabels([str(x) for x in sorted(set(xs) | set(paper_x))])
    bx.set_xlabel("PMs |M| in the data center (2x A100 each)")
    bx.set_ylabel("median runtime (s, log)")
    bx.set_title("(b) runtime as the data center grows")
    bx.legend(fontsize=7)
    fig.suptitle(textwrap.fill(f"Fig. 8 — {doc['mode']} run: {doc['scale']}", 150), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _pair(text: str) -> tuple[int, int]:
    pms, m_max = text.split(":")
    return int(pms), int(m_max)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="8/16/32 PMs, 1 seed, every 8 h (default)")
    mode.add_argument("--full", action="store_true", help="paper scale: 8/16/32 PMs, 3 seeds, every 4 h")
    ap.add_argument("--solver", choices=backend_names(), default="highs")
    ap.add_argument("--opt-limit", type=float, help="time limit of one OPT solve (s)")
    ap.add_argument("--points", help="(PMs, M_max) pairs to run instead, e.g. 32:16,32:8")
    ap.add_argument("--seeds", help="seeds to run instead, e.g. 1,2,3")
    ap.add_argument("--out", type=Path, default=RESULTS / "optimality_gap.json")
    ap.add_argument("--workers", type=int, default=1, help="run (PMs, M_max, seed) cells in N processes")
    ap.add_argument("--scheduler", help="run the cells on this Dask scheduler (tcp://HOST:PORT)")
    ap.add_argument("--from-json", type=Path, help="re-summarize and redraw a results file, no run")
    args = ap.parse_args(argv)
    if args.from_json:
        doc = json.loads(args.from_json.read_text())
        doc["summary"] = resummarize(doc)
        print_table(doc)
        args.from_json.write_text(json.dumps(doc, indent=1))
        draw(doc, args.from_json.with_suffix(".png"))
        print(f"rewrote {args.from_json} and {args.from_json.with_suffix('.png')}")
        return 0
    setup = FULL if args.full else QUICK
    changes: dict[str, Any] = {"solver": args.solver}
    if args.opt_limit:
        changes["opt_limit_s"] = args.opt_limit
    try:
        if args.points:
            changes["points"] = tuple(_pair(p) for p in args.points.split(","))
        if args.seeds:
            changes["seeds"] = tuple(int(x) for x in args.seeds.split(","))
    except ValueError:
        ap.error(f"--points {args.points!r} / --seeds {args.seeds!r}: expected e.g. 32:16,32:8 and 1,2,3")
    setup = Setup(**{**asdict(setup), **changes})
    name = "full" if args.full else "quick"
    scale = (
        f"points {list(setup.points)} (PMs, M_max), seeds {list(setup.seeds)}, "
        f"snapshots every {setup.every_h:g} h "
        f"from {setup.first_h:g} to {setup.last_h:g} h, {setup.solver}, call limit {setup.call_limit_s:g} s "
        f"x{setup.call_threads} thread, OPT limit {setup.opt_limit_s:g} s x{setup.opt_threads} threads"
    )
    print(f"{name}: {scale}", flush=True)
    load = os.getloadavg()
    started = time.perf_counter()
    doc = {"mode": name, "scale": scale, **run(setup, workers=args.workers, scheduler=args.scheduler)}
    publish(doc, args.out, started, load, print_table, draw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
