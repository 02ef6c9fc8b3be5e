"""`origamig` — the typer application. Each command lives in its own module with `register(app)`."""

from __future__ import annotations

import importlib
from typing import Annotated

import typer

app = typer.Typer(
    name="origamig",
    help="MIG-aware VM placement: greedy arrivals, a neighborhood-restricted BILP, live-migration plans.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _show_version(value: bool) -> None:
    if value:
        from origamig.cli.console_entry import package_version

        typer.echo(f"origamig {package_version()}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", is_eager=True, callback=_show_version, help="Print the version and exit."),
    ] = False,
) -> None:
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
    """Console entry point: every user error — option errors included — is one `error:` line, exit 2."""
    from origamig.cli.console_entry import run

    run(app)
