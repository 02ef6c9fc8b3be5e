"""What benchmarks/studies/frontier.py reports: per seed group the rows' means and the Pareto frontiers,
OrigaMIG matched to each rival on the tuning seeds (or, with no tuning runs and one OrigaMIG setting run,
that setting) and judged against it on the judging seeds (paired differences, 95% CIs, a noise floor),
the tables and the frontier figure."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from origamig.study import sweep
from origamig.study.aggregate import MeanCi
from origamig.study.spread import errbar
from origamig.study.sweep import Sweep

FAMILY_LABELS = {
    "ff": "FF",
    "mfi": "MFI",
    "dra": "DRA, what pods get",
    "tc": "TC",
    "fgd": "FGD",
    "fgd-place": "FGD without its descheduler",
    "fgd-tc": "TC's arrivals + FGD's descheduler",
    "grmu": "GRMU",
    "grmu-arrival": "GRMU without consolidation",
    "origamig": "OrigaMIG",
    "origamig-fgd": "FGD's arrivals + OrigaMIG's calls",
}
FAMILY_COLORS = {
    "ff": "tab:gray",
    "mfi": "tab:green",
    "dra": "tab:purple",
    "tc": "tab:orange",
    "fgd": "tab:brown",
    "fgd-place": "tan",
    "fgd-tc": "gold",
    "grmu": "tab:red",
    "grmu-arrival": "salmon",
    "origamig": "tab:blue",
    "origamig-fgd": "tab:cyan",
}
OURS = "origamig"  # the family whose rows are matched to each rival
GROUPS = ("tune", "judge")
METRICS = ("active_pms", "active_gpus", "acceptance", "migrations_per_hour", "migrated_gb_per_hour")
AXES = (("migrations_per_hour", "active_pms"), ("migrations_per_hour", "active_gpus"),
        ("migrated_gb_per_hour", "active_pms"), ("migrated_gb_per_hour", "active_gpus"))  # fmt: skip
BETTER, WORSE, TIE = "better", "worse", "tie"  # for OrigaMIG; tie: within the noise floor or the interval


class RowLike(Protocol):
    name: str
    family: str
    knob: str

    @property
    def label(self) -> str: ...


# --- analysis --------------------------------------------------------------------------------------
def means(sw: Sweep, shown: Sequence[RowLike], group: str) -> dict[str, dict[str, MeanCi]]:
    """Each row's metrics over the seeds of `group`."""
    return {r.name: {m: sw.metric(r.name, group, m) for m in METRICS} for r in shown}


def frontier(points: dict[str, tuple[float, float]]) -> list[str]:
    """The rows no other row beats on both coordinates (lower is better on each), by the first."""
    out = []
    for name, (x, y) in points.items():
        if not any(
            a <= x and b <= y and (a, b) != (x, y) for other, (a, b) in points.items() if other != name
        ):
            out.append(name)
    return sorted(out, key=lambda n: points[n])


def matched(tune: dict[str, dict[str, MeanCi]], ours: Sequence[str], rival: str) -> str | None:
    """Our row whose migration rate on the tuning seeds is the highest not above the rival's, else
    the one of the lowest rate (None without tuning runs); on equal rates the first of `ours`."""
    rate = {n: tune[n]["migrations_per_hour"].mean for n in ours}
    known = {n: x for n, x in rate.items() if x is not None}
    target = tune[rival]["migrations_per_hour"].mean
    if not known or target is None:
        return None
    order = {n: i for i, n in enumerate(ours)}  # equal rates: the first of `ours`
    below = [n for n, x in known.items() if x <= target + 1e-9]
    if below:
        return max(below, key=lambda n: (known[n], -order[n]))
    return min(known, key=lambda n: (known[n], order[n]))


def verdict(diff: MeanCi, floor: float) -> str:
    """Better, worse or a tie for OrigaMIG: a difference beyond the noise floor whose interval (the 95%
    CI from 3 seeds, else the range) is clear of zero."""
    if diff.mean is None:
        return "–"
    below, above = errbar(diff)
    if diff.mean - below > 0 and diff.mean > floor:
        return BETTER
    if diff.mean + above < 0 and diff.mean < -floor:
        return WORSE
    return TIE


def paired(sw: Sweep, ours: str, rival: str, group: str, floor: float) -> dict[str, Any]:
    """OrigaMIG's row `ours` against `rival`, paired by seed over `group`: differences (positive = in
    OrigaMIG's favour for PMs, GPUs and acceptance), their verdicts and whether OrigaMIG dominates."""
    fewer_pms = sw.reduction_pct(ours, rival, group, "active_pms")
    fewer_gpus = sw.reduction_pct(ours, rival, group, "active_gpus")
    acceptance = sw.gain(ours, rival, group, "acceptance", 100)
    migrations = sw.gain(ours, rival, group, "migrations_per_hour")
    gb = sw.gain(ours, rival, group, "migrated_gb_per_hour")
    verdicts = {
        k: verdict(v, floor)
        for k, v in (("pms", fewer_pms), ("gpus", fewer_gpus), ("acceptance", acceptance))
    }
    dominates = (
        verdicts["pms"] == BETTER
        and WORSE not in (verdicts["gpus"], verdicts["acceptance"])
        and migrations.mean is not None
        and migrations.mean <= 0
    )
    return {
        "origamig_row": ours,
        "seeds": len(fewer_pms.values),
        "fewer_pms_pct": fewer_pms,
        "fewer_gpus_pct": fewer_gpus,
        "acceptance_gain_pp": acceptance,
        "migrations_per_hour_diff": migrations,
        "gb_per_hour_diff": gb,
        "verdicts": verdicts,
        "origamig_dominates": dominates,
    }


def analyse(sw: Sweep, shown: Sequence[RowLike], floor: float) -> dict[str, Any]:
    """Means and frontiers per group; each rival against its matched OrigaMIG row on the judging seeds."""
    per_group = {g: means(sw, shown, g) for g in GROUPS}
    fronts: dict[str, dict[str, list[str]]] = {}
    for g, table in per_group.items():
        fronts[g] = {}
        for x, y in AXES:
            pts = {n: (v[x].mean, v[y].mean) for n, v in table.items()}
            fronts[g][f"{y}~{x}"] = frontier(
                {n: (a, b) for n, (a, b) in pts.items() if a is not None and b is not None}
            )
    ours = [r.name for r in shown if r.family == OURS]
    comparisons = {}
    for r in shown:
        if r.family == OURS:
            continue
        mine, how = matched(per_group["tune"], ours, r.name), "tuning seeds"
        if mine is None and len(ours) == 1:  # one setting run: nothing to choose, nothing tuned
            mine, how = ours[0], "the only setting run"
        if mine is not None:
            comparisons[r.name] = paired(sw, mine, r.name, "judge", floor) | {"matched_by": how}
    return {"means": per_group, "frontiers": fronts, "paired_on_judging_seeds": comparisons}


# --- tables ----------------------------------------------------------------------------------------
def print_tables(sw: Sweep, shown: Sequence[RowLike], findings: dict[str, Any], floor: float) -> None:
    for g in GROUPS:
        table = findings["means"][g]
        seeds = sorted({r.seed for r in sw.runs if r.col == g})
        if not seeds:
            continue
        front = set(findings["frontiers"][g]["active_pms~migrations_per_hour"])
        shows = (("active_pms", 1, 2), ("active_gpus", 1, 2), ("acceptance", 100, 2),
                 ("migrations_per_hour", 1, 1), ("migrated_gb_per_hour", 1, 0))  # fmt: skip
        rows = [
            [r.label + (" *" if r.name in front else "")]
            + [sweep.fmt(table[r.name][k], f, d) for k, f, d in shows]
            for r in shown
        ]
        which = "Tuning" if g == "tune" else "Judging"
        sweep.print_table(
            f"{which} seeds {','.join(map(str, seeds))} — {sw.scale.describe()}",
            ["row (setting)", "active PMs", "active GPUs", "accept. (%)", "migr./h", "GB/h"],
            rows,
            "* on the frontier of active PMs against migrations per hour. "
            + sweep.ERRBAR_NOTE.replace("bars", "±"),
        )
    labels = {r.name: r.label for r in shown}
    rows = []
    for rival, v in findings["paired_on_judging_seeds"].items():
        rows.append([
            labels[rival], f"{labels[v['origamig_row']]}, {v['matched_by']}",
            f"{sweep.fmt(v['fewer_pms_pct'], 1, 2)}: {v['verdicts']['pms']}",
            f"{sweep.fmt(v['fewer_gpus_pct'], 1, 2)}: {v['verdicts']['gpus']}",
            f"{sweep.fmt(v['acceptance_gain_pp'], 1, 2)}: {v['verdicts']['acceptance']}",
            sweep.fmt(v["migrations_per_hour_diff"], 1, 1), sweep.fmt(v["gb_per_hour_diff"], 1, 0),
            "yes" if v["origamig_dominates"] else "no",
        ])  # fmt: skip
    sweep.print_table(
        f"OrigaMIG against each rival on the judging seeds, paired by seed (noise floor {floor:g}%)",
        [
            "rival",
            "OrigaMIG (matched by)",
            "fewer PMs (%)",
            "fewer GPUs (%)",
            "accept. (pp)",
            "Δ migr./h",
            "Δ GB/h",
            "dominates",
        ],
        rows,
        "positive = in OrigaMIG's favour (Δ: OrigaMIG minus rival); better, worse or tie for OrigaMIG, a tie "
        "being within the noise floor or an interval that spans zero; ± is the 95% CI from 3 seeds, else the "
        "range. Dominates: fewer PMs beyond the floor, no more GPUs and no less acceptance beyond it, no "
        "more migrations per hour.",
    )


# --- figure ----------------------------------------------------------------------------------------
X_LABELS = {"migrations_per_hour": "Migrations per hour", "migrated_gb_per_hour": "GB migrated per hour"}
Y_LABELS = {"active_pms": "Active PMs (lower is better)", "active_gpus": "Active GPUs (lower is better)"}
OFF_SCALE = ("dra",)  # families drawn only as a note at the top when far above the others


def draw(sw: Sweep, shown: Sequence[RowLike], findings: dict[str, Any], out_dir: Path) -> Path:
    """Active PMs and GPUs against migrations/h and GB/h on the judging seeds (the tuning seeds when
    no judging seed ran), each family's settings joined by a line; a DRA point far above the others
    is a note at the panel's top, so that the others keep the scale."""
    group = "judge" if any(r.col == "judge" for r in sw.runs) else "tune"
    table = findings["means"][group]
    seeds = sorted({r.seed for r in sw.runs if r.col == group})
    which = "judging" if group == "judge" else "tuning"
    title = f"The frontier — {which} seeds {','.join(map(str, seeds))}; {sw.scale.describe()}"
    fig, axes = sweep.figure(2, 2, 14, 10, title)
    families = list(dict.fromkeys(r.family for r in shown))
    for col, x in enumerate(X_LABELS):
        for line, y in enumerate(Y_LABELS):
            ax = axes[line][col]
            drawn = [
                r for r in shown if table[r.name][x].mean is not None and table[r.name][y].mean is not None
            ]
            kept = [table[r.name][y].mean for r in drawn if r.family not in OFF_SCALE]
            top = max(kept) * 1.03 if kept else None
            for family in families:
                mine = sorted((r for r in drawn if r.family == family), key=lambda r: table[r.name][x].mean)
                noted = [
                    r for r in mine if top is not None and family in OFF_SCALE and table[r.name][y].mean > top
                ]
                for r in noted:
                    ax.annotate(f"{r.label}: {table[r.name][y].mean:.1f} ↑", (table[r.name][x].mean, top),
                                textcoords="offset points", xytext=(4, -10), fontsize=7,
                                color=FAMILY_COLORS[family])  # fmt: skip
                mine = [r for r in mine if r not in noted]
                if not mine:
                    continue
                xs = [table[r.name][x].mean for r in mine]
                ys = [table[r.name][y].mean for r in mine]
                xerr = sweep.errbars([table[r.name][x] for r in mine])
                yerr = sweep.errbars([table[r.name][y] for r in mine])
                ax.errorbar(xs, ys, xerr=xerr, yerr=yerr, marker="o" if family.startswith(OURS) else "s",
                            ms=5, lw=2 if family == OURS else 1, capsize=2, color=FAMILY_COLORS[family],
                            label=FAMILY_LABELS[family])  # fmt: skip
                for r, a, b in zip(mine, xs, ys, strict=True):
                    if r.knob:
                        ax.annotate(r.knob, (a, b), textcoords="offset points", xytext=(4, 4), fontsize=7,
                                    color=FAMILY_COLORS[family])  # fmt: skip
            if top is not None:
                ax.set_ylim(top=top)
            ax.set_xlim(left=-0.02 * max((table[r.name][x].mean for r in drawn), default=1.0))
            ax.set_xlabel(X_LABELS[x])
            ax.set_ylabel(Y_LABELS[y])
            ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=9, frameon=False)
    return sweep.save_figure(fig, sw, out_dir, bottom=0.08)
