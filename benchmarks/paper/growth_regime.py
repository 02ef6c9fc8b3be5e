"""Fig. 7 in the paper's regime: calls that cost what the paper's cost, the measured day at the paper's
load, three seeds from 128 to 1,024 PMs — every row labelled with its regime.

The growth study (benchmarks/paper/growth.py) runs Fig. 7 in our regime: calls modeled at about
0.33 s where the paper's median call takes 4.26 s at 128 PMs and 9.97 s at 1,024; a measured day
after 48 h of warm-up, when tenants (mean life 24 h) are at 86–95% of their steady number, so the day
runs at 0.75–0.81 of the load; one seed. These rows run it in the paper's:

- Calls, one row per regime (FF and TC make no calls: one row each):
  - `modeled` (our regime): HiGHS, one thread, at most 100 branch-and-bound nodes, each call lasting
    its modeled time (docs/model.md#solvers);
  - `paper-median`: the same calls, each lasting its modeled time × (the paper's median call at this
    size / our median, `OUR_MEDIAN_CALL_S`) — 12.9× at 128 PMs, 30.2× at 1,024, geometric between
    (OrigaMIG's `call_time_scale`); deterministic, so the results recompute exactly;
  - `wall-10s`: no node budget and the paper's 10 s limit, each call lasting its measured wall time
    on this machine: what the solver takes, not reproducible run to run (an idle machine, one worker
    per core).
- The day: `WARMUP_H` = 120 h of warm-up (five mean tenant lifetimes: tenants at 99.3% or more of their
  steady number through the measured day, which so runs at the offered load 0.85), then 24 h
  measured; `--warmup 48` is the growth study's day (its own results file).
- Three seeds (1–3), sizes 128, 256, 512, 1,024; the paper's mix and load per PM as in growth.py.

Prints a table per size and a summary (fewer active PMs than FF and than TC, paired by seed, with
95% CIs; calls per hour; the median call against the paper's); writes
benchmarks/results/growth_regime-<scale>.json (cell by cell: a rerun resumes) and its figure.

    python -m benchmarks.paper.growth_regime --quick                    # 128 PMs, 3 h + 3 h, seed 1
    nohup python -m benchmarks.paper.growth_regime --full --workers 2 > regime.log 2>&1 &
    python -m benchmarks.paper.growth_regime --full --regimes paper-median --sizes 128,256
    python -m benchmarks.paper.growth_regime --full --cells             # what is done, what is left
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import RESULTS, sweep_cli
from benchmarks import paper_values as paper
from benchmarks.paper.growth import describe, parse_sizes
from origamig.errors import UserError
from origamig.policies.optimizer.options import DEFAULT_ARRIVAL
from origamig.study import sweep
from origamig.study.sweep import Cell, Scale, Sweep

NAME = "growth_regime"
LOAD = paper.FIG7_LOAD
SIZES = (128, 256, 512, 1024)
QUICK_SIZES = (128,)
WARMUP_H = 120.0  # five mean tenant lifetimes (24 h): the measured day at the offered load
# The growth study's median modeled call of OrigaMIG at 128-1,024 PMs: 0.32-0.34 s
# (benchmarks/results/growth-all/growth-full.json); the paper-median regime scales calls by the
# paper's median over this.
OUR_MEDIAN_CALL_S = 0.33
REGIMES = ("modeled", "paper-median", "wall-10s")
PAPER_CALL_LIMIT_S = paper.CALL_TIME_LIMIT_S
FULL = Scale("full", pms=128, warmup_h=WARMUP_H, measure_h=24 * paper.FIG7_DAYS, seeds=(1, 2, 3),
             time_limit_s=None, deterministic=True, work_limit=100)  # fmt: skip
QUICK = dataclasses.replace(FULL, name="quick", warmup_h=3, measure_h=3, seeds=(1,))
LABELS = {
    "ff": "FF",
    "tc": "TC",
    "origamig-modeled": "OrigaMIG, our regime: modeled calls",
    "origamig-paper-median": "OrigaMIG, paper regime: calls at the paper's median",
    "origamig-wall-10s": "OrigaMIG, paper regime: wall time, 10 s limit",
}
COLORS = {
    "origamig-modeled": "tab:blue",
    "origamig-paper-median": "tab:purple",
    "origamig-wall-10s": "tab:red",
}


def paper_median_call_s(pms: int) -> float:
    """The paper's median call at `pms` PMs: its 128- and 1,024-PM values, geometric between them in
    log2(PMs), held at the nearer one outside."""
    low, high = paper.FIG7_MEDIAN_CALL_S[128], paper.FIG7_MEDIAN_CALL_S[1024]
    x = min(max(math.log2(pms / 128) / 3, 0.0), 1.0)
    return low * (high / low) ** x


def call_time_scale(pms: int) -> float:
    """The factor that makes our median call the paper's at `pms` PMs (3 decimals: it names the cell)."""
    return round(paper_median_call_s(pms) / OUR_MEDIAN_CALL_S, 3)


def row_of(regime: str) -> str:
    return f"origamig-{regime}"


def regime_config(scale: Scale, pms: int, regime: str) -> Any:
    """The configuration of OrigaMIG's row of `regime` at `pms` PMs."""
    if regime == "modeled":
        options = scale.origamig_options()
        return scale.config(load=LOAD, pms=pms, policy_options=options)
    if regime == "paper-median":
        if not scale.deterministic:
            raise UserError(
                "--regimes paper-median: scales modeled call times, so it needs a deterministic scale"
            )
        options = scale.origamig_options(call_time_scale=call_time_scale(pms))
        return scale.config(load=LOAD, pms=pms, policy_options=options)
    if regime == "wall-10s":
        options = (("arrival", DEFAULT_ARRIVAL), ("threads", 1), ("time_limit_s", PAPER_CALL_LIMIT_S))
        return scale.config(load=LOAD, pms=pms, policy_options=options, deterministic=False)
    raise UserError(f"--regimes: unknown {regime!r} (known: {', '.join(REGIMES)})")


def cells(scale: Scale, sizes: Sequence[int], regimes: Sequence[str] = REGIMES) -> list[Cell]:
    """Per size: FF, TC and OrigaMIG in each regime, at every seed; column = the PM count."""
    out: list[Cell] = []
    for pms in sizes:
        for name in ("ff", "tc"):
            config = scale.config(load=LOAD, pms=pms)
            out.extend(Cell(name, str(pms), name, config, seed) for seed in scale.seeds)
        for regime in regimes:
            config = regime_config(scale, pms, regime)
            out.extend(Cell(row_of(regime), str(pms), "origamig", config, seed) for seed in scale.seeds)
    return out


def analyse(sw: Sweep, sizes: Sequence[int]) -> dict[str, Any]:
    """Per size and row: the means over seeds and the paired reductions in active PMs over FF and TC."""
    out: dict[str, Any] = {}
    for pms in sizes:
        col = str(pms)
        rows = [r for r in LABELS if any(run.row == r and run.col == col for run in sw.runs)]
        per: dict[str, Any] = {}
        for row in rows:
            per[row] = {
                "label": LABELS[row],
                "seeds": sorted(sw.by_seed(row, col, "active_pms")),
                "active_pms": sw.metric(row, col, "active_pms"),
                "fewer_pms_than_ff_pct": sw.reduction_pct(row, "ff", col) if row != "ff" else None,
                "fewer_pms_than_tc_pct": sw.reduction_pct(row, "tc", col)
                if row not in ("ff", "tc")
                else None,
                "acceptance": sw.metric(row, col, "acceptance"),
                "calls_per_hour": sw.metric(row, col, "calls_per_hour"),
                "median_call_s": sw.metric(row, col, "median_call_s"),
                "migrations_per_hour": sw.metric(row, col, "migrations_per_hour"),
                "call_time_scale": call_time_scale(pms) if row == row_of("paper-median") else None,
            }
        if per:
            out[col] = {
                "rows": per,
                "paper": {
                    "fewer_pms_than_ff_pct": paper.FIG7_PMS_REDUCTION_VS_FF_PCT.get(pms),
                    "calls_per_hour": paper.FIG7_CALLS_PER_HOUR.get(pms),
                    "median_call_s": round(paper_median_call_s(pms), 2),
                    "median_call_source": _median_source(pms),
                },
            }
    return out


def _median_source(pms: int) -> str:
    """How the paper's median call at `pms` PMs is known: its own value, interpolated, or held."""
    if pms in paper.FIG7_MEDIAN_CALL_S:
        return "paper"
    return "interpolated" if 128 < pms < 1024 else "held at the nearer size"


def _mean(stats: Any, factor: float = 1.0, digits: int = 2) -> str:
    return "–" if stats is None else sweep.fmt(stats, factor, digits)


def print_tables(sw: Sweep, findings: dict[str, Any]) -> None:
    for col, found in findings.items():
        ref = found["paper"]
        rows = []
        for row, v in found["rows"].items():
            red_ff = _mean(v["fewer_pms_than_ff_pct"])
            if row.startswith("origamig") and ref["fewer_pms_than_ff_pct"] is not None:
                red_ff += f" ({ref['fewer_pms_than_ff_pct']:g})"
            median = _mean(v["median_call_s"]) if row.startswith("origamig") else "–"
            if row.startswith("origamig"):
                source = "" if ref["median_call_source"] == "paper" else f", {ref['median_call_source']}"
                median += f" ({ref['median_call_s']:.2f}{source})"
            calls = _mean(v["calls_per_hour"], digits=1) if row.startswith("origamig") else "–"
            if row.startswith("origamig") and ref["calls_per_hour"] is not None:
                calls += f" ({ref['calls_per_hour']:g})"
            rows.append([
                v["label"], _mean(v["active_pms"]), red_ff, _mean(v["fewer_pms_than_tc_pct"]),
                _mean(v["acceptance"], 100), calls, median, _mean(v["migrations_per_hour"], digits=1),
            ])  # fmt: skip
        sweep.print_table(
            f"{col} PMs, load {LOAD:g} — {describe(sw.scale)}",
            [
                "row (regime)",
                "active PMs",
                "fewer than FF (%)",
                "fewer than TC (%)",
                "accept. (%)",
                "calls/h",
                "median call (s)",
                "migr./h",
            ],
            rows,
            "(paper, Fig. 7 / §6.7, in brackets; its median call is given at 128 and 1,024 PMs). Median "
            "call: simulated duration — modeled, scaled to the paper's median, or measured wall time. "
            "± is the 95% CI over seeds (n ≥ 3), else the range",
        )


def draw(sw: Sweep, findings: dict[str, Any], out_dir: Path = RESULTS) -> Path:
    fig, axes = sweep.figure(1, 2, 13, 5, f"Fig. 7 by regime — load {LOAD:g}; {describe(sw.scale)}")
    ax_red, ax_calls = axes[0]
    sizes = [int(c) for c in findings]
    for row, color in COLORS.items():
        pts = [(int(c), f["rows"][row]) for c, f in findings.items() if row in f["rows"]]
        if not pts:
            continue
        reds = [v["fewer_pms_than_ff_pct"] for _, v in pts]
        ax_red.errorbar([x for x, _ in pts], [(r.mean or 0.0) for r in reds], yerr=sweep.errbars(reds),
                        marker="o", color=color, capsize=3, label=LABELS[row])  # fmt: skip
        calls = [v["calls_per_hour"] for _, v in pts]
        ax_calls.errorbar([x for x, _ in pts], [(c.mean or 0.0) for c in calls], yerr=sweep.errbars(calls),
                          marker="o", color=color, capsize=3, label=LABELS[row])  # fmt: skip
    tc = [
        (int(c), f["rows"]["tc"]["fewer_pms_than_ff_pct"]) for c, f in findings.items() if "tc" in f["rows"]
    ]
    if tc:
        tc_red = [r for _, r in tc]
        ax_red.errorbar([x for x, _ in tc], [(r.mean or 0.0) for r in tc_red], yerr=sweep.errbars(tc_red),
                        marker="s", color=sweep.POLICY_COLORS["tc"], capsize=3, label="TC")  # fmt: skip
    red = paper.FIG7_PMS_REDUCTION_VS_FF_PCT
    ax_red.scatter(list(red), list(red.values()), marker="D", s=45, facecolors="none", edgecolors="black",
                   label="OrigaMIG (paper, Fig. 7)")  # fmt: skip
    calls_ref = {p: c for p, c in paper.FIG7_CALLS_PER_HOUR.items() if p <= max(sizes, default=0)}
    ax_calls.scatter(list(calls_ref), list(calls_ref.values()), marker="D", s=45, facecolors="none",
                     edgecolors="black", label="OrigaMIG (paper, Fig. 7)")  # fmt: skip
    ticks = sorted(set(sizes) | set(SIZES))
    for ax, ylabel in ((ax_red, "Fewer active PMs than FF (%)"), (ax_calls, "Calls per hour")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks)
        ax.set_xticklabels([str(t) for t in ticks])
        ax.set_xlabel("PMs (3/4 with 2x A100-40GB, 1/4 with 2x A30)")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    ax_red.axhline(0, color="black", lw=0.5)
    return sweep.save_figure(fig, sw, out_dir)


def main(args: argparse.Namespace) -> None:
    scale = sweep_cli.with_warmup(sweep_cli.scale_from(args, QUICK, FULL), args.warmup)
    sizes = parse_sizes(args.sizes, SIZES if args.full else QUICK_SIZES)
    regimes = tuple(args.regimes.split(",")) if args.regimes else REGIMES
    unknown = sorted(set(regimes) - set(REGIMES))
    if unknown:
        raise UserError(f"--regimes: unknown {', '.join(unknown)} (known: {', '.join(REGIMES)})")
    sw = sweep_cli.run_or_load(NAME, scale, cells(scale, sizes, regimes), args)
    shown = sorted({*sizes, *(int(r.col) for r in sw.runs)})
    findings = analyse(sw, shown)
    print_tables(sw, findings)
    extra = {
        "load": LOAD,
        "sizes": shown,
        "regimes": {
            "modeled": "deterministic, at most 100 B&B nodes per call, a call lasts its modeled time",
            "paper-median": "the modeled calls, each lasting its modeled time x call_time_scale "
            f"(the paper's median call at the size / {OUR_MEDIAN_CALL_S} s)",
            "wall-10s": "no node budget, a 10 s limit, a call lasts its measured wall time",
            "day": f"{scale.warmup_h:g} h warm-up, then {scale.measure_h:g} h measured",
        },
        "call_time_scale": {str(pms): call_time_scale(pms) for pms in shown},
        "findings": findings,
    }
    path = sweep.write_json(sw, extra, args.out)
    png = draw(sw, findings, args.out)
    print(f"{describe(sw.scale)}\nsum of cell wall times {sw.wall_s:.0f} s; wrote {path} and {png}")


def build_parser() -> argparse.ArgumentParser:
    p = sweep_cli.parser(__doc__ or "", QUICK, FULL, RESULTS)
    p.add_argument(
        "--sizes", default=None, help="comma-separated PM counts (default 128,256,512,1024 full; 128 quick)"
    )
    p.add_argument(
        "--regimes",
        default=None,
        help=f"OrigaMIG's rows to run now, comma-separated (default {','.join(REGIMES)}); FF and TC always",
    )
    sweep_cli.add_warmup(p, NAME, QUICK, FULL)
    return p


if __name__ == "__main__":
    sweep_cli.main_wrapper(main, build_parser().parse_args())
