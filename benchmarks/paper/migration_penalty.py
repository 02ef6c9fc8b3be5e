"""Table 10 / Fig. 6 of the paper: the migration penalty δ of OrigaMIG against TC's compaction period.

At load 0.85, OrigaMIG with δ ∈ {0, 5, 10, 20, 40}, TC compacting every 15 min and every hour, and
FF as the reference for "fewer active PMs than FF" (paired by seed); OrigaMIG places arrivals by
first fit, as the paper's does. Prints each row next to
Table 10 (migrations/h, GB/h and active PMs scaled from the paper's 128 PMs to ours), and draws the
reduction in active PMs against the migration rate (Fig. 6). Writes
benchmarks/results/migration_penalty-<scale>.json and migration_penalty-<scale>.png.

    python -m benchmarks.paper.migration_penalty --quick     # 32 PMs, 24 h + 24 h, 1 seed
    python -m benchmarks.paper.migration_penalty --full --scheduler tcp://HOST:8786   # 128 PMs, 3 seeds
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

LOAD = 0.85  # §6.6
DELTAS = (0, 5, 10, 20, 40)
TC_PERIODS_MIN = (15, 60)
QUICK = dataclasses.replace(sweep.QUICK, seeds=(1,))
FULL = dataclasses.replace(sweep.FULL, seeds=tuple(range(1, paper.PAPER_SEEDS_OTHER + 1)))
ROWS = tuple(f"tc-{m}min" for m in TC_PERIODS_MIN) + tuple(f"delta-{d}" for d in DELTAS)


def cells(
    scale: Scale, deltas: tuple[float, ...] = DELTAS, periods: tuple[int, ...] = TC_PERIODS_MIN
) -> list[Cell]:
    col = f"{LOAD:g}"
    out = [Cell("ff", col, "ff", scale.config(load=LOAD), s) for s in scale.seeds]
    for m in periods:
        config = scale.config(load=LOAD, policy_options=(("period_s", 60.0 * m),))
        out.extend(Cell(f"tc-{m}min", col, "tc", config, s) for s in scale.seeds)
    for d in deltas:
        options = scale.origamig_options(arrival=paper.ORIGAMIG_ARRIVAL, delta=float(d))
        config = scale.config(load=LOAD, policy_options=options)
        out.extend(Cell(f"delta-{d:g}", col, "origamig", config, s) for s in scale.seeds)
    return out


def analyse(sw: Sweep, rows: tuple[str, ...]) -> dict[str, Any]:
    col = f"{LOAD:g}"
    per = {
        r: {
            "pms_reduction_vs_ff_pct": sw.reduction_pct(r, "ff", col),
            "migrations_per_hour": sw.metric(r, col, "migrations_per_hour"),
            "migrations_per_admitted_vm": sw.metric(r, col, "migrations_per_admitted_vm"),
        }
        for r in rows
    }
    # Fig. 6's finding: for each TC period, some δ gives both fewer migrations and fewer active PMs.
    dominated = {}
    for t in (r for r in rows if r.startswith("tc-")):
        tm, tr = per[t]["migrations_per_hour"].mean, per[t]["pms_reduction_vs_ff_pct"].mean
        dominated[t] = [
            d
            for d in rows
            if d.startswith("delta-")
            and per[d]["migrations_per_hour"].mean is not None
            and tm is not None
            and per[d]["migrations_per_hour"].mean < tm
            and (per[d]["pms_reduction_vs_ff_pct"].mean or -1e9) > (tr if tr is not None else 1e9)
        ]
    return {"per_row": per, "deltas_dominating_tc": dominated}


def print_table(sw: Sweep, rows: tuple[str, ...], findings: dict[str, Any]) -> None:
    col = f"{LOAD:g}"
    scale = sw.scale
    show = (
        ("migrations_per_hour", "Migr./h"),
        ("migrations_per_admitted_vm", "Migr. per VM"),
        ("migrated_gb_per_hour", "GB/h"),
        ("active_pms", "Active PMs"),
        ("energy_mwh", "Energy (MWh)"),
        ("median_call_s", "Call (s)"),
        ("acceptance", "Accept. (%)"),
    )
    lines = []
    for r in ("ff", *rows):
        ref = paper.TABLE10.get(r, {})
        line = [r]
        for key, _ in show:
            s = sweep.SHOWN_BY_KEY.get(key, sweep.Shown(key, key, 1, 2))
            text = sweep.fmt(sw.metric(r, col, key), s.factor, s.digits)
            pkey = {"acceptance": "acceptance_pct", "migrations_per_admitted_vm": "migrations_per_vm"}.get(
                key, key
            )
            if pkey in ref:
                text += f" ({sweep.ref(sweep.paper_at_scale(ref[pkey], s, scale), s.digits)})"
            line.append(text)
        red = findings["per_row"].get(r, {}).get("pms_reduction_vs_ff_pct")
        text = sweep.fmt(red) if red else "–"
        if "pms_reduction_pct" in ref:
            text += f" ({ref['pms_reduction_pct']:g})"
        line.append(text)
        lines.append(line)
    dom = findings["deltas_dominating_tc"]
    sweep.print_table(
        f"Migration penalty at load {LOAD} — {scale.describe()}",
        ["row", *(label for _, label in show), "PMs↓ vs FF (%)"],
        lines,
        "(paper Table 10 in brackets, scaled to our PMs/hours; call times are modeled in deterministic mode) "
        + "; ".join(
            f"δ rows with fewer migrations and fewer PMs than {t}: {', '.join(v) or 'none'}"
            for t, v in dom.items()
        ),
    )


def draw(sw: Sweep, rows: tuple[str, ...], findings: dict[str, Any], out_dir: Path = RESULTS) -> Path:
    per = findings["per_row"]
    fig, axes = sweep.figure(1, 1, 11, 6.5, f"Fig. 6 — load {LOAD}; {sw.scale.describe()}")
    ax = axes[0, 0]
    factor = paper.PAPER_PMS / sw.scale.pms  # our migration rate per 128 PMs, comparable with the paper

    def label(r: str) -> str:
        return f"δ={r.split('-')[1]}" if r.startswith("delta-") else r.split("-")[1]

    for group, color in (("delta-", sweep.POLICY_COLORS["origamig"]), ("tc-", sweep.POLICY_COLORS["tc"])):
        name = "OrigaMIG" if group == "delta-" else "TC"
        mine = [r for r in rows if r.startswith(group)]
        xs = [max(per[r]["migrations_per_hour"].mean or 0, 0) * factor for r in mine]
        ys = [per[r]["pms_reduction_vs_ff_pct"].mean for r in mine]
        red = [per[r]["pms_reduction_vs_ff_pct"] for r in mine]
        ok = [i for i, y in enumerate(ys) if y is not None]
        ax.errorbar(
            [xs[i] for i in ok],
            [ys[i] for i in ok],
            yerr=sweep.errbars([red[i] for i in ok]),
            marker="o",
            ls="-",
            color=color,
            capsize=3,
            label=f"{name} (ours, per 128 PMs)",
        )
        for i in ok:
            offset = (-12, 6 + 11 * (i % 3))  # staggered: our δ = 5, 10, 20 points sit close together
            ax.annotate(label(mine[i]), (xs[i], ys[i]), textcoords="offset points", xytext=offset, fontsize=8,
                        color=color)  # fmt: skip
        pr = [r for r in mine if r in paper.TABLE10]
        px = [paper.TABLE10[r]["migrations_per_hour"] for r in pr]
        py = [paper.TABLE10[r]["pms_reduction_pct"] for r in pr]
        ax.plot(
            px, py, marker="D", ls="--", mfc="none", color=color, alpha=0.7, label=f"{name} (paper, Table 10)"
        )
        for r, x, y in zip(pr, px, py, strict=True):
            ax.annotate(
                label(r), (x, y), textcoords="offset points", xytext=(5, -11), fontsize=8, color="gray"
            )
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlabel("Migrations per hour (per 128 PMs; symlog scale)")
    ax.set_ylabel("Fewer active PMs than FF (%)")
    ax.axhline(0, color="black", lw=0.8)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9)
    return sweep.save_figure(fig, sw, out_dir)


def main(args: argparse.Namespace) -> None:
    scale = sweep_cli.scale_from(args, QUICK, FULL)
    sw = sweep_cli.run_or_load("migration_penalty", scale, cells(scale), args)
    findings = analyse(sw, ROWS)
    print_table(sw, ROWS, findings)
    extra = {
        "load": LOAD,
        "deltas": list(DELTAS),
        "tc_periods_min": list(TC_PERIODS_MIN),
        "findings": findings,
        "paper": {"table10": paper.TABLE10},
    }
    path = sweep.write_json(sw, extra, args.out)
    png = draw(sw, ROWS, findings, args.out)
    print(f"{sw.scale.describe()}\nwall time {sw.wall_s:.0f} s; wrote {path} and {png}")


if __name__ == "__main__":
    sweep_cli.main_wrapper(main, sweep_cli.parser(__doc__ or "", QUICK, FULL, RESULTS).parse_args())
