"""`origamig report`: the paper's Fig. 4 panels (PNG) and a markdown table from simulate results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from origamig.cli.simulate import COLUMNS, format_stat
from origamig.errors import UserError, require_extra
from origamig.sim.workload import HOUR
from origamig.study.aggregate import setup_labels
from origamig.study.results import load_runs, runs_document
from origamig.study.spread import ERRBAR_NOTE, errbar

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
        cells = [row["variant"], f"{row['load']:g}", _pms(row), *([labels[id(row)]] if extra else [])]
        cells += [row["policy"], str(len(row["seeds"]))]
        cells += [format_stat(row["metrics"][m], scale, digits) for _, m, scale, digits in COLUMNS]
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
            m = row["metrics"]
            wins = f"{m['active_pms']['wins']}/{m['active_pms']['n']}"
            cells = [row["variant"], f"{row['load']:g}", _pms(row), *([plabels[id(row)]] if pextra else [])]
            cells += [
                row["policy"],
                format_stat(m["acceptance"], 100, 1),
                format_stat(m["active_pms"], 1, 1),
                wins,
                format_stat(m["energy_mwh"], 1, 2),
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _row_order(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["variant"], row["load"], row.get("pms") or 0, json.dumps(row.get("setup", {})), row["policy"])


def _pms(row: dict[str, Any]) -> str:
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
        detail = ", ".join(x for x in (f"{_pms(r)} PMs", labels[id(r)]) if x)
        return f"{r['policy']} ({detail})"

    for ax, (title, metric, scale) in zip(axes.flat, PANELS, strict=True):
        for line in dict.fromkeys(line_of(r) for r in rows):
            pts = sorted(
                ((r["load"], r["metrics"][metric]) for r in rows if line_of(r) == line), key=lambda t: t[0]
            )
            pts = [(x, s) for x, s in pts if s["mean"] is not None]
            if not pts:
                continue
            ax.errorbar(
                [x for x, _ in pts],
                [s["mean"] * scale for _, s in pts],
                yerr=list(zip(*(errbar(s, scale) for _, s in pts), strict=True)),
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


def report(
    results: Annotated[
        list[Path], typer.Argument(help="Results files written by `origamig simulate --out`.")
    ],
    png: Annotated[
        Path | None,
        typer.Option(
            "--png", help="Where to write the figure (default fig4.png, or whatif.png with --what-if)."
        ),
    ] = None,
    md: Annotated[Path | None, typer.Option("--markdown", help="Also write the markdown table here.")] = None,
    variant: Annotated[str, typer.Option("--variant", help="Variant to plot.")] = "default",
    baseline: Annotated[str | None, typer.Option("--baseline", help="Policy for paired differences.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace the figure file if it exists.")] = False,
    what_if: Annotated[
        bool,
        typer.Option(
            "--what-if",
            help="What each policy would save against the baseline (FF) on each fleet, in words, a table "
            "and a figure: servers, GPUs, acceptance, energy, migrations.",
        ),
    ] = False,
) -> None:
    """Draw Fig. 4 (acceptance, active PMs, packing, energy per GPU-hour vs load) and a markdown table;
    with --what-if, the savings of each policy against the baseline on each fleet instead."""
    png = png or Path("whatif.png" if what_if else "fig4.png")
    refuse_overwrite(png, force)
    doc = runs_document(load_runs(results), baseline)
    if what_if:
        from origamig.study import whatif

        scenarios = whatif.what_ifs(doc)
        whatif.draw(scenarios, png)
        text = whatif.markdown(scenarios)
        if md:
            md.write_text(text)
        typer.echo(text, nl=False)
        typer.echo(f"figure written to {png}", err=True)
        return
    setups = {json.dumps(r.get("setup", {}), sort_keys=True) for r in doc["summary"]}
    if len(setups) > 1:
        sizes = sorted({_pms(r) for r in doc["summary"]}, key=lambda p: (len(p), p))
        typer.echo(
            f"note: the results come from {len(setups)} different setups (PMs: {', '.join(sizes)}); "
            "each is reported on its own rows, never averaged together",
            err=True,
        )
    draw(doc, png, variant)
    text = markdown(doc)
    if md:
        md.write_text(text)
    typer.echo(text, nl=False)
    typer.echo(f"figure written to {png}", err=True)


def register(app: typer.Typer) -> None:
    app.command("report")(report)
