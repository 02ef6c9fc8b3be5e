"""What would a policy save on my fleet? Paired comparisons against what the operator runs now (FF).

From the runs of `origamig simulate` (any fleet, snapshot or variant), per scenario (fleet, variant,
load): each policy's active servers, active GPUs, acceptance, energy (MWh over the measured window and
kWh per admitted GPU-hour), migrations and GB moved per hour as mean ± 95% CI over seeds, and every
policy's difference from the baseline paired by seed — as a markdown table, a figure, and sentences an
operator reads: "OrigaMIG would keep 9.1 ± 1.2 fewer servers on (−12%), ... at 6.3 migrations per hour".

Also the shortest way to run one what-if from Python: `run_policy(policy, fleet=..., snapshot=...)`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from origamig.errors import require_extra
from origamig.sim.engine import RunResult
from origamig.sim.workload import HOUR
from origamig.study.aggregate import MeanCi, mean_ci
from origamig.study.spread import ERRBAR_NOTE, errbar

POLICY_LABELS = {"ff": "FF", "mfi": "MFI", "tc": "TC", "origamig": "OrigaMIG", "opt": "OPT"}
YEAR_H = 24 * 365


@dataclass(frozen=True)
class Shown:
    """A metric as the what-if shows it: label, unit, factor, digits, and the words for less / more."""

    key: str
    label: str
    unit: str
    factor: float
    digits: int
    less: str
    more: str


SHOWN: tuple[Shown, ...] = (
    Shown("active_pms", "Active servers", "", 1, 1, "fewer", "more"),
    Shown("active_gpus", "Active GPUs", "", 1, 1, "fewer", "more"),
    Shown("acceptance", "Acceptance", "%", 100, 1, "less", "more"),
    Shown("energy_mwh", "Energy", "MWh", 1, 2, "less", "more"),
    Shown("energy_kwh_per_gpu_hour", "Energy per admitted GPU-hour", "kWh", 1, 3, "less", "more"),
    Shown("migrations_per_hour", "Migrations per hour", "", 1, 1, "fewer", "more"),
    Shown("migrated_gb_per_hour", "GB moved per hour", "", 1, 0, "less", "more"),
)
SHOWN_BY_KEY = {s.key: s for s in SHOWN}


def label(policy: str) -> str:
    return POLICY_LABELS.get(policy, policy)


@dataclass(frozen=True)
class WhatIf:
    """One scenario: its policies' summaries and their differences from the baseline, by seed."""

    fleet: str | None
    variant: str
    load: float
    pms: int | None
    measure_h: float | None
    baseline: str
    policies: tuple[str, ...]  # baseline first
    summary: dict[str, dict[str, MeanCi]]  # policy → metric → over seeds
    paired: dict[str, dict[str, MeanCi]]  # policy ≠ baseline → metric → differences paired by seed

    @property
    def title(self) -> str:
        where = f"fleet {self.fleet}" if self.fleet and not self.fleet.startswith("from ") else None
        where = where or (f"cluster {self.fleet[5:]}" if self.fleet else f"variant {self.variant}")
        if self.fleet and self.variant != "default":
            where += f" ({self.variant})"
        size = f"{self.pms} servers, " if self.pms else ""
        window = f", {self.measure_h:g} h measured" if self.measure_h else ""
        seeds = len(self.summary[self.baseline]["active_pms"].values)
        return f"{where}: {size}load {self.load:g}, {seeds} seed{'s' * (seeds != 1)}{window}"


def what_ifs(doc: dict[str, Any], policies: Sequence[str] | None = None) -> list[WhatIf]:
    """The scenarios of a results document (`results.runs_document`): one per (variant, load, setup)
    — a fleet, a snapshot or the default data center at one size and window — with its pairs (the
    document's summaries read as `MeanCi` records)."""
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}

    def group(row: dict[str, Any]) -> dict[str, Any]:
        setup = row.get("setup") or {}
        key = (row["variant"], row["load"], json.dumps(setup, sort_keys=True, default=str))
        return groups.setdefault(key, {"summary": {}, "paired": {}, "baseline": None, "row": row})

    for row in doc.get("summary", []):
        group(row)["summary"][row["policy"]] = _records(row["metrics"])
    for row in doc.get("paired", []):
        g = group(row)
        g["paired"][row["policy"]] = _records(row["metrics"])
        g["baseline"] = row["baseline"]
    out = []
    for g in groups.values():
        base = g["baseline"] or next(iter(g["summary"]), None)
        if base is None or base not in g["summary"]:
            continue
        order = [p for p in POLICY_LABELS if p in g["summary"]]
        order += [p for p in g["summary"] if p not in order]
        if policies:
            order = [p for p in order if p in policies or p == base]
        chosen = (base, *(p for p in order if p != base))
        row, setup = g["row"], g["row"].get("setup") or {}
        measure = setup.get("measure_s")
        out.append(
            WhatIf(
                fleet=row.get("fleet"),
                variant=row["variant"],
                load=row["load"],
                pms=row.get("pms", setup.get("pms")),
                measure_h=float(measure) / HOUR if measure else None,
                baseline=base,
                policies=chosen,
                summary={p: g["summary"][p] for p in chosen},
                paired={p: g["paired"][p] for p in chosen if p in g["paired"]},
            )
        )
    return sorted(out, key=lambda w: (w.fleet or "", w.variant, w.load, w.pms or 0, w.measure_h or 0))


def _records(metrics: Mapping[str, Mapping[str, Any]]) -> dict[str, MeanCi]:
    return {name: MeanCi.from_json(stats) for name, stats in metrics.items()}


# --- words -----------------------------------------------------------------------------------------
def _num(x: float, digits: int) -> str:
    return f"{x:,.{digits}f}"


def digits_for(value: float, digits: int, most: int = 4) -> int:
    """At least `digits` decimals, more (up to `most`) until a non-zero `value` shows two significant
    figures: 0.0042 MWh reads 0.0042, not 0.00."""
    value = abs(value)
    while digits < most and 0 < value < 10 ** (1 - digits):
        digits += 1
    return digits


def _pm(stats: MeanCi, mean: float, shown: Shown) -> str:
    """'9.1 ± 1.2' of a summary whose mean is `mean` (its magnitude)."""
    mean = abs(mean * shown.factor)
    digits = digits_for(mean, shown.digits)
    text = _num(mean, digits)
    if stats.n > 1 and stats.ci95 is not None:
        text += f" ± {_num(abs(stats.ci95 * shown.factor), digits)}"
    return text


def within_noise(stats: MeanCi) -> bool:
    """Does the 95% CI of a paired difference span zero?"""
    return stats.n > 1 and stats.ci95 is not None and stats.mean is not None and abs(stats.mean) <= stats.ci95


def _noise(stats: MeanCi) -> str:
    return " (within noise)" if within_noise(stats) else ""


def _diff(stats: MeanCi | None, shown: Shown, base: MeanCi | None, noun: str) -> str | None:
    """'9.1 ± 1.2 fewer servers on (−12%)' for a paired difference (None when undefined)."""
    if stats is None or stats.mean is None:
        return None
    mean = stats.mean
    if abs(mean * shown.factor) < 0.5 * 10**-shown.digits:
        return f"as many {noun}"
    word = shown.less if mean < 0 else shown.more
    notes = [f"{100 * mean / base.mean:+.0f}%"] if base is not None and base.mean else []
    notes += ["within noise"] if within_noise(stats) else []
    return f"{_pm(stats, mean, shown)} {word} {noun}" + (f" ({', '.join(notes)})" if notes else "")


def sentence(w: WhatIf, policy: str) -> str:
    """What `policy` would change against the baseline, in an operator's words."""
    s, d, base = w.summary[policy], w.paired.get(policy, {}), w.summary[w.baseline]
    show = SHOWN_BY_KEY
    parts = []
    servers = _diff(d.get("active_pms"), show["active_pms"], base["active_pms"], "servers on")
    if servers:
        parts.append(f"keep {servers}")
    gpus = _diff(d.get("active_gpus"), show["active_gpus"], base["active_gpus"], "GPUs active")
    if gpus:
        parts.append(gpus)
    acc = d.get("acceptance")
    if acc is not None and acc.mean is not None:
        if abs(acc.mean * 100) < 0.05:
            parts.append("admit as much of the requested GPU memory")
        else:
            word = "more" if acc.mean > 0 else "less"
            pts = _pm(acc, acc.mean, show["acceptance"])
            parts.append(f"admit {pts} percentage points {word} of the requested GPU memory{_noise(acc)}")
    energy = d.get("energy_mwh")
    if energy is not None and energy.mean is not None:
        word = "less" if energy.mean < 0 else "more"
        text = f"use {_pm(energy, energy.mean, show['energy_mwh'])} MWh {word} energy"
        notes = ["within noise"] if within_noise(energy) else []
        if w.measure_h:
            yearly = abs(energy.mean) * YEAR_H / w.measure_h
            text += f" over the {w.measure_h:g} h measured"
            notes.insert(0, f"≈ {yearly:,.{digits_for(yearly, 0, 2)}f} MWh a year")
        text += f" ({', '.join(notes)})" if notes else ""
        per = d.get("energy_kwh_per_gpu_hour")
        if per is not None and per.mean is not None:
            if abs(per.mean) < 5e-4:
                text += ", as much per admitted GPU-hour"
            else:
                per_word = "less" if per.mean < 0 else "more"
                per_text = _pm(per, per.mean, show["energy_kwh_per_gpu_hour"])
                text += f", {per_text} kWh {per_word} per admitted GPU-hour"
        parts.append(text)
    migr = s.get("migrations_per_hour")
    gb = s.get("migrated_gb_per_hour")
    tail = ""
    if migr is not None and migr.mean is not None:
        tail = f", at {_pm(migr, migr.mean, show['migrations_per_hour'])} migrations per hour"
        if gb is not None and gb.mean:
            tail += f" ({_pm(gb, gb.mean, show['migrated_gb_per_hour'])} GB moved per hour)"
    body = (
        "; ".join(parts[:-1])
        + ("; and " if len(parts) > 1 else "")
        + (parts[-1] if parts else "change nothing")
    )
    return f"{label(policy)} would {body}{tail} — against {label(w.baseline)}."


# --- table -----------------------------------------------------------------------------------------
def _cell(stats: MeanCi | None, shown: Shown, signed: bool = False) -> str:
    if stats is None or stats.mean is None:
        return "–"
    mean = stats.mean * shown.factor
    digits = digits_for(mean, shown.digits)
    text = f"{mean:+,.{digits}f}" if signed else f"{mean:,.{digits}f}"
    if stats.n > 1 and stats.ci95 is not None:
        text += f" ± {abs(stats.ci95 * shown.factor):,.{digits}f}"
    return text


def markdown(whatifs: Sequence[WhatIf]) -> str:
    """Per scenario: the sentences, then a table (metrics × policies, and paired differences)."""
    lines: list[str] = []
    for w in whatifs:
        lines += [f"### What-if on {w.title}", ""]
        lines += [f"- {sentence(w, p)}" for p in w.policies[1:]]
        others = w.policies[1:]
        head = [
            "metric",
            *(label(p) for p in w.policies),
            *(f"{label(p)} − {label(w.baseline)}" for p in others),
        ]
        lines += ["", "| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
        for shown in SHOWN:
            name = shown.label + (f" ({shown.unit})" if shown.unit else "")
            cells = [_cell(w.summary[p].get(shown.key), shown) for p in w.policies]
            cells += [_cell(w.paired.get(p, {}).get(shown.key), shown, signed=True) for p in others]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines += [
            "",
            "Mean ± 95% CI over seeds; differences paired by seed (same requests for every policy).",
            "",
        ]
    return "\n".join(lines)


# --- figure ----------------------------------------------------------------------------------------
def draw(whatifs: Sequence[WhatIf], png: Path) -> None:
    """One row per scenario, one panel per metric: a bar per policy (95% CI), the paired difference
    from the baseline written above each other bar."""
    require_extra("matplotlib", "sim", "drawing a figure")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"ff": "tab:gray", "mfi": "tab:green", "tc": "tab:orange", "origamig": "tab:blue"}
    rows = max(1, len(whatifs))
    fig, axes = plt.subplots(rows, len(SHOWN), figsize=(2.6 * len(SHOWN), 3.0 * rows + 0.6), squeeze=False)
    for r, w in enumerate(whatifs):
        for c, shown in enumerate(SHOWN):
            ax = axes[r][c]
            means, below, errs, names = [], [], [], []
            for p in w.policies:
                stats = w.summary[p].get(shown.key) or mean_ci(())
                means.append((stats.mean or 0.0) * shown.factor)
                lo, hi = errbar(stats, shown.factor)
                below.append(lo)
                errs.append(hi)
                names.append(label(p))
            x = range(len(means))
            colored = [colors.get(p, "tab:purple") for p in w.policies]
            ax.bar(x, means, yerr=[below, errs], capsize=3, color=colored)
            ax.set_xticks(list(x), names, fontsize=8)
            ax.set_title(shown.label + (f" ({shown.unit})" if shown.unit else ""), fontsize=9)
            ax.tick_params(axis="y", labelsize=8)
            top = max((m + e for m, e in zip(means, errs, strict=True)), default=0.0) or 1.0
            ax.set_ylim(0, top * 1.25)
            for i, p in enumerate(w.policies[1:], start=1):
                d = w.paired.get(p, {}).get(shown.key)
                if d is not None and d.mean is not None:
                    value = d.mean * shown.factor
                    text = f"{value:+.{digits_for(value, shown.digits)}f}"
                    ax.text(i, top * 1.05, text, ha="center", fontsize=7)
            if c == 0:
                ax.set_ylabel("\n".join(_wrap(w.title, 34)), fontsize=8)
    fig.suptitle(
        f"What-if: policies against {label(whatifs[0].baseline) if whatifs else 'the baseline'} "
        f"(mean; {ERRBAR_NOTE}; numbers: paired difference from the baseline)",
        fontsize=10,
    )
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(png, dpi=110)
    plt.close(fig)


def _wrap(text: str, width: int) -> list[str]:
    import textwrap

    return textwrap.wrap(text, width) or [text]


# --- Python API --------------------------------------------------------------------------------------
def run_policy(
    policy: str,
    *,
    fleet: str | Path | None = None,
    snapshot: str | Path | None = None,
    load: float = 0.85,
    seed: int = 1,
    warmup_h: float = 24.0,
    measure_h: float = 24.0,
    pms: int | None = None,
    deterministic: bool = True,
    **options: Any,
) -> RunResult:
    """Simulate `policy` on a fleet file or from a snapshot (or the paper's data center), as
    `origamig simulate` does; `options` are the policy's (e.g. `work_limit=100` for OrigaMIG)."""
    from origamig.sim.scenario import data_center_fields
    from origamig.study.plan import RunSetting, plan_runs
    from origamig.study.runner import run_all

    hardware = data_center_fields(pms, fleet, snapshot)
    setting = RunSetting(
        hardware,
        warmup_h * HOUR,
        measure_h * HOUR,
        deterministic=deterministic,
        policy_options=tuple(sorted(options.items())),
    )
    result = run_all(plan_runs(setting, [policy], [load], [seed]), keep_going=False)[0]
    assert isinstance(result, RunResult)  # a run that raises raised here
    return result
