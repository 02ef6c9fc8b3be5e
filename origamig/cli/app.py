"""`origamig` — the typer application. Each command lives in its own module with `register(app)`."""

from __future__ import annotations

import importlib
import sys

import typer

from origamig.errors import UserError

app = typer.Typer(
    name="origamig",
    help="MIG-aware VM placement: greedy arrivals, a neighborhood-restricted BILP, live-migration plans.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """MIG-aware VM placement (keeps `origamig <command>` a group even with a single command)."""


# One module per command; each defines `register(app: typer.Typer) -> None`.
COMMAND_MODULES: tuple[str, ...] = (
    "configs",
    "check",
    "importer",
    "simulate",
    "report",
    "solve",
    "check_plan",
)

for _name in COMMAND_MODULES:
    importlib.import_module(f"origamig.cli.{_name}").register(app)


def main() -> None:
    """Console entry point: user errors become one line per problem on stderr and exit code 2.

    Click's standalone mode handles its own errors (usage errors exit 2, `--help`, `typer.Exit`);
    typer vendors its own click, so catching `click.ClickException` here would miss them.
    """
    try:
        app()
    except UserError as err:
        for line in err.problems:
            print(f"error: {line}", file=sys.stderr)
        sys.exit(err.exit_code)
