"""`origamig configs`: the paper's §3 configuration-space analysis of catalog GPU models."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from origamig.cli.terminal import operator_console
from origamig.cluster.catalog import default_catalog
from origamig.cluster.configspace import Analysis, analyze

ALL = "all"

# (label, numerator field, denominator field or None) — one table row each.
_ROWS: tuple[tuple[str, str, str | None], ...] = (
    ("GI placements", "placements", None),
    ("configurations", "configurations", None),
    ("terminal", "terminal", "configurations"),
    ("profile multisets", "multisets", None),
    ("suboptimal (CF < best)", "suboptimal", "configurations"),
    ("default-reachable", "default_reachable", "configurations"),
    ("  of them suboptimal", "default_suboptimal", "default_reachable"),
    ("two-GPU pairs", "two_gpu", None),
    ("looser, 1 GPU", "looser_single", "configurations"),
    ("looser, 2 GPUs", "looser_two_gpu", "two_gpu"),
)


def _cell(analysis: Analysis, field: str, whole: str | None) -> str:
    value = getattr(analysis, field)
    if whole is None or not getattr(analysis, whole):
        return f"{value:,}"
    return f"{value:,} ({100 * value / getattr(analysis, whole):.0f}%)"


def render(analyses: list[Analysis]) -> Table:
    """A rich table: one row per figure, one column per GPU model."""
    table = Table(title="MIG configuration space (paper §3)")
    table.add_column("figure")
    for a in analyses:
        table.add_column(a.gpu, justify="right")
    for label, field, whole in _ROWS:
        table.add_row(label, *(_cell(a, field, whole) for a in analyses))
    table.add_row("analysis time", *(f"{a.analysis_s * 1000:.1f} ms" for a in analyses))
    return table


def configs(
    gpu: Annotated[
        str, typer.Option("--gpu", help=f"GPU model of the catalog, or '{ALL}' for every model.")
    ] = "A100-40GB",
    as_json: Annotated[
        bool, typer.Option("--json", help="Print a JSON document instead of a table.")
    ] = False,
) -> None:
    """Enumerate every MIG configuration of a GPU model and count the suboptimal ones."""
    catalog = default_catalog()
    models = [catalog.gpus[name] for name in sorted(catalog.gpus)] if gpu == ALL else [catalog.gpu(gpu)]
    analyses = [analyze(m) for m in models]
    if as_json:
        doc = [a.as_dict() for a in analyses] if gpu == ALL else analyses[0].as_dict()
        typer.echo(json.dumps(doc, indent=2))
    else:
        operator_console().print(render(analyses))


def register(app: typer.Typer) -> None:
    app.command("configs")(configs)
