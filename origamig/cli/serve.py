"""`origamig serve`: OrigaMIG online, as an HTTP service beside a scheduler (docs/service.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from origamig.cli.simulate import parse_options
from origamig.errors import UserError, require_extra
from origamig.serve.run import DEFAULT_LISTEN, POLICY, ServeConfig, parse_listen, read_token, serve


def serve_command(
    state: Annotated[Path, typer.Option("--state", help="SQLite state file (created and seeded when new).")],
    token_file: Annotated[
        Path, typer.Option("--token-file", help="File holding the bearer token every client sends.")
    ],
    seed: Annotated[
        Path | None,
        typer.Option("--from", help="Snapshot JSON that seeds a new state (docs/formats.md#snapshot)."),
    ] = None,
    listen: Annotated[str, typer.Option("--listen", help="HOST:PORT to listen on.")] = DEFAULT_LISTEN,
    clock: Annotated[
        str,
        typer.Option(
            "--clock",
            help="'wall' (the optimizer checks on its own) or 'replay' (the client sets the simulated "
            "time with POST /v1/clock, to replay a request log as the simulator would).",
        ),
    ] = "wall",
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option", "-o", help="OrigaMIG policy option KEY=VALUE (repeatable), e.g. arrival=ff."
        ),
    ] = None,
) -> None:
    """Serve OrigaMIG online: VM requests, the live snapshot, and a Kubernetes scheduler extender."""
    for module in ("starlette", "uvicorn"):
        require_extra(module, "serve", "origamig serve")
    if clock not in ("wall", "replay"):
        raise UserError(f"--clock: {clock!r} is not 'wall' or 'replay'")
    host, port = parse_listen(listen)
    token = read_token(token_file)
    options = parse_options(option or [], [POLICY])
    serve(ServeConfig(state, seed, host, port, token, options, clock))


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_command)
