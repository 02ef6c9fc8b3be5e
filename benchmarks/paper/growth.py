"""Fig. 7 of the paper (§6.7): the data center grows from 128 to 4,096 PMs at load 0.85 — and the remedy.

Every size keeps the paper's mix (3/4 of the PMs with 2x A100-40GB, 1/4 with 2x A30) and the same load
per PM: each GPU model's arrival rate is set so that it carries ρ = 0.85 on its own GPUs
(docs/simulator.md#workload), so the requests grow with the PMs. One seed, as the paper. Rows:

- FF and TC, the baselines;
- OrigaMIG as the paper runs it: at most one call per 10 s check (`calls_per_step=1`), so at most
  360 calls per hour whatever the size — the limit the paper blames for its shrinking gain;
- the remedy the paper proposes and does not test, calls side by side on disjoint neighborhoods
  (`calls_per_step=K`, docs/policies.md#extensions): `side-4` (K = 4 at every size) and
  `side-scaled` (K = PMs/128: one call per 128 PMs per check, the paper's own ratio at 128 PMs).
  Side-by-side calls each last their own modeled time, in parallel (an operator needs K cores);
  `--solve-workers N` solves them in N processes here too (the same results, less wall time).
  A row whose K equals another's at a size (side-scaled is K = 1 at 128 PMs, K = 4 at 512) is that
  row's run, not a second one.

Window: the paper's 48 h warm-up, then one measured day ("simulate one day"; `--quick`: 3 h + 3 h).
Calls are deterministic (HiGHS, 1 thread, at most 100 branch-and-bound nodes, no wall-clock limit, a
call lasting its modeled time), so the results do not depend on the machine's load. Prints a table per
size (active PMs; fewer PMs than FF and than TC; acceptance; calls per hour; median call, modeled and
wall-clock; migrations per hour; the simulation's own wall time) with the paper's values in brackets,
then one row per size; writes benchmarks/results/growth-<scale>.json (cell by cell: a rerun resumes)
and growth-<scale>.png (fewer PMs than FF, and calls per hour, against PMs).

    python -m benchmarks.paper.growth --quick                        # 128 and 256 PMs, 3 h + 3 h (smoke run)
    python -m benchmarks.paper.growth --full --sizes 128             # one size, every row
    nohup python -m benchmarks.paper.growth --full --workers 1 > growth.log 2>&1 &   # 128 ... 4,096 PMs
    python -m benchmarks.paper.growth --full --scheduler tcp://HOST:8786             # on a Dask cluster
    python -m benchmarks.paper.growth --full --cells                 # what is done, what is left
    python -m benchmarks.paper.growth --full --policies side-4 --sizes 512 --solve-workers 2
    python -m benchmarks.paper.growth --full --gather DIR1 DIR2 --out DIR   # rows of separate commands
"""

from __future__ import annotations

import argparse
import dataclasses
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks import RESULTS, sweep_cli
from benchmarks import paper_values as paper
from origamig.errors import UserError
from origamig.study import sweep
from origamig.study.sweep import Cell, RunRecord, Scale, Sweep

NAME = "growth"
LOAD = paper.FIG7_LOAD
SIZES = paper.FIG7_PMS
QUICK_SIZES = (128, 256)
# The paper's warm-up (§6.1) and one measured day; one seed; the sweeps' deterministic call budget.
FULL = Scale("full", pms=128, warmup_h=48, measure_h=24 * paper.FIG7_DAYS, seeds=(1,), time_limit_s=None,
             deterministic=True, work_limit=100)  # fmt: skip
QUICK = dataclasses.replace(FULL, name="quick", warmup_h=3, measure_h=3)
PMS_PER_CALL = 128  # side-scaled: one call per this many PMs per check (the paper's ratio at 128 PMs)
SIDE_FIXED = 4
NAMES = ("ff", "tc", "origamig", f"side-{SIDE_FIXED}", "side-scaled")
LABELS = {"ff": "FF", "tc": "TC", "origamig": "OrigaMIG (1 call/check)"}


# --- cells -----------------------------------------------------------------------------------------
def calls_per_step(name: str, pms: int) -> int | None:
    """K of an OrigaMIG row at `pms` PMs (None for FF and TC): origamig 1, side-N N, side-scaled
    PMs/128 (at least 1)."""
    if name in ("ff", "tc"):
        return None
    if name == "origamig":
        return 1
    if name == "side-scaled":
        return max(1, pms // PMS_PER_CALL)
    if name.startswith("side-") and name[5:].isdigit() and int(name[5:]) >= 1:
        return int(name[5:])
    raise UserError(f"--policies: unknown {name!r} (known: ff, tc, origamig, side-N, side-scaled)")


def row_of(k: int) -> str:
    """The stored row of OrigaMIG with K calls per check."""
    return "origamig" if k == 1 else f"origamig-k{k}"


def config_of(scale: Scale, pms: int, options: tuple[tuple[str, Any], ...] = ()) -> Any:
    return scale.config(load=LOAD, pms=pms, policy_options=options)


def cells(
    scale: Scale, sizes: Sequence[int], names: Sequence[str] = NAMES, solve_workers: int = 1
) -> list[Cell]:
    """One cell per (size, row, seed): column = the PM count; OrigaMIG rows deduplicated by K; a
    side-by-side row's calls solved by `solve_workers` processes (the same cell and results)."""
    out: list[Cell] = []
    for pms in sizes:
        ks: list[int] = []
        for name in names:
            k = calls_per_step(name, pms)
            if k is None:
                config = config_of(scale, pms)
                out.extend(Cell(name, str(pms), name, config, seed) for seed in scale.seeds)
                continue
            if k in ks:
                continue
            ks.append(k)
            side = {"calls_per_step": k} | ({"solve_workers": solve_workers} if solve_workers > 1 else {})
            options = scale.origamig_options(**(side if k > 1 else {}))
            config = config_of(scale, pms, options)
            out.extend(Cell(row_of(k), str(pms), "origamig", config, seed) for seed in scale.seeds)
    return out


# --- analysis --------------------------------------------------------------------------------------
def rows_at(sw: Sweep, pms: int, names: Sequence[str] = NAMES) -> list[tuple[str, list[str]]]:
    """The stored rows at `pms` PMs in table order, each with the names it stands for."""
    col = str(pms)
    present = {r.row for r in sw.runs if r.col == col}
    out: dict[str, list[str]] = {}
    for name in names:
        k = calls_per_step(name, pms)
        row = name if k is None else row_of(k)
        out.setdefault(row, []).append(name)
    extra = sorted(present - set(out), key=lambda r: int(r.rsplit("k", 1)[-1]) if "-k" in r else 0)
    for row in extra:  # rows of other commands (say side-8)
        out[row] = [row]
    return [(row, names_) for row, names_ in out.items() if row in present]


def label(row: str, names: Sequence[str], pms: int) -> str:
    if row in LABELS:
        return LABELS[row] + ("" if names == [row] or row != "origamig" else " = side-scaled")
    k = int(row.rsplit("k", 1)[-1])
    shown = [n for n in names if n.startswith("side-")]
    return f"OrigaMIG, {k} calls/check ({', '.join(shown) or row})"


def value(sw: Sweep, row: str, col: str, key: str) -> float | None:
    return sw.metric(row, col, key).mean


def run_of(sw: Sweep, row: str, col: str) -> RunRecord | None:
    """The stored run of (row, col) (first seed)."""
    found = [r for r in sw.runs if r.row == row and r.col == col]
    return min(found, key=lambda r: r.seed) if found else None


def analyse(sw: Sweep, sizes: Sequence[int], names: Sequence[str] = NAMES) -> dict[str, Any]:
    """Per size and row: the metrics of the table and the reductions in active PMs over FF and TC."""
    out: dict[str, Any] = {}
    for pms in sizes:
        col = str(pms)
        per_row: dict[str, Any] = {}
        for row, row_names in rows_at(sw, pms, names):
            run_ = run_of(sw, row, col)
            assert run_ is not None
            counters = run_.counters
            per_row[row] = {
                "names": row_names,
                "calls_per_step": run_.policy_options.get("calls_per_step", 1)
                if run_.policy == "origamig"
                else None,
                "active_pms": value(sw, row, col, "active_pms"),
                "active_pms_pct": value(sw, row, col, "active_pms_pct"),
                "fewer_pms_than_ff_pct": sw.reduction_pct(row, "ff", col).mean if row != "ff" else None,
                "fewer_pms_than_tc_pct": sw.reduction_pct(row, "tc", col).mean
                if row not in ("ff", "tc")
                else None,
                "acceptance_pct": _pct(value(sw, row, col, "acceptance")),
                "calls_per_hour": value(sw, row, col, "calls_per_hour"),
                "median_call_modeled_s": value(sw, row, col, "median_call_s"),
                "median_call_wall_s": counters.get("median_call_s") if run_.policy == "origamig" else None,
                "longest_call_wall_s": counters.get("time_longest_call_s"),
                "calls_side_by_side": counters.get("calls_side_by_side"),
                "calls_reused": counters.get("calls_reused"),
                "migrations_per_hour": value(sw, row, col, "migrations_per_hour"),
                "energy_kwh_per_gpu_hour": value(sw, row, col, "energy_kwh_per_gpu_hour"),
                "requests": run_.requests,
                "calls": run_.calls,
                "sim_wall_s": run_.wall_s,
                "sim_cpu_s": run_.cpu_s,
            }
        if per_row:
            out[col] = per_row
    return out


def _pct(x: float | None) -> float | None:
    return None if x is None else 100.0 * x


def paper_row(pms: int) -> dict[str, Any]:
    """The paper's Fig. 7 values at `pms` PMs (OrigaMIG with one call per check; FF's acceptance)."""
    below = paper.FIG7_PMS_REDUCTION_VS_FF_BELOW_PCT.get(pms)
    return {
        "fewer_pms_than_ff_pct": paper.FIG7_PMS_REDUCTION_VS_FF_PCT.get(pms),
        "fewer_pms_than_ff_below_pct": below,
        "calls_per_hour": paper.FIG7_CALLS_PER_HOUR.get(pms),
        "median_call_s": paper.FIG7_MEDIAN_CALL_S.get(pms),
        "ff_admits_all": pms >= paper.FIG7_FF_ADMITS_ALL_FROM_PMS or None,
    }


# --- output ----------------------------------------------------------------------------------------
def _f(x: float | None, digits: int = 1) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def _with_paper(ours: str, ref: float | None, digits: int = 1, prefix: str = "") -> str:
    return ours if ref is None else f"{ours} ({prefix}{ref:.{digits}f})"


def _time(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    return f"{seconds:.0f} s" if seconds < 600 else f"{seconds / 3600:.2f} h"


HEADER = ("row", "active PMs", "fewer than FF (%)", "fewer than TC (%)", "accept. (%)", "calls/h",
          "median call modeled (s)", "median call wall (s)", "migr./h", "sim wall")  # fmt: skip


def print_tables(sw: Sweep, findings: dict[str, Any]) -> None:
    scale = sw.scale
    for col, per_row in findings.items():
        pms = int(col)
        ref = paper_row(pms)
        header = HEADER
        rows = []
        for row, v in per_row.items():
            is_paper = row == "origamig"
            red_ff = _f(v["fewer_pms_than_ff_pct"], 2)
            if is_paper and ref["fewer_pms_than_ff_pct"] is not None:
                red_ff = _with_paper(red_ff, ref["fewer_pms_than_ff_pct"])
            elif is_paper and ref["fewer_pms_than_ff_below_pct"] is not None:
                red_ff = _with_paper(red_ff, ref["fewer_pms_than_ff_below_pct"], prefix="< ")
            accept = _f(v["acceptance_pct"], 2)
            if row == "ff" and ref["ff_admits_all"]:
                accept += " (100)"
            calls = _f(v["calls_per_hour"])
            median_wall = _f(v["median_call_wall_s"], 2)
            if is_paper:
                calls = _with_paper(calls, ref["calls_per_hour"])
                median_wall = _with_paper(median_wall, ref["median_call_s"], 2)
            sim = _time(v["sim_wall_s"])
            rows.append([label(row, v["names"], pms), _f(v["active_pms"], 2), red_ff,
                         _f(v["fewer_pms_than_tc_pct"], 2), accept, calls, _f(v["median_call_modeled_s"], 2),
                         median_wall, _f(v["migrations_per_hour"]), sim])  # fmt: skip
        sweep.print_table(
            f"{pms} PMs ({pms * 3 // 4} x 2 A100 + {pms - pms * 3 // 4} x 2 A30), load {LOAD:g} — "
            f"{describe(scale)}",
            header,
            rows,
            "(paper, Fig. 7 / §6.7: OrigaMIG with one call per check; FF admits every request from 1024 "
            "PMs). TC's calls are its compactions that move VMs. Median call modeled: the simulator's "
            "deterministic duration; wall: measured on this machine, Algorithm 1's pass over the PMs "
            "included. sim wall: the run itself.",
        )
    summary_rows = []
    for col, per_row in findings.items():
        ref = paper_row(int(col))
        o = per_row.get("origamig", {})
        side = {r: v for r, v in per_row.items() if r.startswith("origamig-k")}
        paper_red = ref["fewer_pms_than_ff_pct"]
        paper_red_text = (
            _f(paper_red) if paper_red is not None
            else f"< {ref['fewer_pms_than_ff_below_pct']:g}" if ref["fewer_pms_than_ff_below_pct"]
            else "–"
        )  # fmt: skip
        summary_rows.append(
            [
                col,
                _f(per_row.get("ff", {}).get("acceptance_pct"), 2),
                _f(per_row.get("tc", {}).get("fewer_pms_than_ff_pct"), 2),
                _f(o.get("fewer_pms_than_ff_pct"), 2),
                paper_red_text,
                "; ".join(
                    f"K={v['calls_per_step']}: {_f(v['fewer_pms_than_ff_pct'], 2)}" for v in side.values()
                )
                or "–",
                _f(o.get("calls_per_hour")),
                _f(ref["calls_per_hour"]),
                "; ".join(f"K={v['calls_per_step']}: {_f(v['calls_per_hour'])}" for v in side.values())
                or "–",
                _f(o.get("median_call_wall_s"), 2),
                _f(ref["median_call_s"], 2),
            ]
        )
    sweep.print_table(
        f"Fig. 7 — fewer active PMs than FF (%) and calls as the data center grows; {describe(scale)}",
        [
            "PMs",
            "FF accept. (%)",
            "TC",
            "OrigaMIG",
            "paper",
            "side by side",
            "calls/h",
            "paper",
            "side calls/h",
            "median call wall (s)",
            "paper",
        ],
        summary_rows,
        f"paper: §6.7 text; OrigaMIG starts at most one call per 10 s check "
        f"({paper.FIG7_CALLS_CAP_PER_HOUR:g} calls/h); side by side: K calls per check on disjoint PMs",
    )


def describe(scale: Scale) -> str:
    """The scale's description without its nominal PM count (each column has its own)."""
    return scale.describe().replace(f"{scale.pms} PMs, ", "", 1)


def draw(sw: Sweep, findings: dict[str, Any], out_dir: Path = RESULTS) -> Path:
    sizes = [int(c) for c in findings]
    fig, axes = sweep.figure(
        1, 2, 13, 5, f"Fig. 7 — growing the data center at load {LOAD:g}; {describe(sw.scale)}"
    )
    title = f"Fig. 7 — growing the data center at load {LOAD:g}; {describe(sw.scale)}; one run per point"
    fig.suptitle("\n".join(textwrap.wrap(title, width=140)), fontsize=11)  # one seed: no error bars
    ax_red, ax_calls = axes[0]
    rows = list(dict.fromkeys(r for per_row in findings.values() for r in per_row if r != "ff"))
    rows.sort(key=lambda r: (r != "tc", int(r.rsplit("k", 1)[-1]) if "-k" in r else 1))
    side_colors = ["tab:purple", "tab:red", "tab:brown", "tab:pink", "tab:olive"]
    for n, row in enumerate(rows):
        if row in ("tc", "origamig"):
            color, text = sweep.POLICY_COLORS[row], LABELS[row]
        else:
            color, text = (
                side_colors[(n - 2) % len(side_colors)],
                f"OrigaMIG, {row.rsplit('k', 1)[-1]} calls/check",
            )
        points = [(int(c), per_row[row]) for c, per_row in findings.items() if row in per_row]
        xs = [x for x, v in points if v["fewer_pms_than_ff_pct"] is not None]
        ys = [v["fewer_pms_than_ff_pct"] for _, v in points if v["fewer_pms_than_ff_pct"] is not None]
        ax_red.plot(xs, ys, marker="o", ms=4, color=color, label=f"{text} (ours)")
        if row != "tc":
            xs = [x for x, v in points if v["calls_per_hour"] is not None]
            ys = [v["calls_per_hour"] for _, v in points if v["calls_per_hour"] is not None]
            ax_calls.plot(xs, ys, marker="o", ms=4, color=color, label=f"{text} (ours)")
    # side-scaled: K = PMs/128 at each size, whichever stored row holds it
    scaled = [(int(c), per_row[row_of(max(1, int(c) // PMS_PER_CALL))]) for c, per_row in findings.items()
              if row_of(max(1, int(c) // PMS_PER_CALL)) in per_row]  # fmt: skip
    if len(scaled) > 1:
        for ax, key in ((ax_red, "fewer_pms_than_ff_pct"), (ax_calls, "calls_per_hour")):
            pts = [(x, v[key]) for x, v in scaled if v[key] is not None]
            ax.plot([x for x, _ in pts], [y for _, y in pts], ls="--", color="black", lw=1,
                    label=f"side-scaled: {PMS_PER_CALL} PMs per call (ours)")  # fmt: skip
    blue = sweep.POLICY_COLORS["origamig"]
    red = paper.FIG7_PMS_REDUCTION_VS_FF_PCT
    ax_red.scatter(list(red), list(red.values()), marker="D", s=45, facecolors="none", edgecolors=blue,
                   label="OrigaMIG (paper, Fig. 7)")  # fmt: skip
    below = paper.FIG7_PMS_REDUCTION_VS_FF_BELOW_PCT
    ax_red.scatter(list(below), list(below.values()), marker="v", s=45, facecolors="none", edgecolors=blue,
                   label="OrigaMIG (paper: below this)")  # fmt: skip
    calls = paper.FIG7_CALLS_PER_HOUR
    ax_calls.scatter(list(calls), list(calls.values()), marker="D", s=45, facecolors="none", edgecolors=blue,
                     label="OrigaMIG (paper, Fig. 7)")  # fmt: skip
    ax_calls.axhline(paper.FIG7_CALLS_CAP_PER_HOUR, ls=":", color="gray", lw=1,
                     label="one call per 10 s check (360/h)")  # fmt: skip
    ax_calls.set_yscale("log")
    from matplotlib.ticker import LogLocator, NullFormatter, ScalarFormatter

    ax_calls.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax_calls.yaxis.set_major_formatter(ScalarFormatter())
    ax_calls.yaxis.set_minor_formatter(NullFormatter())
    ticks = sorted({*sizes, *paper.FIG7_PMS})
    for ax, ylabel in ((ax_red, "Fewer active PMs than FF (%)"), (ax_calls, "Calls per hour (log)")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks)
        ax.set_xticklabels([str(t) for t in ticks])
        ax.set_xlabel("PMs (3/4 with 2x A100-40GB, 1/4 with 2x A30)")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    ax_red.axhline(0, color="black", lw=0.5)
    ax_red.set_ylim(top=ax_red.get_ylim()[1] * 1.45)  # room above the lines for the legend
    ax_red.legend(fontsize=8, loc="upper right")
    ax_calls.legend(fontsize=8)
    return sweep.save_figure(fig, sw, out_dir)


# --- main ------------------------------------------------------------------------------------------
def parse_sizes(text: str | None, default: Sequence[int]) -> tuple[int, ...]:
    if not text:
        return tuple(default)
    try:
        sizes = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise UserError(f"--sizes: {text!r} is not a comma-separated list of PM counts") from None
    bad = [s for s in sizes if s < 4 or s % 4]
    if bad:
        raise UserError(f"--sizes: {bad} (each size must be a multiple of 4, so that 1/4 of its PMs are A30)")
    return sizes


def gathered(scale: Scale, folders: Sequence[Path]) -> Sweep:
    """The stored runs of this scale in `folders` (runs made by separate commands), as one sweep. A
    cell stored in two folders is kept once when both runs give the same metrics, else a `UserError`
    naming both folders."""
    sweeps = [sweep.load_sweep(NAME, scale, folder) for folder in folders]
    kept: dict[str, tuple[Path, Cell, RunRecord]] = {}
    for folder, sw in zip(folders, sweeps, strict=True):
        by_key = {r.cell: r for r in sw.runs}
        for cell in sw.cells:
            run_ = by_key[cell.key]
            if cell.key in kept:
                first, _, other = kept[cell.key]
                if other.metrics != run_.metrics:
                    raise UserError(
                        f"--gather: {cell.row} at {cell.col} PMs differs between {first} and {folder}"
                    )
                continue
            kept[cell.key] = (folder, cell, run_)
    return dataclasses.replace(
        sweeps[0],
        cells=[cell for _, cell, _ in kept.values()],
        runs=[run_ for _, _, run_ in kept.values()],
        wall_s=sum(sw.wall_s for sw in sweeps),
        failed=[f for sw in sweeps for f in sw.failed],
    )


def main(args: argparse.Namespace) -> None:
    scale = sweep_cli.with_warmup(sweep_cli.scale_from(args, QUICK, FULL), args.warmup)  # another "one day"
    sizes = parse_sizes(args.sizes, SIZES if args.full else QUICK_SIZES)
    names = tuple(args.policies.split(",")) if args.policies else NAMES
    for name in names:
        calls_per_step(name, 128)  # raises the UserError naming the known rows
    if args.solve_workers < 1:
        raise UserError(f"--solve-workers: {args.solve_workers} must be a positive integer")
    chosen = cells(scale, sizes, names, args.solve_workers)
    # Each stored run names its PM count; --gather: the runs of several folders, none run now.
    sw = gathered(scale, args.gather) if args.gather else sweep_cli.run_or_load(NAME, scale, chosen, args)
    shown = sorted({*sizes, *(int(r.col) for r in sw.runs)})  # with sizes run by earlier commands
    findings = analyse(sw, shown)
    print_tables(sw, findings)
    extra = {
        "load": LOAD,
        "sizes": shown,
        "rows": {
            "side_fixed_calls_per_step": SIDE_FIXED,
            "side_scaled_pms_per_call": PMS_PER_CALL,
            "names": list(NAMES),
        },
        "findings": findings,
        "paper": {str(pms): paper_row(pms) for pms in paper.FIG7_PMS},
    }
    path = sweep.write_json(sw, extra, args.out)
    png = draw(sw, findings, args.out)
    print(f"{describe(sw.scale)}\nsum of cell wall times {sw.wall_s:.0f} s; wrote {path} and {png}")


def build_parser() -> argparse.ArgumentParser:
    p = sweep_cli.parser(__doc__ or "", QUICK, FULL, RESULTS)
    p.add_argument(
        "--sizes",
        default=None,
        help="comma-separated PM counts (default 128,...,4096 full; 128,256 quick)",
    )
    sweep_cli.add_warmup(p, NAME, QUICK, FULL)
    p.add_argument(
        "--policies",
        default=None,
        help=f"rows to run now, comma-separated (default {','.join(NAMES)}; side-N: N calls per check); "
        "the tables show every stored run",
    )
    p.add_argument(
        "--gather",
        type=Path,
        nargs="+",
        default=None,
        metavar="FOLDER",
        help="no runs: the tables and figure of the stored runs in these results folders together "
        "(rows run by separate commands), written to --out",
    )
    p.add_argument(
        "--solve-workers",
        type=int,
        default=1,
        help="processes that solve a check's side-by-side calls together (default 1: in turn); the "
        "same results, less wall time with spare cores",
    )
    return p


if __name__ == "__main__":
    sweep_cli.main_wrapper(main, build_parser().parse_args())
