"""Table 8's rows for the rivals beyond the paper — Kubernetes DRA, FGD and GRMU — paired by seed with
the stored FF, MFI, TC and OrigaMIG runs of the loads sweep (benchmarks/paper/loads.py).

The rivals run here (results in benchmarks/results/rivals-<scale>.json); FF, MFI, TC and OrigaMIG are
read from benchmarks/results/loads-<scale>.json, where they were computed at the same scale, loads
and seeds, so every policy of a seed saw the same requests. FF is run here too, as a control: its
metrics must equal the stored ones seed by seed, or the stored runs are of other requests and the
script stops. Prints Table 8 with the new rows and, per rival, OrigaMIG against it paired by seed;
writes rivals-<scale>.png (active PMs and acceptance per policy).

    python -m benchmarks.paper.rivals --quick          # 32 PMs, 24 h + 24 h, loads 0.5/0.75/1.0, seeds 1–5
    python -m benchmarks.paper.rivals --full           # 128 PMs, 48 h + 72 h, load 0.85, seeds 1–3
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

from benchmarks import RESULTS, sweep_cli
from benchmarks import paper_values as paper
from benchmarks.paper.loads import TABLE_KEYS
from origamig.errors import UserError
from origamig.study import sweep
from origamig.study.sweep import Cell, RunRecord, Shown, Sweep
from origamig.study.sweep.grid import policy_load_cells
from origamig.study.sweep.store import stored_runs

# Rows: registry policy and its options. FGD also runs without its descheduler, to tell what its
# placement does from what its moves do. GRMU's headline row is with its consolidation (its default),
# `grmu-consolidate`, which names the option as the stored row of that name does (made when the
# default was off); `grmu-arrival` is GRMU without it. The stored row `grmu` (no consolidation, by
# the old default) is no longer shown.
ROWS: dict[str, tuple[str, tuple[tuple[str, Any], ...]]] = {
    "dra": ("dra", ()),
    "fgd": ("fgd", ()),
    "fgd-place": ("fgd", (("deschedule", False),)),
    "grmu-consolidate": ("grmu", (("consolidate", True),)),
    "grmu-arrival": ("grmu", (("consolidate", False),)),
}
RIVALS = tuple(ROWS)
CONTROL = "ff"  # run here and compared with the stored loads sweep: the pairing check
LABELS = {
    **sweep.POLICY_LABELS,
    "dra": "DRA (what pods get)",
    "fgd": "FGD",
    "fgd-place": "FGD, no moves",
    "grmu-consolidate": "GRMU",
    "grmu-arrival": "GRMU, no consolidation",
}
COLORS = {
    **sweep.POLICY_COLORS,
    "dra": "tab:purple",
    "fgd": "tab:brown",
    "fgd-place": "tan",
    "grmu-consolidate": "tab:red",
    "grmu-arrival": "salmon",
}
QUICK = dataclasses.replace(sweep.QUICK, seeds=(1, 2, 3, 4, 5))
FULL = dataclasses.replace(sweep.FULL, seeds=(1, 2, 3))
QUICK_LOADS = (0.5, 0.75, 1.0)
FULL_LOADS = (0.85,)
COMPARED = ("active_pms", "acceptance", "energy_kwh_per_gpu_hour", "migrations_per_hour")


def cells(scale: sweep.Scale, loads: tuple[float, ...], rows: tuple[str, ...]) -> list[Cell]:
    """The FF control and the rows `rows` at every load and seed of the scale."""
    out = policy_load_cells(scale, loads, (CONTROL,))
    for row in rows:
        policy, options = ROWS[row]
        out += [
            Cell(row, c.col, policy, c.config, c.seed)
            for c in policy_load_cells(scale, loads, (policy,), options)
        ]
    return out


def paper_runs(scale: sweep.Scale, out: Path) -> list[RunRecord]:
    """The stored loads-sweep runs of FF, MFI, TC and OrigaMIG at `scale` (as the loads sweep keeps
    them, whatever code made them: the quick cells recompute identically, REPRODUCTION.md)."""
    runs = stored_runs("loads", scale, out, any_code=True)
    if not runs:
        raise UserError(
            f"no stored loads runs at {scale.describe()}: run python -m benchmarks.paper.loads first"
        )
    return [r for r in runs if r.policy in paper.POLICIES]


def check_pairing(sw: Sweep, stored: list[RunRecord]) -> int:
    """Every FF run made here equals the stored one of its seed and load (the same requests): the
    number of runs compared; a difference stops the script."""
    mine = {(r.col, r.seed): r for r in sw.runs if r.policy == CONTROL}
    compared = 0
    for r in stored:
        here = mine.get((r.col, r.seed))
        if r.policy != CONTROL or here is None:
            continue
        if here.requests != r.requests or here.metrics != r.metrics:
            raise UserError(
                f"FF at load {r.col} seed {r.seed}: this code gives other metrics than the stored "
                "loads sweep, so its runs are not paired with the rivals'; rerun benchmarks.paper.loads"
            )
        compared += 1
    return compared


def analyse(sw: Sweep, loads: tuple[float, ...]) -> dict[str, Any]:
    """Per load and rival: OrigaMIG against it paired by seed, and the rival against FF and TC."""
    out: dict[str, Any] = {}
    for load in loads:
        col = f"{load:g}"
        per: dict[str, Any] = {}
        for rival in RIVALS:
            pairs = sw.paired("origamig", rival, col, "active_pms")
            if not pairs:
                continue
            per[rival] = {
                "origamig_fewer_pms": [sum(1 for _, a, b in pairs if a < b), len(pairs)],
                "origamig_pms_reduction_pct": sw.reduction_pct("origamig", rival, col),
                "origamig_acceptance_gain_pp": sw.gain("origamig", rival, col, "acceptance", 100),
                "rival_pms_reduction_vs_ff_pct": sw.reduction_pct(rival, "ff", col),
                "rival_pms_reduction_vs_tc_pct": sw.reduction_pct(rival, "tc", col),
                "rival_acceptance_gain_vs_ff_pp": sw.gain(rival, "ff", col, "acceptance", 100),
                "migrations_per_hour": {
                    p: sw.metric(p, col, "migrations_per_hour").mean for p in (rival, "origamig", "tc")
                },
            }
        out[col] = per
    return out


def print_tables(sw: Sweep, loads: tuple[float, ...], findings: dict[str, Any]) -> None:
    policies = [p for p in (*paper.POLICIES, *RIVALS) if any(r.row == p for r in sw.runs)]
    for load in loads:
        col = f"{load:g}"
        rows = []
        for key in TABLE_KEYS:
            shown: Shown = sweep.SHOWN_BY_KEY[key]
            rows.append(
                [shown.label]
                + [sweep.fmt(sw.metric(p, col, key), shown.factor, shown.digits) for p in policies]
            )
        sweep.print_table(
            f"Load {col} — {sw.scale.describe()}", ["metric", *(LABELS[p] for p in policies)], rows, ""
        )
        rows = []
        for rival, v in findings[col].items():
            m = v["migrations_per_hour"]
            rows.append(
                [
                    LABELS[rival],
                    "{}/{}".format(*v["origamig_fewer_pms"]),
                    sweep.fmt(v["origamig_pms_reduction_pct"]),
                    sweep.fmt(v["origamig_acceptance_gain_pp"]),
                    sweep.fmt(v["rival_pms_reduction_vs_ff_pct"]),
                    sweep.fmt(v["rival_pms_reduction_vs_tc_pct"]),
                    " / ".join("–" if m[p] is None else f"{m[p]:.1f}" for p in (rival, "origamig")),
                ]
            )
        sweep.print_table(
            f"Load {col}: OrigaMIG against each rival, paired by seed",
            [
                "rival",
                "O fewer PMs (runs)",
                "O fewer PMs (%)",
                "O accept. (pp)",
                "rival fewer PMs vs FF (%)",
                "rival fewer PMs vs TC (%)",
                "migr./h rival / O",
            ],
            rows,
            "± is the 95% CI over seeds (n ≥ 3), else the range",
        )


def draw(sw: Sweep, loads: tuple[float, ...], out_dir: Path) -> Path:
    """Paired by seed: fewer active PMs than FF (%) and acceptance, per policy and load."""
    policies = [p for p in (*paper.POLICIES, *RIVALS) if any(r.row == p for r in sw.runs)]
    panels = (
        ("Fewer active PMs than FF (%, paired by seed)", lambda p, col: sw.reduction_pct(p, "ff", col), 1),
        ("Acceptance (% of requested slices)", lambda p, col: sw.metric(p, col, "acceptance"), 100),
    )
    fig, axes = sweep.figure(1, 2, 12, 4.5, f"Table 8 with the rivals — {sw.scale.describe()}")
    width = 0.8 / len(policies)
    for ax, (label, stat, factor) in zip(axes.flat, panels, strict=True):
        for n, p in enumerate(policies):
            stats = [stat(p, f"{x:g}") for x in loads]
            xs = [i + (n - (len(policies) - 1) / 2) * width for i in range(len(loads))]
            ys = [(s.mean or 0.0) * factor for s in stats]
            errs = sweep.errbars(stats, factor)
            ax.bar(xs, ys, width, yerr=errs, color=COLORS[p], label=LABELS[p], capsize=2)
        ax.set_xticks(range(len(loads)), [f"ρ = {x:g}" for x in loads])
        ax.set_ylabel(label)
        ax.axhline(0, color="black", lw=0.8)
        ax.grid(alpha=0.3, axis="y")
    axes.flat[1].set_ylim(bottom=50)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(policies), fontsize=9, frameon=False)
    return sweep.save_figure(fig, sw, out_dir, bottom=0.12)


def main(args: argparse.Namespace) -> None:
    scale = sweep_cli.scale_from(args, QUICK, FULL)
    loads = FULL_LOADS if args.full else QUICK_LOADS
    rivals = tuple(args.policies.split(",")) if args.policies else RIVALS
    unknown = sorted(set(rivals) - set(RIVALS))
    if unknown:
        raise UserError(f"--policies: unknown {', '.join(unknown)} (known: {', '.join(RIVALS)})")
    stored = paper_runs(scale, args.out)
    sw = sweep_cli.run_or_load("rivals", scale, cells(scale, loads, rivals), args)
    compared = check_pairing(sw, stored)
    paired = Sweep(sw.name, sw.scale, sw.cells, [*sw.runs, *(r for r in stored if r.policy != CONTROL)])
    paired_loads = tuple(float(c) for c in dict.fromkeys(f"{x:g}" for x in loads))
    findings = analyse(paired, paired_loads)
    print_tables(paired, paired_loads, findings)
    extra = {"loads": list(paired_loads), "ff_runs_equal_to_stored": compared, "findings": findings}
    path = sweep.write_json(sw, extra, args.out)
    png = draw(paired, paired_loads, args.out)
    print(f"{sw.scale.describe()}\nFF control: {compared} runs equal to the stored loads sweep")
    print(f"wall time {sw.wall_s:.0f} s; wrote {path} and {png}")


if __name__ == "__main__":
    p = sweep_cli.parser(__doc__ or "", QUICK, FULL, RESULTS)
    p.add_argument("--policies", default=None, help="comma-separated rivals to run now (default all)")
    sweep_cli.main_wrapper(main, p.parse_args())
