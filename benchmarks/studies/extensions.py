"""OrigaMIG against TC and FF, and OrigaMIG's variants beyond the paper, paired by seed at one load.

The question this study answers: does OrigaMIG keep fewer PMs active than TC in *every* paired run,
while migrating less, and which of its variants move that margin? Rows:

- `ff`, `tc`: the baselines (TC with its default reading, docs/policies.md#tc);
- `origamig`: the policy as shipped (Algorithm 1 as written, docs/policies.md#algorithm-1, arrivals
  placed by TC's best-fit rule, docs/policies.md#arrival-rule);
- `arrival-ff`: the paper's OrigaMIG, arrivals placed by first fit; `arrival-ff-nodes1000` and
  `arrival-ff-cpsat` the same with 10x the node budget and with CP-SAT (the paper's solver; 2 workers,
  10 deterministic seconds per call), to tell whether first fit's result is the budget's doing;
- further rows (`ROW_OPTIONS`) try what the paper proposes or leaves open, on first-fit arrivals
  (they were measured before TC's rule became the default): the earlier reading of Algorithm 1
  (`sources`: no consolidation call unless a source can be emptied), neighborhoods bounded by VMs
  (`vms`), a larger neighborhood (`mmax-24`), sources beyond M_max/2 allowed to receive (`spill`:
  as written, Algorithm 1 leaves them out of both S and R), consolidation calls that rotate
  through the class's receivers before silencing it (`rotate`), and combinations of these with each
  other and with a larger migration penalty δ (`spill-rotate`, `spill-delta13`, `spill-delta15`);
  `spill-arrival-tc` is `spill` on the shipped arrival rule; `grow-32` and `grow-64` retry a
  consolidation call that changed nothing on twice as many PMs, up to 32 or 64 (`grow_to`);
  `side-by-side` starts up to 8 calls per check on disjoint PMs (`calls_per_step`), covering a
  class with several 16-PM neighborhoods at once.

Each row is OrigaMIG with some options; every cell runs the same requests per seed. Prints a table
with means ± 95% CIs, the paired count "fewer active PMs than TC" and the migration ratio to TC,
writes benchmarks/results/extensions-<scale>.json and .png. Finished cells are kept in the JSON file
as they finish, and a rerun resumes (see `--cells`).

    python -m benchmarks.studies.extensions --quick                     # 32 PMs, 24 h + 24 h, seeds 1, 2
    python -m benchmarks.studies.extensions --quick --seeds 3..5 --rows origamig   # seeds not tuned on
    python -m benchmarks.studies.extensions --full --rows origamig --seeds 5       # 128 PMs, 48 h + 72 h
    python -m benchmarks.studies.extensions --full --load 0.85 --rows origamig --seeds 5 --cells
                                                                        # what is left
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
from origamig.study.sweep import Cell, Scale, Sweep

QUICK = dataclasses.replace(sweep.QUICK, seeds=(1, 2))
FULL = sweep.FULL
BASELINES = ("ff", "tc")
# OrigaMIG variants: row name → policy options on top of the scale's solver budget.
FF = {"arrival": paper.ORIGAMIG_ARRIVAL}  # the paper's first fit
ROW_OPTIONS: dict[str, dict[str, Any]] = {
    "origamig": {},
    "arrival-ff": FF,
    # The fidelity question: is first fit's result the call budget's or the solver's doing?
    "arrival-ff-nodes1000": {**FF, "work_limit": 1000},  # 10x the node budget
    "arrival-ff-cpsat": {**FF, "solver": "cpsat", "work_limit": 10, "threads": 2},  # 10 deterministic s
    "sources": {**FF, "consolidation": "sources"},
    "vms": {**FF, "bound": "vms"},
    "mmax-24": {**FF, "m_max": 24, "n_max": 96},
    "spill": {**FF, "spill": True},
    "rotate": {**FF, "rotate": True},
    "spill-rotate": {**FF, "spill": True, "rotate": True},
    "spill-delta13": {**FF, "spill": True, "delta": 13},
    "spill-delta15": {**FF, "spill": True, "delta": 15},
    "spill-arrival-tc": {"spill": True, "arrival": "tc"},
    "grow-32": {"grow_to": 32},
    "grow-64": {"grow_to": 64},
    "side-by-side": {"calls_per_step": 8},
}
LABELS = {
    "ff": "FF",
    "tc": "TC",
    "origamig": "OrigaMIG (as shipped: arrivals by TC's rule)",
    "arrival-ff": "OrigaMIG, arrivals by first fit (the paper's)",
    "arrival-ff-nodes1000": "first fit, 10x the node budget (1,000 nodes per call)",
    "arrival-ff-cpsat": "first fit, CP-SAT (2 workers, 10 deterministic s per call)",
    "sources": "first fit, consolidation only with a source (earlier reading)",
    "vms": "first fit, bound=vms (N_max only)",
    "mmax-24": "first fit, M_max = 24, N_max = 96",
    "spill": "first fit, sources beyond M_max/2 may receive",
    "rotate": "first fit, rotating receivers before silencing a class",
    "spill-rotate": "first fit, spill + rotate",
    "spill-delta13": "first fit, spill, migration penalty δ = 13",
    "spill-delta15": "first fit, spill, migration penalty δ = 15",
    "spill-arrival-tc": "OrigaMIG, spill",
    "grow-32": "OrigaMIG, neighborhoods grown up to 32 PMs",
    "grow-64": "OrigaMIG, neighborhoods grown up to 64 PMs",
    "side-by-side": "OrigaMIG, up to 8 calls per check on disjoint PMs",
}
SHOW = (
    "acceptance",
    "active_pms",
    "pms_per_100_gpus_served",
    "active_gpus_pct",
    "migrations_per_hour",
    "calls_per_hour",
    "median_call_s",
    "energy_kwh_per_gpu_hour",
)


def cells(scale: Scale, rows: tuple[str, ...], load: float) -> list[Cell]:
    col = f"{load:g}"
    out = []
    for row in rows:
        if row in BASELINES:
            config = scale.config(load=load)
            out.extend(Cell(row, col, row, config, s) for s in scale.seeds)
            continue
        if row not in ROW_OPTIONS:
            known = ", ".join((*BASELINES, *ROW_OPTIONS))
            raise UserError(f"--rows: unknown row {row!r} (known: {known})")
        config = scale.config(load=load, policy_options=scale.origamig_options(**ROW_OPTIONS[row]))
        out.extend(Cell(row, col, "origamig", config, s) for s in scale.seeds)
    return out


def analyse(sw: Sweep, rows: tuple[str, ...], col: str) -> dict[str, Any]:
    """Per OrigaMIG row: paired wins on active PMs against TC and FF, migration ratio to TC."""
    out: dict[str, Any] = {}
    for row in rows:
        if row in BASELINES:
            continue
        pairs = sw.paired(row, "tc", col, "active_pms")
        migr = sw.paired(row, "tc", col, "migrations_per_hour")
        out[row] = {
            "fewer_pms_than_tc": [sum(a < b for _, a, b in pairs), len(pairs)],
            "fewer_migrations_than_tc": [sum(a < b for _, a, b in migr), len(migr)],
            "pms_vs_tc_by_seed": {s: a - b for s, a, b in pairs},
            "pms_reduction_vs_tc_pct": sw.reduction_pct(row, "tc", col),
            "pms_reduction_vs_ff_pct": sw.reduction_pct(row, "ff", col),
            "migration_ratio_to_tc": _paired_ratio(migr),
        }
    return out


def _paired_ratio(pairs: list[tuple[int, float, float]]) -> float | None:
    """Σ row / Σ base over the seeds both ran (the ratio of their means on those seeds)."""
    base = sum(b for _, _, b in pairs)
    return sum(a for _, a, _ in pairs) / base if base else None


def print_table(sw: Sweep, rows: tuple[str, ...], col: str, findings: dict[str, Any]) -> None:
    header = ["row", *(sweep.SHOWN_BY_KEY[k].label for k in SHOW), "< TC (PMs)", "migr. / TC"]
    lines = []
    for row in rows:
        line = [LABELS.get(row, row)]
        for key in SHOW:
            shown = sweep.SHOWN_BY_KEY[key]
            line.append(sweep.fmt(sw.metric(row, col, key), shown.factor, shown.digits))
        f = findings.get(row)
        if f:
            line.append("{}/{}".format(*f["fewer_pms_than_tc"]))
            ratio = f["migration_ratio_to_tc"]
            line.append("–" if ratio is None else f"{ratio:.2f}")
        else:
            line += ["", ""]
        lines.append(line)
    t11, tc = paper.TABLE11["origamig"], paper.TABLE10["tc-15min"]
    sweep.print_table(
        f"OrigaMIG vs TC at load {col} — {sw.scale.describe()}",
        header,
        lines,
        f"paper (128 PMs, load 0.85, Tables 10-11): TC {tc['active_pms']} PMs, {tc['migrations_per_hour']} "
        f"migr./h; OrigaMIG {t11['active_pms']} PMs, {t11['migrations_per_hour']} migr./h, "
        f"{t11['calls_per_hour']} calls/h",
    )


def draw(sw: Sweep, rows: tuple[str, ...], col: str, findings: dict[str, Any], out_dir: Path) -> Path:
    """Active PMs and migrations per hour per row; seeds as dots over the mean bar."""
    fig, axes = sweep.figure(
        1, 2, 14, 0.6 * len(rows) + 3, f"OrigaMIG vs TC at load {col}; {sw.scale.describe()}"
    )
    ys = list(range(len(rows)))[::-1]
    for ax, key in zip(axes[0], ("active_pms", "migrations_per_hour"), strict=True):
        shown = sweep.SHOWN_BY_KEY[key]
        stats = [sw.metric(r, col, key) for r in rows]
        colors = [sweep.POLICY_COLORS.get(r, sweep.OURS_COLOR) for r in rows]
        ax.barh(ys, [s.mean or 0.0 for s in stats], color=colors, alpha=0.5)
        for y, r in zip(ys, rows, strict=True):
            seeds = sw.by_seed(r, col, key)
            ax.scatter(list(seeds.values()), [y] * len(seeds), s=14, color="black", zorder=3)
        ax.set_yticks(ys)
        ax.set_yticklabels([LABELS.get(r, r) for r in rows], fontsize=8)
        ax.set_xlabel(f"{shown.label} (bars: mean over seeds; dots: each seed)")
        ax.grid(axis="x", alpha=0.3)
    low = min((s for r in rows for s in sw.by_seed(r, col, "active_pms").values()), default=0.0)
    axes[0, 0].set_xlim(left=max(0.0, 0.9 * low))
    return sweep.save_figure(fig, sw, out_dir)


def main(args: argparse.Namespace) -> None:
    scale = sweep_cli.scale_from(args, QUICK, FULL)
    rows = tuple(args.rows.split(",")) if args.rows else (*BASELINES, *ROW_OPTIONS)
    rows = tuple(dict.fromkeys((*BASELINES, *rows)))  # the baselines are always paired
    col = f"{args.load:g}"
    sw = sweep_cli.run_or_load("extensions", scale, cells(scale, rows, args.load), args)
    ran = {r.row for r in sw.runs if r.col == col}
    rows = tuple(r for r in dict.fromkeys((*rows, *(c.row for c in sw.cells if c.col == col))) if r in ran)
    findings = analyse(sw, rows, col)
    print_table(sw, rows, col, findings)
    extra = {"load": args.load, "rows": {r: ROW_OPTIONS.get(r, {}) for r in rows}, "findings": findings}
    path = sweep.write_json(sw, extra, args.out)
    png = draw(sw, rows, col, findings, args.out)
    print(f"{sw.scale.describe()}\nwall time {sw.wall_s:.0f} s; wrote {path} and {png}")


if __name__ == "__main__":
    p = sweep_cli.parser(__doc__ or "", QUICK, FULL, RESULTS)
    p.add_argument(
        "--rows", default=None, help=f"comma-separated rows (default all: {','.join(ROW_OPTIONS)})"
    )
    p.add_argument("--load", type=float, default=0.85, help="offered load (default 0.85)")
    sweep_cli.main_wrapper(main, p.parse_args())
