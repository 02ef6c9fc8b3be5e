"""`origamig report`: the paper's Fig. 4 panels (PNG) and a markdown table from simulate results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from origamig.cli.results_view import draw, markdown, pms_text, refuse_overwrite
from origamig.snapshot.document import write_text_atomic
from origamig.study.results import load_runs, runs_document


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
            write_text_atomic(md, text)
        typer.echo(text, nl=False)
        typer.echo(f"figure written to {png}", err=True)
        return
    setups = {json.dumps(r.get("setup", {}), sort_keys=True) for r in doc["summary"]}
    if len(setups) > 1:
        sizes = sorted({pms_text(r) for r in doc["summary"]}, key=lambda p: (len(p), p))
        typer.echo(
            f"note: the results come from {len(setups)} different setups (PMs: {', '.join(sizes)}); "
            "each is reported on its own rows, never averaged together",
            err=True,
        )
    draw(doc, png, variant)
    text = markdown(doc)
    if md:
        write_text_atomic(md, text)
    typer.echo(text, nl=False)
    typer.echo(f"figure written to {png}", err=True)


def register(app: typer.Typer) -> None:
    app.command("report")(report)
