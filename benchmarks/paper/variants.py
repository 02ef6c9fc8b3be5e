"""Table 9 / Fig. 5 of the paper: gains of MFI, TC and OrigaMIG over FF under each workload/hardware
variant at load 0.85 (the eleven variants, the default, and the Alibaba 2023 trace when present),
plus OrigaMIG with neighborhoods bounded by VMs (`bound="vms"`) as an extra row.

Gains are paired by seed: fewer active PMs than FF (%) and acceptance minus FF's (percentage
points). Prints one table of gains next to the values the paper's §6.5 text gives, counts the
variants in which OrigaMIG keeps fewer PMs active than TC (paper: 7 of 11), and writes
benchmarks/results/variants-<scale>.json and variants-<scale>.png.

    python -m benchmarks.paper.variants --quick        # 32 PMs, 24 h + 24 h, 1 seed; vms row on 2 variants
    python -m benchmarks.paper.variants --full --scheduler tcp://HOST:8786   # 128 PMs, 48 h + 72 h, 3 seeds
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from benchmarks import RESULTS, sweep_cli
from benchmarks import paper_values as paper
from origamig.errors import UserError
from origamig.sim.scenario import VARIANTS
from origamig.study import sweep
from origamig.study.sweep import Cell, Scale, Sweep

LOAD = 0.85  # §6.5
QUICK = dataclasses.replace(sweep.QUICK, seeds=(1,))
FULL = dataclasses.replace(sweep.FULL, seeds=tuple(range(1, paper.PAPER_SEEDS_OTHER + 1)))
ROWS = ("ff", "mfi", "tc", "origamig", "origamig-vms")
# Quick runs give the vms row only on the default and on one of the variants where the paper says
# the PM bound limits OrigaMIG (§7: two GIs per VM); full runs give it on every variant.
QUICK_VMS_VARIANTS = ("default", "two-gi")
LABELS = {**sweep.POLICY_LABELS, "origamig-vms": "OrigaMIG, bound=vms"}
COLORS = {**sweep.POLICY_COLORS, "origamig-vms": "tab:purple"}


def available_variants(trace_dir: str | None = None) -> tuple[tuple[str, ...], str]:
    """Every variant of `scenario.VARIANTS`; the Alibaba one only if its trace is found (and why not)."""
    from origamig.sim.trace import trace_dir as find_trace

    names = tuple(VARIANTS)
    try:
        find_trace(trace_dir)
    except UserError as exc:
        return tuple(n for n in names if VARIANTS[n].source != "alibaba"), f"alibaba skipped: {exc}"
    return names, ""


def cells(scale: Scale, variants: tuple[str, ...], vms_variants: tuple[str, ...], rows=ROWS) -> list[Cell]:
    out = []
    for name in variants:
        for row in rows:
            if row == "origamig-vms" and name not in vms_variants:
                continue
            policy = "origamig" if row.startswith("origamig") else row
            if row == "origamig":
                options = scale.origamig_options()
            elif row == "origamig-vms":
                options = scale.origamig_options(bound="vms")
            else:
                options = ()
            config = scale.config(load=LOAD, variant=name, policy_options=options)
            out.extend(Cell(row, name, policy, config, seed) for seed in scale.seeds)
    return out


def analyse(sw: Sweep, variants: tuple[str, ...]) -> dict[str, Any]:
    per: dict[str, Any] = {}
    beats = 0
    counted = 0
    for v in variants:
        rows = [r for r in ROWS[1:] if sw.by_seed(r, v, "active_pms")]
        per[v] = {
            "ff_acceptance_pct": sweep.Sweep.metric(sw, "ff", v, "acceptance"),
            "pms_reduction_vs_ff_pct": {r: sw.reduction_pct(r, "ff", v) for r in rows},
            "acceptance_gain_vs_ff_pp": {r: sw.gain(r, "ff", v, "acceptance", 100) for r in rows},
            "migrations_per_hour": {r: sw.metric(r, v, "migrations_per_hour") for r in rows},
        }
        o, t = sw.metric("origamig", v, "active_pms").mean, sw.metric("tc", v, "active_pms").mean
        if v != "default" and o is not None and t is not None:
            counted += 1
            beats += o < t
    return {"origamig_fewer_pms_than_tc_variants": [beats, counted], "per_variant": per}


def print_table(sw: Sweep, variants: tuple[str, ...], findings: dict[str, Any]) -> None:
    per = findings["per_variant"]

    def with_paper(stats: sweep.MeanCi, v: str, row: str, key: str, digits: int = 1) -> str:
        text = sweep.fmt(stats, 1, digits)
        ref = paper.VARIANT_GAINS.get(v, {}).get(row, {}).get(key)
        return text + (f" ({ref:g})" if ref is not None else "")

    rows = []
    for v in variants:
        p = per[v]
        ff_acc = sweep.fmt(p["ff_acceptance_pct"], 100)
        ref = paper.VARIANT_GAINS.get(v, {}).get("ff", {}).get("acceptance_pct")
        line = [v, ff_acc + (f" ({ref:g})" if ref is not None else "")]
        for r in ("mfi", "tc", "origamig", "origamig-vms"):
            red = p["pms_reduction_vs_ff_pct"].get(r)
            line.append(with_paper(red, v, r, "pms_reduction_pct") if red else "–")
        for r in ("tc", "origamig", "origamig-vms"):
            gain = p["acceptance_gain_vs_ff_pp"].get(r)
            line.append(with_paper(gain, v, r, "acceptance_gain_pp") if gain else "–")
        for r in ("tc", "origamig"):
            m = p["migrations_per_hour"].get(r)
            line.append(sweep.fmt(m) if m else "–")
        rows.append(line)
    w, n = findings["origamig_fewer_pms_than_tc_variants"]
    sweep.print_table(
        f"Gains over FF at load {LOAD} — {sw.scale.describe()}",
        [
            "variant",
            "FF accept. (%)",
            "MFI PMs↓ (%)",
            "TC PMs↓ (%)",
            "O PMs↓ (%)",
            "O-vms PMs↓ (%)",
            "TC acc. (pp)",
            "O acc. (pp)",
            "O-vms acc. (pp)",
            "TC migr./h",
            "O migr./h",
        ],
        rows,
        f"(paper §6.5 in brackets; migrations/h are at {sw.scale.pms} PMs, the paper's at 128). "
        f"OrigaMIG keeps fewer PMs active than TC in {w} of {n} variants "
        f"(paper: {paper.VARIANTS_ORIGAMIG_BEATS_TC[0]} of {paper.VARIANTS_ORIGAMIG_BEATS_TC[1]})",
    )


def draw(sw: Sweep, variants: tuple[str, ...], findings: dict[str, Any], out_dir: Path = RESULTS) -> Path:
    per = findings["per_variant"]
    bars = ("mfi", "tc", "origamig", "origamig-vms")
    fig, axes = sweep.figure(2, 1, 14, 9, f"Fig. 5 — gains over FF at load {LOAD}; {sw.scale.describe()}")
    panels = (
        ("acceptance_gain_vs_ff_pp", "acceptance_gain_pp", "(a) Acceptance gain over FF (percentage points)"),
        ("pms_reduction_vs_ff_pct", "pms_reduction_pct", "(b) Fewer active PMs than FF (%)"),
    )
    width = 0.2
    for ax, (key, paper_key, label) in zip(axes[:, 0], panels, strict=True):
        for n, r in enumerate(bars):
            xs, ys, stats_list, px, py = [], [], [], [], []
            for i, v in enumerate(variants):
                stats = per[v][key].get(r)
                x = i + (n - 1.5) * width
                if stats and stats.mean is not None:
                    xs.append(x)
                    ys.append(stats.mean)
                    stats_list.append(stats)
                ref = paper.VARIANT_GAINS.get(v, {}).get(r, {}).get(paper_key)
                if ref is not None:
                    px.append(x)
                    py.append(ref)
            ax.bar(
                xs,
                ys,
                width,
                yerr=sweep.errbars(stats_list),
                capsize=2,
                color=COLORS[r],
                label=f"{LABELS[r]} (ours)",
            )
            if px:
                ax.scatter(px, py, marker="D", s=36, facecolors="white", edgecolors="black", zorder=3,
                           label="paper (§6.5 text)" if n == 1 else None)  # fmt: skip
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xticks(range(len(variants)))
        ax.set_xticklabels(variants, rotation=25, ha="right")
        ax.set_ylabel(label)
        ax.set_xlabel("Variant (Table 9)")
        ax.grid(axis="y", alpha=0.3)
    handles, labels = [], []
    for ax in axes[:, 0]:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    axes[0, 0].legend(handles, labels, fontsize=8, ncol=5, loc="upper left")
    return sweep.save_figure(fig, sw, out_dir)


def main(args: argparse.Namespace) -> None:
    scale = sweep_cli.scale_from(args, QUICK, FULL)
    variants, note = available_variants(args.trace_dir)
    if args.variants:
        variants = tuple(v for v in args.variants.split(","))
    vms = variants if args.full else QUICK_VMS_VARIANTS
    rows = tuple(args.rows.split(",")) if args.rows else ROWS
    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        raise UserError(f"--rows: unknown {unknown[0]!r} (known: {', '.join(ROWS)})")
    cs = cells(scale, variants, vms, rows)
    if args.trace_dir:
        cs = [dataclasses.replace(c, config=c.config.replace(trace_dir=args.trace_dir)) for c in cs]
    sw = sweep_cli.run_or_load("variants", scale, cs, args)
    findings = analyse(sw, variants)
    print_table(sw, variants, findings)
    if note:
        print(note)
    extra = {"load": LOAD, "variants": list(variants), "note": note, "findings": findings,
             "paper": {"variant_gains": paper.VARIANT_GAINS}}  # fmt: skip
    path = sweep.write_json(sw, extra, args.out)
    png = draw(sw, variants, findings, args.out)
    print(f"{sw.scale.describe()}\nwall time {sw.wall_s:.0f} s; wrote {path} and {png}")


if __name__ == "__main__":
    p = sweep_cli.parser(__doc__ or "", QUICK, FULL, RESULTS)
    p.add_argument("--variants", default=None, help="comma-separated variant names (default: all)")
    p.add_argument("--trace-dir", default=None, help="folder of the Alibaba 2023 GPU trace")
    p.add_argument(
        "--rows",
        default=None,
        help=f"rows to run now, comma-separated (default: {','.join(ROWS)}); tables show every stored run",
    )
    sweep_cli.main_wrapper(main, p.parse_args())
