"""`origamig report`: the paper's Fig. 4 panels (PNG) and a markdown table from simulate results."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from origamig.cli.simulate import COLUMNS, format_stat
from origamig.errors import UserError
from origamig.sim.results import load_runs, runs_document

# (panel title, metric, scale) — Fig. 4 of the paper.
PANELS: tuple[tuple[str, str, float], ...] = (
    ("Acceptance (%)", "acceptance", 100.0),
    ("Active PMs", "active_pms", 1.0),
    ("Packing density (%)", "packing_density", 100.0),
    ("Energy per GPU-hour (kWh)", "energy_kwh_per_gpu_hour", 1.0),
)


def markdown(doc: dict[str, Any]) -> str:
    """The summary (mean ± 95% CI) and the paired differences against the baseline, as markdown."""
    head = ["variant", "load", "policy", "seeds", *(label for label, *_ in COLUMNS)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in sorted(doc["summary"], key=lambda r: (r["variant"], r["load"], r["policy"])):
        cells = [format_stat(row["metrics"][m], scale, digits) for _, m, scale, digits in COLUMNS]
        where = row["variant"] + (f" on {row['fleet']}" if row.get("fleet") else "")
        lines.append(
            f"| {where} | {row['load']:g} | {row['policy']} | {len(row['seeds'])} | "
            + " | ".join(cells)
            + " |"
        )
    if doc["paired"]:
        base = doc["paired"][0]["baseline"]
        lines += ["", f"Paired by seed, policy − {base} (mean ± 95% CI; lower in k of n seeds):", ""]
        lines += [
            "| variant | load | policy | Δ accept (pp) | Δ active PMs | lower PMs | Δ energy MWh |",
            "|---|---|---|---|---|---|---|",
        ]
        for row in sorted(doc["paired"], key=lambda r: (r["variant"], r["load"], r["policy"])):
            m = row["metrics"]
            wins = f"{m['active_pms']['wins']}/{m['active_pms']['n']}"
            cells = [
                row["variant"],
                f"{row['load']:g}",
                row["policy"],
                format_stat(m["acceptance"], 100, 1),
                format_stat(m["active_pms"], 1, 1),
                wins,
                format_stat(m["energy_mwh"], 1, 2),
            ]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def draw(doc: dict[str, Any], png: Path, variant: str) -> None:
    """Four panels vs offered load, one line per policy, 95% CI error bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in doc["summary"] if r["variant"] == variant]
    if not rows:
        known = sorted({r["variant"] for r in doc["summary"]})
        raise UserError(f"--variant: no results for {variant!r} (have: {', '.join(known)})")
    fig, axes = plt.subplots(2, 2, figsize=(9, 6.5), constrained_layout=True)
    for ax, (title, metric, scale) in zip(axes.flat, PANELS, strict=True):
        for policy in dict.fromkeys(r["policy"] for r in rows):
            pts = sorted((r["load"], r["metrics"][metric]) for r in rows if r["policy"] == policy)
            pts = [(x, s) for x, s in pts if s["mean"] is not None]
            if not pts:
                continue
            ax.errorbar(
                [x for x, _ in pts],
                [s["mean"] * scale for _, s in pts],
                yerr=[(s["ci95"] or 0.0) * scale for _, s in pts],
                marker="o",
                capsize=3,
                label=policy,
            )
        ax.set_title(title)
        ax.set_xlabel("Offered load")
        ax.grid(alpha=0.3)
    axes.flat[0].legend()
    fig.suptitle(f"Policies vs offered load ({variant}; mean and 95% CI over seeds)")
    fig.savefig(png, dpi=120)
    plt.close(fig)


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
    doc = runs_document(load_runs(results), baseline)
    if what_if:
        from origamig.sim import whatif

        scenarios = whatif.what_ifs(doc)
        png = png or Path("whatif.png")
        whatif.draw(scenarios, png)
        text = whatif.markdown(scenarios)
        if md:
            md.write_text(text)
        typer.echo(text, nl=False)
        typer.echo(f"figure written to {png}", err=True)
        return
    png = png or Path("fig4.png")
    draw(doc, png, variant)
    text = markdown(doc)
    if md:
        md.write_text(text)
    typer.echo(text, nl=False)
    typer.echo(f"figure written to {png}", err=True)


def register(app: typer.Typer) -> None:
    app.command("report")(report)
