"""Start the service: bind the socket, open (or seed) the state, build the policy and the app, run
uvicorn.

Nothing is half-written: the listening socket is bound before the state file is created, every
setting is checked before that, and a start that fails after a new state file was written removes
it; any start-up failure is one `error:` line (exit 2).
"""

from __future__ import annotations

import contextlib
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from origamig.call.goals import DEFAULT_GOAL
from origamig.errors import UserError
from origamig.policies.base import make_policy
from origamig.serve.live import Live
from origamig.serve.store import Store
from origamig.snapshot.document import Snapshot, load_snapshot

DEFAULT_LISTEN = "127.0.0.1:8787"
POLICY = "origamig"  # the policy the service drives (its options come from `--option`)
DEFAULT_STEP_TIMEOUT_S = 600.0
# The service's policy defaults differ from the simulator's: admit first, GIs created GPU by GPU.
SERVE_DEFAULTS: dict[str, Any] = {"goal": DEFAULT_GOAL, "gpu_order": True}
# `--optimizer off`: the extender and the arrival rule only; an arrival that fits nowhere is refused.
OPTIMIZER_OFF: dict[str, Any] = {"admission_calls": False, "consolidation_calls": False}


@dataclass(frozen=True)
class ServeConfig:
    """Everything `origamig serve` was given, checked."""

    state: Path
    seed: Path | None
    host: str
    port: int
    token: str
    options: tuple[tuple[str, Any], ...] = ()
    clock: str = "wall"  # or "replay": the client sets the clock (POST /v1/clock)
    step_timeout_s: float | None = DEFAULT_STEP_TIMEOUT_S
    optimizer: bool = True
    intra_pm_moves: bool | None = None  # None: the seed's `intra_pm_moves`
    tls: dict[str, Any] = field(default_factory=dict)  # uvicorn's ssl_* settings (`tls.tls_options`)


def parse_listen(text: str) -> tuple[str, int]:
    """`HOST:PORT` (IPv6 hosts in brackets) → (host, port)."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UserError(f"--listen: {text!r} is not HOST:PORT (e.g. {DEFAULT_LISTEN})")
    return host.strip("[]"), int(port)


def read_token(path: Path) -> str:
    """The bearer token: the file's text without surrounding white space (at least 16 characters)."""
    try:
        token = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"--token-file: {path}: cannot read ({exc.__class__.__name__})") from None
    if len(token) < 16 or any(c.isspace() for c in token):
        raise UserError(f"--token-file: {path}: the token must be one word of at least 16 characters")
    return token


def policy_options(config: ServeConfig) -> dict[str, Any]:
    """The OrigaMIG options the service runs with: its defaults, `--optimizer off`, then `-o`."""
    off = {} if config.optimizer else OPTIMIZER_OFF
    return {**SERVE_DEFAULTS, **off, **dict(config.options)}


def seed_snapshot(state: Path, seed: Path | None) -> Snapshot | None:
    """The snapshot that seeds a new state (None when `state` is already seeded: `--from` is then
    not read again); `UserError` when a new state has no valid `--from`."""
    if _seeded(state):
        if seed is not None:
            print(
                f"origamig serve: {state} is already seeded; --from {seed} is not read again", file=sys.stderr
            )
        return None
    if seed is None:
        raise UserError(f"--from: {state} holds no state yet: give --from SNAPSHOT.json to seed it")
    if not seed.is_file():
        raise UserError(f"--from: {seed}: no such file")
    return load_snapshot(seed)


def open_live(
    state: Path,
    seed: Path | None,
    options: tuple[tuple[str, Any], ...] | dict[str, Any] = (),
    step_timeout_s: float | None = DEFAULT_STEP_TIMEOUT_S,
    intra_pm_moves: bool | None = None,
) -> Live:
    """The live cluster of `state`, seeded from `seed` when the state is new (else `seed` is unused).
    Everything is checked before a new state file is written; a new file is removed again when the
    start fails after it was written."""
    policy = make_policy(POLICY, **dict(options))
    snap = seed_snapshot(state, seed)
    new = not state.exists()
    try:
        store = Store(state)
        if snap is not None:
            store.seed(snap.document)
        live = Live(store, policy, step_timeout_s)
    except BaseException:
        if new:
            _remove_state(state)
        raise
    if intra_pm_moves is not None:
        live.dc.intra_pm_moves = intra_pm_moves
    return live


def _remove_state(state: Path) -> None:
    """A state file this start created, with its SQLite side files."""
    for path in (state, state.with_name(state.name + "-wal"), state.with_name(state.name + "-shm")):
        with contextlib.suppress(OSError):
            path.unlink()


def _seeded(state: Path) -> bool:
    if not state.exists():
        return False
    store = Store(state)
    try:
        return store.seeded()
    finally:
        store.close()


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound now (`UserError` naming the address when it cannot be)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise UserError(f"--listen: {host}:{port}: cannot listen there ({exc.strerror or exc})") from None
    sock.set_inheritable(True)
    return sock


def serve(config: ServeConfig) -> None:
    """Run the service until it is stopped (SIGINT/SIGTERM)."""
    import uvicorn

    from origamig.serve.app import build_app
    from origamig.serve.optimizer import Optimizer
    from origamig.serve.replay import ReplayClock
    from origamig.serve.tls import ClientCertProtocol

    sock = bind(config.host, config.port)  # before any state file is written
    try:
        live = open_live(
            config.state, config.seed, policy_options(config), config.step_timeout_s, config.intra_pm_moves
        )
    except BaseException:
        sock.close()
        raise
    optimizer = Optimizer(live)
    clock = ReplayClock(live, optimizer) if config.clock == "replay" else None
    app = build_app(live, config.token, clock)
    dc = live.dc
    scheme = "https" if config.tls else "http"
    print(
        f"origamig serve: {scheme}://{config.host}:{config.port} — {len(dc.pms)} PMs, {len(dc.vms)} running, "
        f"{len(dc.pending)} pending (state {config.state})",
        file=sys.stderr,
        flush=True,
    )
    if clock is None and config.optimizer:
        optimizer.start()
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", access_log=False, http=ClientCertProtocol, **config.tls)
    )
    try:
        server.run(sockets=[sock])
    finally:
        optimizer.stop()
        live.store.close()
        sock.close()
