"""Table 8 / Fig. 4 of the paper: FF, MFI, TC and OrigaMIG as the offered load grows, seeds paired.

For every load and seed each policy sees the same requests. Prints, per load, every metric of
docs/simulator.md#metrics next to the paper's Table 8 (at loads 0.75 and 1.0; extensive metrics such as active
PMs, energy and migrations per hour are scaled from the paper's 128 PMs / 72 h to ours), then the paired
comparison OrigaMIG vs TC (runs with fewer active PMs, migration ratio) and vs FF. Writes
benchmarks/results/loads-<scale>.json and loads-<scale>.png.

    python -m benchmarks.paper.loads --quick     # 32 PMs, 24 h + 24 h, loads 0.5/0.75/1.0, 2 seeds
    python -m benchmarks.paper.loads --full --scheduler tcp://HOST:8786
                                                 # 128 PMs, 48 h + 72 h, 6 loads, 5 seeds
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from benchmarks import RESULTS, sweep_cli
from benchmarks import paper_values as paper
from origamig.errors import UserError
from origamig.study import sweep
from origamig.study.sweep import Cell, Scale, Shown, Sweep
from origamig.study.sweep.grid import policy_load_cells

QUICK = dataclasses.replace(sweep.QUICK, seeds=(1, 2))
FULL = dataclasses.replace(sweep.FULL, seeds=tuple(range(1, paper.PAPER_SEEDS_LOADS + 1)))
QUICK_LOADS = (0.5, 0.75, 1.0)
TABLE_KEYS = (
    "acceptance",
    "active_pms",
    "pms_per_100_gpus_served",
    "active_gpus_pct",
    "packing_density",
    "energy_mwh",
    "energy_kwh_per_gpu_hour",
    "switch_ons_per_hour",
    "migrations_per_hour",
    "mean_wait_s",
)
HIGH_LOAD = 1.0  # "OrigaMIG and TC admit more than FF at high load" is checked at the loads >= this


def cells(scale: Scale, loads: tuple[float, ...], policies: tuple[str, ...] = paper.POLICIES) -> list[Cell]:
    return policy_load_cells(scale, loads, policies)


def analyse(sw: Sweep, loads: tuple[float, ...]) -> dict[str, Any]:
    """The paired findings: OrigaMIG vs TC (active PMs, migrations) and vs FF; TC/OrigaMIG vs FF admission."""
    cols = [f"{x:g}" for x in loads]
    wins, total, margins = 0, 0, []
    per_load: dict[str, Any] = {}
    for col in cols:
        pairs = sw.paired("origamig", "tc", col, "active_pms")
        w = sum(1 for _, a, b in pairs if a < b)
        wins, total = wins + w, total + len(pairs)
        margins += [100 * (b - a) / b for _, a, b in pairs if b]
        mo = sw.metric("origamig", col, "migrations_per_hour").mean
        mt = sw.metric("tc", col, "migrations_per_hour").mean
        served = sw.paired("origamig", "tc", col, "pms_per_100_gpus_served")
        per_load[col] = {
            "origamig_fewer_pms_than_tc": [w, len(pairs)],
            "origamig_fewer_pms_per_gpu_served_than_tc": [sum(1 for _, a, b in served if a < b), len(served)],
            "migration_ratio_origamig_over_tc": (mo / mt) if mo is not None and mt else None,
            "pms_reduction_vs_ff_pct": {p: sw.reduction_pct(p, "ff", col) for p in ("mfi", "tc", "origamig")},
            "acceptance_gain_vs_ff_pp": {
                p: sw.gain(p, "ff", col, "acceptance", 100) for p in ("mfi", "tc", "origamig")
            },
            "energy_per_gpu_hour_reduction_vs_ff_pct": {
                p: sw.reduction_pct(p, "ff", col, "energy_kwh_per_gpu_hour")
                for p in ("mfi", "tc", "origamig")
            },
        }
    high = [c for c, x in zip(cols, loads, strict=True) if x >= HIGH_LOAD]
    admit_more = {
        p: all(
            (sw.metric(p, c, "acceptance").mean or 0) > (sw.metric("ff", c, "acceptance").mean or 0)
            for c in high
        )
        for p in ("tc", "origamig")
    }
    ratios = [v["migration_ratio_origamig_over_tc"] for v in per_load.values()]
    ratios = [r for r in ratios if r is not None]
    return {
        "origamig_fewer_pms_than_tc": [wins, total],
        "origamig_vs_tc_margin_pct": [min(margins), max(margins)] if margins else None,
        "migration_ratio_range": [min(ratios), max(ratios)] if ratios else None,
        "admit_more_than_ff_at_high_load": admit_more,
        "high_loads": high,
        "per_load": per_load,
    }


def print_tables(sw: Sweep, loads: tuple[float, ...], findings: dict[str, Any]) -> None:
    scale = sw.scale
    for load in loads:
        col = f"{load:g}"
        ref_col = load if load in paper.TABLE8["active_pms"] else None
        header = ["metric"] + [
            f"{sweep.POLICY_LABELS[p]}" + (" (paper)" if ref_col else "") for p in paper.POLICIES
        ]
        rows = []
        for key in TABLE_KEYS:
            shown: Shown = sweep.SHOWN_BY_KEY[key]
            row = [shown.label]
            for p in paper.POLICIES:
                ours = sweep.fmt(sw.metric(p, col, key), shown.factor, shown.digits)
                if ref_col and shown.paper_key in paper.TABLE8:
                    value = sweep.paper_at_scale(paper.TABLE8[shown.paper_key][ref_col][p], shown, scale)
                    ours += f" ({sweep.ref(value, shown.digits)})"
                row.append(ours)
            rows.append(row)
        caption = (
            "paper = Table 8, extensive metrics scaled to our PMs/hours" if ref_col else "no paper table"
        )
        sweep.print_table(f"Load {col} — {scale.describe()}", header, rows, caption)
    w, n = findings["origamig_fewer_pms_than_tc"]
    rows = []
    for col, v in findings["per_load"].items():
        red = v["pms_reduction_vs_ff_pct"]
        gain = v["acceptance_gain_vs_ff_pp"]
        ratio = v["migration_ratio_origamig_over_tc"]
        rows.append(
            [
                col,
                "{}/{}".format(*v["origamig_fewer_pms_than_tc"]),
                "{}/{}".format(*v["origamig_fewer_pms_per_gpu_served_than_tc"]),
                "–" if ratio is None else f"{ratio:.2f}",
                sweep.fmt(red["tc"]),
                sweep.fmt(red["origamig"]),
                sweep.fmt(gain["tc"]),
                sweep.fmt(gain["origamig"]),
                sweep.fmt(v["energy_per_gpu_hour_reduction_vs_ff_pct"]["origamig"]),
            ]
        )
    sweep.print_table(
        f"Paired by seed: OrigaMIG keeps fewer PMs active than TC in {w} of {n} runs "
        f"(paper: {paper.PAIRED_WINS_VS_TC[0]} of {paper.PAIRED_WINS_VS_TC[1]})",
        [
            "load",
            "O < TC (PMs)",
            "O < TC (PMs per GPU served)",
            "migr. O/TC",
            "TC fewer PMs vs FF (%)",
            "O fewer PMs vs FF (%)",
            "TC accept. vs FF (pp)",
            "O accept. vs FF (pp)",
            "O energy/GPU-h vs FF (% less)",
        ],
        rows,
        "paper: O/TC migrations 0.51–0.71 (29–49% fewer); O fewer PMs vs FF 12.5% at 0.5, 2.8% at 1.0",
    )


def draw(sw: Sweep, loads: tuple[float, ...], out_dir: Path = RESULTS) -> Path:
    panels = (
        ("acceptance", "Acceptance (% of requested memory slices)", 100, "acceptance_pct", None),
        ("active_pms_pct", "Active PMs (% of all PMs)", 1, "active_pms", 100 / paper.PAPER_PMS),
        ("active_gpus_pct", "Active GPUs (% of all GPUs)", 1, "active_gpus_pct", None),
        ("packing_density", "Packing density (% of active GPUs' slices)", 100, "packing_pct", None),
        ("energy_kwh_per_gpu_hour", "Energy per admitted GPU-hour (kWh)", 1, None, None),
        ("migrations_per_hour", f"Migrations per hour ({sw.scale.pms} PMs; paper's scaled)", 1,
         "migrations_per_hour", sw.scale.pms / paper.PAPER_PMS),
    )  # fmt: skip
    fig, axes = sweep.figure(2, 3, 15, 8.5, f"Fig. 4 / Table 8 — {sw.scale.describe()}")
    offsets = {p: (n - 1.5) * 0.008 for n, p in enumerate(paper.POLICIES)}
    for ax, (key, label, factor, paper_key, paper_factor) in zip(axes.flat, panels, strict=True):
        for p in paper.POLICIES:
            stats = [sw.metric(p, f"{x:g}", key) for x in loads]
            xs = [x + offsets[p] for x, s in zip(loads, stats, strict=True) if s.mean is not None]
            ys = [s.mean * factor for s in stats if s.mean is not None]
            es = sweep.errbars(stats, factor)
            ax.errorbar(xs, ys, yerr=es, marker="o", ms=4, capsize=3, color=sweep.POLICY_COLORS[p],
                        label=f"{sweep.POLICY_LABELS[p]} (ours)")  # fmt: skip
            if paper_key:
                ref = paper.TABLE8[paper_key]
                px = sorted(ref)
                py = [ref[x][p] * (paper_factor or 1.0) for x in px]
                ax.scatter(px, py, marker="D", s=40, facecolors="none", edgecolors=sweep.POLICY_COLORS[p],
                           label=f"{sweep.POLICY_LABELS[p]} (paper, Table 8)")  # fmt: skip
        ax.set_xlabel("Offered load ρ (fraction of GPU memory slices)")
        ax.set_ylabel(label)
        ax.set_xticks(loads)
        if key == "acceptance":
            ax.set_ylim(top=101)
        ax.grid(alpha=0.3)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=9, frameon=False)
    return sweep.save_figure(fig, sw, out_dir, bottom=0.08)


def main(args: argparse.Namespace) -> None:
    scale = sweep_cli.scale_from(args, QUICK, FULL)
    loads = paper.PAPER_LOADS if args.full else QUICK_LOADS
    if args.loads:
        loads = tuple(float(x) for x in args.loads.split(","))
    policies = tuple(args.policies.split(",")) if args.policies else paper.POLICIES
    unknown = sorted(set(policies) - set(paper.POLICIES))
    if unknown:
        raise UserError(f"--policies: unknown {', '.join(unknown)} (known: {', '.join(paper.POLICIES)})")
    sw = sweep_cli.run_or_load("loads", scale, cells(scale, loads, policies), args)
    loads = tuple(sorted({*loads, *(float(c.col) for c in sw.cells)}))  # with loads run by earlier commands
    findings = analyse(sw, loads)
    print_tables(sw, loads, findings)
    extra = {"loads": list(loads), "findings": findings, "paper": {"table8": paper.TABLE8}}
    path = sweep.write_json(sw, extra, args.out)
    png = draw(sw, loads, args.out)
    print(f"{sw.scale.describe()}\nwall time {sw.wall_s:.0f} s; wrote {path} and {png}")


if __name__ == "__main__":
    p = sweep_cli.parser(__doc__ or "", QUICK, FULL, RESULTS)
    p.add_argument(
        "--loads", default=None, help="comma-separated loads (default: 0.5,0.75,1.0 quick; 6 full)"
    )
    p.add_argument(
        "--policies",
        default=None,
        help="comma-separated policies to run now (default all); the tables show every stored run",
    )
    sweep_cli.main_wrapper(main, p.parse_args())
