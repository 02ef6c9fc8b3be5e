"""The Pareto comparison: OrigaMIG against every rival at each one's migration rates, on fresh seeds.

At 128 PMs and ρ 0.85 every policy runs at the settings that trade migrations for packing:
OrigaMIG's migration penalty δ (2.5, 5, 10, 20, and per GB a move copies: 0.055, 0.11, 0.22);
FGD's descheduling ratio (0.02, 0.05, 0.1) and
period (15, 60 min); TC's compaction period (15, 30, 60 min); GRMU with its consolidation at basket
quotas large 0.5/0.75/1.0 × small 0.5/1.0, and without it; the policies that never migrate (FF, MFI,
DRA: what pods get); and the hybrids (OrigaMIG's calls with FGD's arrival rule, FGD's descheduler
with TC's). Seeds 1–5 tune (an OrigaMIG setting is matched to each rival on them), seeds 6–10 judge
(the comparison is made on them); the two groups are columns of the results and never mixed.

For each rival row, the OrigaMIG setting whose migration rate on the tuning seeds is the highest not above
the rival's (else the lowest) is set beside it on the judging seeds: paired by seed, the differences
in active PMs and GPUs (% of the rival's), acceptance (points), migrations and GB per hour, each
with its 95% CI. A difference counts only beyond the noise floor (`--noise-floor`, 0.25%: a change
that alters no placement decision has moved a 128-PM OrigaMIG run by about 0.2% of its active PMs,
through the timing of its calls) with its CI clear of zero; OrigaMIG dominates a rival when it keeps
fewer PMs on, no more GPUs and admits no less, at no more migrations per hour. Prints a table per
seed group and the paired table; writes benchmarks/results/frontier-<scale>.json (cell by cell: a
rerun resumes) and frontier-<scale>.png (active PMs and GPUs against migrations/h and GB/h, judging
seeds, each family's settings joined).

`--alibaba` runs every rival at its default setting on the Alibaba 2023 GPU trace at ρ
`ALIBABA_LOAD` (1.6, where FF admits about 90% of the requests at 128 PMs: an overloaded setting;
at the quick scale's 32 PMs FF admits them all, so `--quick --alibaba` only shows that every rival
runs there), into its own file (frontier-alibaba-<scale>.json); the trace is read from `--trace-dir`
only.

    python -m benchmarks.studies.frontier --quick                 # 32 PMs, 24 h + 24 h, seeds 1, 2 | 6, 7
    nohup python -m benchmarks.studies.frontier --full --workers 2 > frontier.log 2>&1 &
    python -m benchmarks.studies.frontier --full --families origamig,fgd --seeds 1..5   # tune first
    python -m benchmarks.studies.frontier --full --alibaba --trace-dir /path/to/cluster-trace-gpu-v2023
    python -m benchmarks.studies.frontier --full --cells          # what is done, what is left
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import RESULTS, sweep_cli
from benchmarks.studies import frontier_report as report
from origamig.errors import UserError
from origamig.study import sweep
from origamig.study.sweep import Cell, Scale

LOAD = 0.85
ALIBABA_LOAD = 1.6
TUNE_UP_TO = 5  # seeds 1..5 tune; every later seed judges
DELTAS = (2.5, 5.0, 10.0, 20.0)
# δ per GB a move copies (`delta_per_gb`; 0.11 is δ = 10 at the default workload's mean move of ~90 GB)
DELTAS_PER_GB = (0.055, 0.11, 0.22)
TC_PERIODS_MIN = (15, 30, 60)
FGD_RATIOS = (0.02, 0.05, 0.1)
FGD_PERIODS_MIN = (15, 60)
GRMU_LARGE_QUOTAS = (0.5, 0.75, 1.0)
GRMU_SMALL_QUOTAS = (0.5, 1.0)
NOISE_FLOOR_PCT = 0.25
FULL = dataclasses.replace(sweep.FULL, seeds=tuple(range(1, 11)))
QUICK = dataclasses.replace(sweep.QUICK, seeds=(1, 2, 6, 7))


@dataclass(frozen=True)
class Row:
    """A point of the comparison: a policy at one setting, the family it belongs to, how it is shown."""

    name: str
    family: str
    policy: str
    options: tuple[tuple[str, Any], ...]
    knob: str  # the setting, as the figure annotates it

    @property
    def label(self) -> str:
        return f"{report.FAMILY_LABELS[self.family]}{f' ({self.knob})' if self.knob else ''}"


def _g(x: float) -> str:
    return f"{x:g}"


def rows() -> tuple[Row, ...]:
    """Every row of the 128-PM comparison, family by family."""
    out = [
        Row("ff", "ff", "ff", (), ""),
        Row("mfi", "mfi", "mfi", (), ""),
        Row("dra", "dra", "dra", (), "kube"),
        Row("dra-first", "dra", "dra", (("nodes", "first"),), "first"),
    ]
    out += [Row(f"tc-{m}min", "tc", "tc", (("period_s", 60.0 * m),), f"{m} min") for m in TC_PERIODS_MIN]
    out += [
        Row(f"fgd-r{_g(r)}-{m}min", "fgd", "fgd", (("period_s", 60.0 * m), ("ratio", r)), f"{_g(r)}/{m} min")
        for r in FGD_RATIOS
        for m in FGD_PERIODS_MIN
    ]
    out.append(Row("fgd-place", "fgd-place", "fgd", (("deschedule", False),), ""))
    out.append(Row("fgd-tc", "fgd-tc", "fgd", (("arrival", "tc"),), ""))
    out += [
        Row(
            f"grmu-l{_g(q)}-s{_g(s)}",
            "grmu",
            "grmu",
            (("large_quota", q), ("small_quota", s)),
            f"{_g(q)}/{_g(s)}",
        )
        for q in GRMU_LARGE_QUOTAS
        for s in GRMU_SMALL_QUOTAS
    ]
    out.append(Row("grmu-arrival", "grmu-arrival", "grmu", (("consolidate", False),), ""))
    out += [Row(f"origamig-d{_g(d)}", "origamig", "origamig", (("delta", d),), f"δ={_g(d)}") for d in DELTAS]
    out += [
        Row(f"origamig-gb{_g(g)}", "origamig", "origamig", (("delta_per_gb", g),), f"δ={_g(g)}/GB")
        for g in DELTAS_PER_GB
    ]
    out.append(Row("origamig-fgd", "origamig-fgd", "origamig", (("arrival", "fgd"), ("delta", 10.0)), "δ=10"))
    return tuple(out)


# On the Alibaba trace every rival runs once, at its default setting (OrigaMIG at δ = 10).
ALIBABA_ROWS = ("ff", "mfi", "dra", "dra-first", "tc-15min", "fgd-r0.02-15min", "fgd-place", "fgd-tc",
                "grmu-l0.75-s1", "grmu-arrival", "origamig-d10", "origamig-fgd")  # fmt: skip
ROWS = {r.name: r for r in rows()}


def group_of(seed: int) -> str:
    """The seed group a seed belongs to: `tune` (1..5) or `judge` (later seeds)."""
    return "tune" if seed <= TUNE_UP_TO else "judge"


def cells(
    scale: Scale, chosen: Sequence[Row], *, alibaba: bool = False, trace_dir: str | None = None
) -> list[Cell]:
    """One cell per (row, seed); column = the seed's group. OrigaMIG runs with the scale's call budget."""
    setting: dict[str, Any] = (
        {"load": ALIBABA_LOAD, "variant": "alibaba", "trace_dir": trace_dir} if alibaba else {"load": LOAD}
    )
    out: list[Cell] = []
    for row in chosen:
        options = scale.origamig_options(**dict(row.options)) if row.policy == "origamig" else row.options
        config = scale.config(policy_options=tuple(sorted(options)), **setting)
        out.extend(Cell(row.name, group_of(seed), row.policy, config, seed) for seed in scale.seeds)
    return out


def chosen_rows(families: str | None, alibaba: bool) -> list[Row]:
    """The rows to run now: every row (on the trace: `ALIBABA_ROWS`), or those of `families` / names."""
    pool = [ROWS[n] for n in ALIBABA_ROWS] if alibaba else list(ROWS.values())
    if not families:
        return pool
    wanted = set(families.split(","))
    known = {r.family for r in pool} | {r.name for r in pool}
    unknown = sorted(wanted - known)
    if unknown:
        raise UserError(f"--families: unknown {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    return [r for r in pool if r.family in wanted or r.name in wanted]


def main(args: argparse.Namespace) -> None:
    scale = sweep_cli.scale_from(args, QUICK, FULL)
    if args.noise_floor < 0:
        raise UserError(f"--noise-floor: {args.noise_floor:g} must be a percentage ≥ 0")
    if args.alibaba and not args.trace_dir:
        raise UserError("--alibaba: give --trace-dir DIR, the folder of openb_pod_list_default.csv")
    name = "frontier-alibaba" if args.alibaba else "frontier"
    chosen = chosen_rows(args.families, args.alibaba)
    trace_dir = str(args.trace_dir) if args.trace_dir else None
    sw = sweep_cli.run_or_load(
        name, scale, cells(scale, chosen, alibaba=args.alibaba, trace_dir=trace_dir), args
    )
    shown = [r for r in ROWS.values() if any(run.row == r.name for run in sw.runs)]
    findings = report.analyse(sw, shown, args.noise_floor)
    report.print_tables(sw, shown, findings, args.noise_floor)
    extra = {
        "load": ALIBABA_LOAD if args.alibaba else LOAD,
        "variant": "alibaba" if args.alibaba else "default",
        "groups": {g: sorted(s for s in scale.seeds if group_of(s) == g) for g in ("tune", "judge")},
        "noise_floor_pct": args.noise_floor,
        "rows": {r.name: {"family": r.family, "policy": r.policy, "options": dict(r.options)} for r in shown},
        "findings": findings,
    }
    path = sweep.write_json(sw, extra, args.out)
    png = report.draw(sw, shown, findings, args.out)
    print(f"{sw.scale.describe()}\nsum of cell wall times {sw.wall_s:.0f} s; wrote {path} and {png}")


def build_parser() -> argparse.ArgumentParser:
    p = sweep_cli.parser(__doc__ or "", QUICK, FULL, RESULTS)
    p.add_argument(
        "--families",
        default=None,
        help="rows to run now: families (origamig, tc, fgd, grmu, dra, ...) or row names, comma-separated "
        "(default every row); the tables show every stored run",
    )
    p.add_argument(
        "--noise-floor",
        type=float,
        default=NOISE_FLOOR_PCT,
        help=f"the smallest difference (%% of active PMs or GPUs, points of acceptance) called one "
        f"(default {NOISE_FLOOR_PCT:g})",
    )
    p.add_argument(
        "--alibaba",
        action="store_true",
        help=f"the overloaded Alibaba setting (ρ {ALIBABA_LOAD:g}), every rival",
    )
    p.add_argument("--trace-dir", type=Path, default=None, help="the Alibaba trace's folder (with --alibaba)")
    return p


if __name__ == "__main__":
    sweep_cli.main_wrapper(main, build_parser().parse_args())
