"""`origamig` — the typer application. Each command lives in its own module with `register(app)`.

The command modules are imported only when their command runs (or shows its own `--help`):
`origamig --help` lists the commands from `COMMANDS` below, so start-up pays for typer alone and
`origamig solve` loads the solvers, not the simulator (and the other way round).
"""

from __future__ import annotations

import importlib
from difflib import get_close_matches
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

# Command name → (module under origamig.cli, the first paragraph of its help). Each module defines
# `register(app: typer.Typer) -> None`; tests check that the help here is the command's own.
COMMANDS: dict[str, tuple[str, str]] = {
    "configs": (
        "configs",
        "Enumerate every MIG configuration of a GPU model and count the suboptimal ones.",
    ),
    "check": (
        "check",
        "Validate a snapshot (every problem, one line each, exit 2) and summarize the cluster it describes.",
    ),
    "import": (
        "importer",
        "Build snapshot PMs from real MIG state: every GI found becomes a running VM that holds it.",
    ),
    "simulate": (
        "simulate",
        "Simulate placement policies on the paper's workload (docs/simulator.md), "
        "or on your fleet (--fleet) or\n"
        "cluster (--from), and report their metrics.",
    ),
    "study": (
        "study",
        "Compare policies over loads and seeds at a named scale, resumably (docs/studies.md).",
    ),
    "report": (
        "report",
        "Draw Fig. 4 (acceptance, active PMs, packing, energy per GPU-hour vs load) and a markdown table;\n"
        "with --what-if, the savings of each policy against the baseline on each fleet instead.",
    ),
    "solve": (
        "solve",
        "Optimize a snapshot: admit pending VMs, consolidate, and plan the live migrations to get there.",
    ),
    "check-plan": (
        "check_plan",
        "Replay a migration plan step by step and report the first step that breaks a constraint.",
    ),
    "serve": (
        "serve",
        "Serve OrigaMIG online: VM requests, the live snapshot, and a Kubernetes scheduler extender.",
    ),
}


def load_command(name: str) -> Any:
    """The click command `name`, built by importing its module (once per process)."""
    sub = typer.Typer()
    importlib.import_module(f"origamig.cli.{COMMANDS[name][0]}").register(sub)
    return typer.main.get_command(sub)


class _LazyGroup(TyperGroup):
    """A typer group whose commands are imported on first use; help lists them from `COMMANDS`."""

    _listing = False

    def list_commands(self, ctx: Any) -> list[str]:
        return [*COMMANDS, *(n for n in self.commands if n not in COMMANDS)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name in self.commands or cmd_name not in COMMANDS:
            return self.commands.get(cmd_name)
        if self._listing:  # the group's own --help: a stand-in that carries the help text only
            return typer.core.TyperCommand(cmd_name, help=COMMANDS[cmd_name][1])
        self.commands[cmd_name] = load_command(cmd_name)
        return self.commands[cmd_name]

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        try:
            return self._click_resolve_command(ctx, args)
        except typer.core._click.exceptions.UsageError as err:  # suggest among every command, loaded or not
            matches = get_close_matches(args[0], self.list_commands(ctx)) if args else []
            if matches:
                err.message = f"{err.message.rstrip('.')}. Did you mean {', '.join(map(repr, matches))}?"
            raise

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


app = typer.Typer(
    name="origamig",
    help="MIG-aware VM placement: greedy arrivals, a neighborhood-restricted BILP, live-migration plans.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=_LazyGroup,
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


def main() -> None:
    """Console entry point: every user error — option errors included — is one `error:` line, exit 2."""
    from origamig.cli.console_entry import run

    run(app)


def script() -> None:
    """The `origamig` console script: `main`, and a one-shot command's process ends as soon as its
    output is out (see `console_entry.run_script`)."""
    from origamig.cli.console_entry import run_script

    run_script(app)
