"""How simulation results are shown: the metrics table of `simulate`, and the markdown, figure and
words of `report` and `study`. No command of its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.table import Table

from origamig.errors import UserError, require_extra
from origamig.sim.workload import HOUR
from origamig.study.aggregate import MeanCi, setup_labels
from origamig.study.spread import ERRBAR_NOTE, SPREAD_NOTE, errbar, spread_text


def format_stat(stats: MeanCi, scale: float = 1.0, digits: int = 1) -> str:
    """`mean±ci` from 3 seeds, `mean (min–max)` for 2, the mean for 1, `–` when undefined."""
    return spread_text(stats, scale, digits, sep="±")


def stat(row: dict[str, Any], metric: str) -> MeanCi:
    """The summary of `metric` in a `summary` or `paired` row of a results document."""
    return MeanCi.from_json(row["metrics"][metric])


# (column, metric, scale, digits)
COLUMNS: tuple[tuple[str, str, float, int], ...] = (
    ("accept %", "acceptance", 100, 1),
    ("active PMs", "active_pms", 1, 1),
    ("active GPUs", "active_gpus", 1, 1),
    ("packing %", "packing_density", 100, 1),
    ("energy MWh", "energy_mwh", 1, 2),
    ("kWh/GPU-h", "energy_kwh_per_gpu_hour", 1, 3),
    ("switch/h", "switch_ons_per_hour", 1, 1),
    ("migr/h", "migrations_per_hour", 1, 1),
    ("wait s", "mean_wait_s", 1, 1),
    ("calls/h", "calls_per_hour", 1, 1),
    ("call s", "median_call_s", 1, 2),
)


def summary_table(doc: dict[str, Any]) -> Table:
    """Metrics as rows, one column per (variant, load, policy): narrow enough for a terminal."""
    rows = doc["summary"]
    variants = sorted({r["variant"] for r in rows})
    title = "mean±95% CI over seeds" + (f", variant {variants[0]}" if len(variants) == 1 else "")
    table = Table(title=f"Simulation results ({title})", caption=SPREAD_NOTE)
    table.add_column("metric")
    for r in rows:
        head = f"{r['policy']}\nρ={r['load']:g}, {len(r['seeds'])} seeds"
        head += f"\n{r['fleet']}" if r.get("fleet") else ""
        table.add_column(head + (f"\n{r['variant']}" if len(variants) > 1 else ""), justify="right")
    for label, metric, scale, digits in COLUMNS:
        table.add_row(label, *(format_stat(stat(r, metric), scale, digits) for r in rows))
    return table


# (panel title, metric, scale) — Fig. 4 of the paper.
PANELS: tuple[tuple[str, str, float], ...] = (
    ("Acceptance (%)", "acceptance", 100.0),
    ("Active PMs", "active_pms", 1.0),
    ("Packing density (%)", "packing_density", 100.0),
    ("Energy per GPU-hour (kWh)", "energy_kwh_per_gpu_hour", 1.0),
)


def markdown(doc: dict[str, Any]) -> str:
    """The summary (mean ± 95% CI) and the paired differences against the baseline, as markdown.

    Rows of different setups (PMs, window, solver, ...; `aggregate.setup_of`) are separate rows;
    a `setup` column names what differs when more than the PM count does."""
    summary = sorted(doc["summary"], key=_row_order)
    labels = dict(zip(map(id, summary), setup_labels(summary), strict=True))
    extra = any(labels.values())
    head = ["variant", "load", "PMs", *(["setup"] if extra else []), "policy", "seeds"]
    head += [label for label, *_ in COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in summary:
        cells = [row["variant"], f"{row['load']:g}", pms_text(row), *([labels[id(row)]] if extra else [])]
        cells += [row["policy"], str(len(row["seeds"]))]
        cells += [format_stat(stat(row, m), scale, digits) for _, m, scale, digits in COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    if doc["paired"]:
        pairs = sorted(doc["paired"], key=_row_order)
        plabels = dict(zip(map(id, pairs), setup_labels(pairs), strict=True))
        pextra = any(plabels.values())
        base = pairs[0]["baseline"]
        lines += ["", f"Paired by seed, policy − {base} (mean ± 95% CI; lower in k of n seeds):", ""]
        phead = ["variant", "load", "PMs", *(["setup"] if pextra else []), "policy"]
        phead += ["Δ accept (pp)", "Δ active PMs", "lower PMs", "Δ energy MWh"]
        lines += ["| " + " | ".join(phead) + " |", "|" + "---|" * len(phead)]
        for row in pairs:
            pms = stat(row, "active_pms")
            wins = f"{row['metrics']['active_pms']['wins']}/{pms.n}"
            cells = [
                row["variant"],
                f"{row['load']:g}",
                pms_text(row),
                *([plabels[id(row)]] if pextra else []),
            ]
            cells += [
                row["policy"],
                format_stat(stat(row, "acceptance"), 100, 1),
                format_stat(pms, 1, 1),
                wins,
                format_stat(stat(row, "energy_mwh"), 1, 2),
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _row_order(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["variant"], row["load"], row.get("pms") or 0, json.dumps(row.get("setup", {})), row["policy"])


def pms_text(row: dict[str, Any]) -> str:
    return "?" if row.get("pms") is None else str(row["pms"])


def draw(doc: dict[str, Any], png: Path, variant: str) -> None:
    """Four panels vs offered load, one line per policy; error bars as `spread.errbar` draws them;
    the title names the data center, window and seeds."""
    require_extra("matplotlib", "sim", "drawing a figure")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in doc["summary"] if r["variant"] == variant]
    if not rows:
        known = sorted({r["variant"] for r in doc["summary"]})
        raise UserError(f"--variant: no results for {variant!r} (have: {', '.join(known)})")
    fig, axes = plt.subplots(2, 2, figsize=(9, 6.5), constrained_layout=True)
    sizes = {json.dumps(r.get("setup", {}), sort_keys=True) for r in rows}
    labels = dict(zip(map(id, rows), setup_labels(rows), strict=True))

    def line_of(r: dict[str, Any]) -> str:
        if len(sizes) == 1:
            return r["policy"]
        detail = ", ".join(x for x in (f"{pms_text(r)} PMs", labels[id(r)]) if x)
        return f"{r['policy']} ({detail})"

    for ax, (title, metric, scale) in zip(axes.flat, PANELS, strict=True):
        for line in dict.fromkeys(line_of(r) for r in rows):
            found = sorted(
                ((r["load"], stat(r, metric)) for r in rows if line_of(r) == line), key=lambda t: t[0]
            )
            pts = [(x, s, s.mean) for x, s in found if s.mean is not None]
            if not pts:
                continue
            ax.errorbar(
                [x for x, _, _ in pts],
                [mean * scale for _, _, mean in pts],
                yerr=list(zip(*(errbar(s, scale) for _, s, _ in pts), strict=True)),
                marker="o",
                capsize=3,
                label=line,
            )
        ax.set_title(title)
        ax.set_xlabel("Offered load")
        ax.grid(alpha=0.3)
    axes.flat[0].legend()
    fig.suptitle(f"Policies vs offered load — {variant}; {scale_text(rows)}\n({ERRBAR_NOTE})", fontsize=10)
    fig.savefig(png, dpi=120)
    plt.close(fig)


def scale_text(rows: list[dict[str, Any]]) -> str:
    """The data centers, windows and seeds of summary rows, in words: '32 PMs, 24 h warm-up + 24 h
    measured, seeds 1-2' (several values joined with '/')."""

    def values(key: str) -> str:
        found = sorted({r.get("setup", {}).get(key) for r in rows} - {None}, key=float)
        return "/".join(f"{float(v) / HOUR:g}" if key.endswith("_s") else f"{v}" for v in found) or "?"

    seeds = sorted({s for r in rows for s in r["seeds"]})
    spans = ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in _runs_of(seeds))
    return (
        f"{values('pms')} PMs, {values('warmup_s')} h warm-up + {values('measure_s')} h measured, "
        f"seed{'s' * (len(seeds) != 1)} {spans}"
    )


def _runs_of(seeds: list[int]) -> list[tuple[int, int]]:
    """Consecutive stretches of sorted seeds: [1, 2, 3, 7] → [(1, 3), (7, 7)]."""
    out: list[tuple[int, int]] = []
    for s in seeds:
        if out and s == out[-1][1] + 1:
            out[-1] = (out[-1][0], s)
        else:
            out.append((s, s))
    return out


def refuse_overwrite(path: Path, force: bool) -> None:
    """An existing figure is replaced only with `--force` (checked before any work)."""
    if path.exists() and not force:
        raise UserError(f"--png: {str(path)!r} exists; give another path or --force to replace it")
