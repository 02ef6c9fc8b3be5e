"""Table 11 of the paper: ablation and sensitivity of OrigaMIG at load 0.85.

Every OrigaMIG row places arrivals by first fit, as the paper's OrigaMIG does (`arrival="ff"`).

Every row of Table 11: OrigaMIG as is; without admission calls; without consolidation calls; a
15-min timer instead of the threshold; random neighborhoods; without any call (= FF); M_max = 4, 8,
32 with N_max = 4·M_max; time limit 1, 5, 30 s; θ = 2, 4 — plus FF itself as a check of the
"without calls" row. In deterministic (quick) runs a call's budget is a number of branch-and-bound
nodes, so the time-limit rows scale the node budget by t / 10 s instead. Prints each row next to
Table 11 (active PMs, migrations and calls per hour scaled from 128 PMs to ours), writes
benchmarks/results/ablation-<scale>.json and ablation-<scale>.png.

    python -m benchmarks.paper.ablation --quick      # 32 PMs, 24 h + 24 h, 1 seed
    python -m benchmarks.paper.ablation --full --scheduler tcp://HOST:8786   # 128 PMs, 48 h + 72 h, 3 seeds
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from benchmarks import RESULTS, sweep_cli
from benchmarks import paper_values as paper
from origamig.study import sweep
from origamig.study.sweep import Cell, Scale, Sweep

LOAD = 0.85  # §6.7
QUICK = dataclasses.replace(sweep.QUICK, seeds=(1,))
FULL = dataclasses.replace(sweep.FULL, seeds=tuple(range(1, paper.PAPER_SEEDS_OTHER + 1)))
TIMER_S = 900.0  # §6.7: "a consolidation call for each class every 15 min"
LABELS = {
    "origamig": "OrigaMIG",
    "no-admission": "without admission calls",
    "no-consolidation": "without consolidation calls",
    "timer": "timer instead of threshold",
    "random": "random neighborhoods",
    "no-calls": "without calls (FF)",
    "mmax-4": "M_max = 4",
    "mmax-8": "M_max = 8",
    "mmax-32": "M_max = 32",
    "tl-1": "time limit 1 s",
    "tl-5": "time limit 5 s",
    "tl-30": "time limit 30 s",
    "theta-2": "θ = 2",
    "theta-4": "θ = 4",
    "ff": "FF (policy, check)",
}
ROWS = tuple(paper.TABLE11)


def time_limit_options(scale: Scale, seconds: float) -> dict[str, Any]:
    """The call budget of a 'time limit t' row: t itself, or, when deterministic, nodes × t / 10 s."""
    if scale.deterministic and scale.work_limit is not None:
        return {"work_limit": max(1.0, scale.work_limit * seconds / paper.PAPER_TIME_LIMIT_S)}
    return {"time_limit_s": seconds}


def row_options(scale: Scale, row: str) -> dict[str, Any]:
    """OrigaMIG's options for a row of Table 11."""
    fixed: dict[str, dict[str, Any]] = {
        "origamig": {},
        "no-admission": {"admission_calls": False},
        "no-consolidation": {"consolidation_calls": False},
        "timer": {"timer_s": TIMER_S},
        "random": {"random_neighborhoods": True},
        "no-calls": {"admission_calls": False, "consolidation_calls": False},
        "theta-2": {"theta": 2},
        "theta-4": {"theta": 4},
    }
    if row in fixed:
        return fixed[row]
    kind, value = row.split("-")
    if kind == "mmax":
        return {"m_max": int(value), "n_max": 4 * int(value)}
    if kind == "tl":
        return time_limit_options(scale, float(value))
    raise ValueError(f"unknown ablation row {row!r}")


def cells(scale: Scale, rows: tuple[str, ...] = ROWS, with_ff: bool = True) -> list[Cell]:
    col = f"{LOAD:g}"
    out = []
    for row in rows:
        options = scale.origamig_options(arrival=paper.ORIGAMIG_ARRIVAL, **row_options(scale, row))
        out.extend(
            Cell(row, col, "origamig", scale.config(load=LOAD, policy_options=options), s)
            for s in scale.seeds
        )
    if with_ff:
        out.extend(Cell("ff", col, "ff", scale.config(load=LOAD), s) for s in scale.seeds)
    return out


SHOW = (
    ("acceptance", "Accept. (%)", "acceptance_pct"),
    ("active_pms", "Active PMs", "active_pms"),
    ("migrations_per_hour", "Migr./h", "migrations_per_hour"),
    ("calls_per_hour", "Calls/h", "calls_per_hour"),
    ("energy_mwh", "Energy (MWh)", "energy_mwh"),
    ("median_call_s", "Call (s)", None),
)


def analyse(sw: Sweep, rows: tuple[str, ...]) -> dict[str, Any]:
    col = f"{LOAD:g}"
    base = sw.metric("origamig", col, "active_pms").mean
    out = {}
    for r in rows:
        m = sw.metric(r, col, "active_pms").mean
        out[r] = {
            "active_pms_vs_origamig_pct": 100 * (m - base) / base if m is not None and base else None,
            "pms_reduction_vs_ff_pct": sw.reduction_pct(r, "ff", col),
        }
    ff_same = sw.by_seed("no-calls", col, "active_pms") == sw.by_seed("ff", col, "active_pms")
    return {"per_row": out, "no_calls_equals_ff": ff_same}


def print_table(sw: Sweep, rows: tuple[str, ...], findings: dict[str, Any]) -> None:
    col = f"{LOAD:g}"
    lines = []
    for r in (*rows, "ff"):
        ref = paper.TABLE11.get(r, {})
        line = [LABELS.get(r, r)]
        for key, _, pkey in SHOW:
            s = sweep.SHOWN_BY_KEY[key]
            text = sweep.fmt(sw.metric(r, col, key), s.factor, s.digits)
            if pkey and pkey in ref:
                text += f" ({sweep.ref(sweep.paper_at_scale(ref[pkey], s, sw.scale), s.digits)})"
            line.append(text)
        f = findings["per_row"].get(r, {})
        v = f.get("active_pms_vs_origamig_pct")
        line.append("–" if v is None else f"{v:+.1f}")
        red = f.get("pms_reduction_vs_ff_pct")
        line.append(sweep.fmt(red) if red else "–")
        lines.append(line)
    sweep.print_table(
        f"Ablation at load {LOAD} — {sw.scale.describe()}",
        ["variant", *(label for _, label, _ in SHOW), "PMs vs OrigaMIG (%)", "PMs↓ vs FF (%)"],
        lines,
        "(paper Table 11 in brackets, scaled to our PMs/hours; call times are modeled in deterministic mode; "
        f"'without calls' = FF in every seed: {findings['no_calls_equals_ff']})",
    )


def draw(sw: Sweep, rows: tuple[str, ...], out_dir: Path = RESULTS) -> Path:
    col = f"{LOAD:g}"
    fig, axes = sweep.figure(1, 2, 14, 7, f"Table 11 — ablation at load {LOAD}; {sw.scale.describe()}")
    names = [LABELS[r] for r in rows]
    ys = list(range(len(rows)))[::-1]
    panels = (
        ("active_pms_pct", "Active PMs (% of all PMs)", "active_pms", 100 / paper.PAPER_PMS),
        ("migrations_per_hour", "Migrations per hour (per 128 PMs)", "migrations_per_hour", 1.0),
    )
    for ax, (key, label, pkey, pfactor) in zip(axes[0], panels, strict=True):
        factor = paper.PAPER_PMS / sw.scale.pms if key == "migrations_per_hour" else 1.0
        stats = [sw.metric(r, col, key) for r in rows]
        vals = [(s.mean or 0) * factor for s in stats]
        zero = sweep.MeanCi(0.0, None, 0, ())  # an empty row keeps its place among the bars
        errs = sweep.errbars([s if s.mean is not None else zero for s in stats], factor)
        ax.barh(ys, vals, xerr=errs, color=sweep.POLICY_COLORS["origamig"], alpha=0.8, label="ours")
        ax.scatter([paper.TABLE11[r][pkey] * pfactor for r in rows], ys, marker="D", facecolors="white",
                   edgecolors="black", zorder=3, label="paper (Table 11)")  # fmt: skip
        ax.set_yticks(ys)
        ax.set_yticklabels(names)
        ax.set_xlabel(label)
        ax.grid(axis="x", alpha=0.3)
        ax.legend(fontsize=9, loc="lower right")
    axes[0, 0].set_xlim(left=min(50.0, min(paper.TABLE11[r]["active_pms"] * 100 / 128 for r in rows) - 10))
    return sweep.save_figure(fig, sw, out_dir)


def main(args: argparse.Namespace) -> None:
    scale = sweep_cli.scale_from(args, QUICK, FULL)
    rows = tuple(args.rows.split(",")) if args.rows else ROWS
    sw = sweep_cli.run_or_load("ablation", scale, cells(scale, rows), args)
    findings = analyse(sw, rows)
    print_table(sw, rows, findings)
    extra = {"load": LOAD, "rows": {r: row_options(scale, r) for r in rows}, "findings": findings,
             "paper": {"table11": paper.TABLE11}}  # fmt: skip
    path = sweep.write_json(sw, extra, args.out)
    png = draw(sw, rows, args.out)
    print(f"{sw.scale.describe()}\nwall time {sw.wall_s:.0f} s; wrote {path} and {png}")


if __name__ == "__main__":
    p = sweep_cli.parser(__doc__ or "", QUICK, FULL, RESULTS)
    p.add_argument("--rows", default=None, help=f"comma-separated rows (default all: {','.join(ROWS)})")
    sweep_cli.main_wrapper(main, p.parse_args())
