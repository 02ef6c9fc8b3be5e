"""Fig. 3 (paper §6.9): time to solve the full BILP to optimality as |M| and |N| double.

Instances: PMs with two A100 40GB, 80 cores, 512 GB. Each VM requests one GI, profile uniform over
the A100's profiles, 4 cores and 16 GB per compute slice. Residents are placed by first fit; then a
quarter of them leave and as many new ones are placed by first fit (fragmentation), and a batch of
|N|/8 new VMs arrives (pending). The BILP over the whole data center (OPT) is solved from the
current placement with the §6.1 weights and a per-solve time limit. Three sweeps:
  pms       |M| doubles with |N| = 64 (the added PMs are idle),
  pms-3/4   |M| doubles with |N| such that 3/4 of the memory slices are requested,
  vms       |N| doubles on |M| = 32 PMs (64 GPUs).
Each point: median of the seeds with min/max, model size (columns, rows, nonzeros), and the median
final gap where most solves hit the limit.

    python -m benchmarks.paper.bilp_scaling --quick   # smaller sizes, 3 seeds, 20 s limit
    python -m benchmarks.paper.bilp_scaling --full    # the paper's sizes, 3 seeds, 20 min limit
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks import RESULTS
from benchmarks.paper_values import (
    FIG3_TIME_LIMIT_S,
    FIG3A_RATIOS,
    FIG3B_LAST_DOUBLINGS,
    FIG3B_TIME_S,
)
from benchmarks.publish import publish, redraw
from origamig.bilp import Limits
from origamig.cluster.catalog import default_catalog
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import PmSpec, VmSpec, Weights, cores_to_m, gb_to_mb
from origamig.policies.arrival_rule import first_fit
from origamig.policies.base import Rejection
from origamig.policies.opt import solve_opt
from origamig.sim.workload import vm_for
from origamig.solver_registry import backend_names

SLICES_PER_PM = 16  # two A100 40GB
FIXED_VMS = 64  # Fig. 3(a), solid line
FIXED_PMS = 32  # Fig. 3(b)
OCCUPIED = 0.75  # Fig. 3(a), dashed line


@dataclass(frozen=True)
class Setup:
    pms: tuple[int, ...]  # sweep "pms" (|N| = 64)
    pms_34: tuple[int, ...]  # sweep "pms-3/4"
    vms: tuple[int, ...]  # sweep "vms" (|M| = 32)
    seeds: tuple[int, ...] = (1, 2, 3)
    time_limit_s: float = FIG3_TIME_LIMIT_S
    threads: int = 2
    solver: str = "highs"


QUICK = Setup(pms=(16, 32, 64, 128), pms_34=(8, 16, 32), vms=(8, 16, 32, 64, 128), time_limit_s=20.0)
FULL = Setup(pms=(16, 32, 64, 128, 256), pms_34=(16, 32, 64, 128, 256), vms=(8, 16, 32, 64, 128))


def mean_memory_slices() -> float:
    profiles = default_catalog().gpu("A100-40GB").profiles
    return sum(p.memory_slices for p in profiles) / len(profiles)


def vms_for_occupancy(n_pms: int) -> int:
    """|N| whose expected memory slices are 3/4 of those of `n_pms` PMs."""
    return round(OCCUPIED * SLICES_PER_PM * n_pms / mean_memory_slices())


def scaling_instance(n_pms: int, n_vms: int, seed: int) -> DataCenter:
    """FF-placed residents, a quarter replaced by new FF-placed VMs, then |N|/8 pending VMs.

    When the data center is full (first fit fails 50 times in a row) it keeps fewer residents.
    """
    rng = random.Random(seed * 100_003 + n_pms * 1009 + n_vms)
    a100 = default_catalog().gpu("A100-40GB")
    dc = DataCenter([PmSpec(f"pm{j}", cores_to_m(80), gb_to_mb(512), (a100, a100)) for j in range(n_pms)])
    counter = iter(range(10**9))

    def new_vm() -> VmSpec:
        return vm_for(f"v{next(counter)}", [rng.choice(a100.profiles)])

    batch = max(1, n_vms // 8)
    residents = n_vms - batch

    def fill() -> None:
        misses = 0
        while len(dc.placement) < residents and misses < 50:
            vm = new_vm()
            fit = first_fit(dc, vm, frozenset())
            if isinstance(fit, Rejection):
                misses += 1
                continue
            misses = 0
            dc.place(vm, fit)

    fill()
    for v in rng.sample(sorted(dc.placement), len(dc.placement) // 4):
        dc.remove(v)
    fill()
    for _ in range(batch):
        dc.add_pending(new_vm())
    return dc


def gap_text(gap: float) -> str:
    """A final relative gap as text; ≥ 100% means the solver had no useful bound yet (root unsolved)."""
    return "no bound" if gap >= 1.0 else f"{100 * gap:.1f}%"


def solve_point(sweep: str, n_pms: int, n_vms: int, seed: int, setup: Setup) -> dict[str, Any]:
    dc = scaling_instance(n_pms, n_vms, seed)
    sol = solve_opt(
        dc,
        Weights(),
        solver=setup.solver,
        limits=Limits(time_limit_s=setup.time_limit_s, threads=setup.threads),
    )
    res = sol.result
    return {
        "sweep": sweep,
        "pms": n_pms,
        "vms": len(dc.vms) + len(dc.pending),
        "pending": len(dc.pending),
        "seed": seed,
        "solve_s": res.wall_s,
        "total_s": sum(sol.timings.values()),
        "proved": res.proved_optimal,
        "hit_limit": not res.proved_optimal,
        "gap": res.gap,
        "objective": res.objective,
        "bound": res.bound,
        "termination": res.termination,
        **sol.size,
    }


def points(setup: Setup) -> list[tuple[str, int, int]]:
    out = [("pms", m, FIXED_VMS) for m in setup.pms]
    out += [("pms-3/4", m, vms_for_occupancy(m)) for m in setup.pms_34]
    out += [("vms", FIXED_PMS, n) for n in setup.vms]
    return out


def summarize(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Median / min / max per (sweep, PMs, requested VMs); final gap where most solves hit the limit."""
    groups: dict[tuple[str, int, int], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["sweep"], r["pms"], r["requested_vms"]), []).append(r)
    out = []
    for (sweep, pms, n), rs in groups.items():
        times = [r["solve_s"] for r in rs]
        limited = [r for r in rs if r["hit_limit"]]
        out.append(
            {
                "sweep": sweep,
                "pms": pms,
                "requested_vms": n,
                "vms": statistics.median(r["vms"] for r in rs),
                "seeds": len(rs),
                "median_s": statistics.median(times),
                "min_s": min(times),
                "max_s": max(times),
                "proved": len(rs) - len(limited),
                "limit_majority": 2 * len(limited) > len(rs),
                "median_final_gap": statistics.median(r["gap"] or 0.0 for r in limited) if limited else 0.0,
                "columns": statistics.median(r["columns"] for r in rs),
                "rows": statistics.median(r["rows"] for r in rs),
                "nonzeros": statistics.median(r["nonzeros"] for r in rs),
            }
        )
    return out


def run(setup: Setup, progress: bool = True) -> dict[str, Any]:
    rows = []
    for sweep, n_pms, n_vms in points(setup):
        for seed in setup.seeds:
            row = {**solve_point(sweep, n_pms, n_vms, seed, setup), "requested_vms": n_vms}
            rows.append(row)
            if progress:
                status = "" if row["proved"] else f" limit, gap {gap_text(row['gap'] or 0.0)}"
                print(
                    f"  {sweep:8} |M|={n_pms:4} |N|={row['vms']:4} seed {seed}: "
                    f"{row['solve_s']:7.2f} s{status} "
                    f"({row['columns']} cols, {row['nonzeros']} nnz)",
                    flush=True,
                )
    return {"setup": asdict(setup), "summary": summarize(rows), "solves": rows}


def print_table(doc: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Fig. 3: time to optimality of the full BILP ({doc['setup']['solver']})")
    for col in (
        "sweep",
        "|M|",
        "|N|",
        "median s",
        "min–max s",
        "proved",
        "final gap",
        "columns",
        "nonzeros",
        "paper",
    ):
        table.add_column(col, justify="right")
    previous: dict[str, float] = {}
    for s in doc["summary"]:
        ratio = ""
        if s["sweep"] in previous and previous[s["sweep"]] > 0:
            ratio = f" (×{s['median_s'] / previous[s['sweep']]:.1f})"
        previous[s["sweep"]] = s["median_s"]
        paper = ""
        if s["sweep"] == "vms" and s["requested_vms"] in FIG3B_TIME_S:
            paper = f"{FIG3B_TIME_S[s['requested_vms']]:.0f} s"
            if s["requested_vms"] in FIG3B_LAST_DOUBLINGS:
                paper += f" (×{FIG3B_LAST_DOUBLINGS[s['requested_vms']]})"
        table.add_row(
            s["sweep"],
            str(s["pms"]),
            f"{s['vms']:.0f}",
            f"{s['median_s']:.2f}{ratio}",
            f"{s['min_s']:.2f}–{s['max_s']:.2f}",
            f"{s['proved']}/{s['seeds']}",
            gap_text(s["median_final_gap"]) if s["limit_majority"] else "",
            f"{s['columns']:.0f}",
            f"{s['nonzeros']:.0f}",
            paper,
        )
    Console(width=170).print(table)


def draw(doc: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    limit = doc["setup"]["time_limit_s"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 6.0))
    ticks: dict[int, set[int]] = {0: set(), 1: set(FIG3B_TIME_S)}
    panels = (
        (
            axes[0],
            (("pms", "|N| = 64", "o-"), ("pms-3/4", "3/4 of slices requested", "s--")),
            "pms",
            "PMs |M| (2x A100 each)",
            "(a) increasing PMs",
        ),
        (
            axes[1],
            (("vms", f"|M| = {FIXED_PMS} PMs", "o-"),),
            "requested_vms",
            f"VMs |N| on {FIXED_PMS} PMs",
            "(b) increasing VMs",
        ),
    )
    for n, (ax, sweeps, xkey, xlabel, title) in enumerate(panels):
        for sweep, label, style in sweeps:
            pts = [s for s in doc["summary"] if s["sweep"] == sweep]
            if not pts:
                continue
            xs = [s[xkey] for s in pts]
            ticks[n].update(xs)
            med = [s["median_s"] for s in pts]
            err = [
                [m - s["min_s"] for m, s in zip(med, pts, strict=True)],
                [s["max_s"] - m for m, s in zip(med, pts, strict=True)],
            ]
            line = ax.errorbar(
                xs, med, yerr=err, fmt=style, capsize=4, label=f"ours: {label} (median, min–max)"
            )
            color = line[0].get_color()
            for s, x, m in zip(pts, xs, med, strict=True):
                if s["limit_majority"]:
                    ax.scatter(x, m, marker="x", s=120, color="k", zorder=4)
                    ax.annotate(
                        gap_text(s["median_final_gap"]),
                        (x, m),
                        textcoords="offset points",
                        xytext=(5, 6),
                        fontsize=8,
                    )
            size = [med[0] * s["nonzeros"] / pts[0]["nonzeros"] for s in pts]
            ax.plot(xs, size, ":", color=color, lw=1, label=f"time ∝ model size, nonzeros ({label})")
        ax.axhline(limit, color="gray", ls="-.", lw=0.8, label=f"our limit ({limit:g} s)")
        ax.scatter([], [], marker="x", s=80, color="k", label="most solves at our limit (median final gap)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("time to optimality (s, log)")
        ax.set_title(title)
    bx = axes[1]
    bx.plot(
        list(FIG3B_TIME_S),
        list(FIG3B_TIME_S.values()),
        "D--",
        mfc="none",
        color="tab:red",
        label="paper (CP-SAT, 8 cores; from ×6.6, ×61, 17 min)",
    )
    bx.axhline(FIG3_TIME_LIMIT_S, color="tab:red", ls="-.", lw=0.6, label="paper limit (20 min)")
    axes[0].axhline(FIG3_TIME_LIMIT_S, color="tab:red", ls="-.", lw=0.6, label="paper limit (20 min)")
    axes[0].text(
        0.02,
        0.9,
        f"paper (CP-SAT, 8 cores): ×{FIG3A_RATIOS[0]} and ×{FIG3A_RATIOS[1]} per doubling of |M|;\n"
        f"most solves at the limit beyond ~100 VMs on ~100 GPUs",
        transform=axes[0].transAxes,
        fontsize=8,
        va="top",
        color="tab:red",
    )
    for n, ax in enumerate(axes):
        xs = sorted(ticks[n])
        ax.set_xticks(xs)
        ax.set_xticklabels([str(t) for t in xs])
        ax.minorticks_off()
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    fig.suptitle(f"Fig. 3 — {doc['mode']} run: {doc['scale']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="smaller sizes, 20 s limit (default)")
    mode.add_argument("--full", action="store_true", help="the paper's sizes, 20 min limit")
    ap.add_argument("--solver", choices=backend_names(), default="highs")
    ap.add_argument("--time-limit", type=float, help="per-solve limit (s)")
    ap.add_argument("--threads", type=int, help="solver threads (default 2)")
    ap.add_argument("--out", type=Path, default=RESULTS / "bilp_scaling.json")
    ap.add_argument("--from-json", type=Path, help="redraw a results file (table and PNG), no solve")
    args = ap.parse_args(argv)
    if args.from_json:
        return redraw(args.from_json, print_table, draw)
    setup = FULL if args.full else QUICK
    changes: dict[str, Any] = {"solver": args.solver}
    if args.time_limit:
        changes["time_limit_s"] = args.time_limit
    if args.threads:
        changes["threads"] = args.threads
    setup = Setup(**{**asdict(setup), **changes})
    name = "full" if args.full else "quick"
    scale = (
        f"|M| {list(setup.pms)} at |N|=64, {list(setup.pms_34)} at 3/4 occupancy, |N| {list(setup.vms)} on "
        f"{FIXED_PMS} PMs; seeds {list(setup.seeds)}; {setup.solver} x{setup.threads} threads, "
        f"limit {setup.time_limit_s:g} s"
    )
    print(f"{name}: {scale}", flush=True)
    load = os.getloadavg()
    started = time.perf_counter()
    doc = {"mode": name, "scale": scale, **run(setup)}
    publish(doc, args.out, started, load, print_table, draw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
