"""Start the service: open (or seed) the state, build the policy and the app, run uvicorn."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from origamig.call.goals import DEFAULT_GOAL
from origamig.errors import UserError
from origamig.policies.base import make_policy
from origamig.serve.live import Live
from origamig.serve.store import Store
from origamig.snapshot.document import load_snapshot

DEFAULT_LISTEN = "127.0.0.1:8787"
POLICY = "origamig"  # the policy the service drives (its options come from `--option`)


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


def open_live(state: Path, seed: Path | None, options: tuple[tuple[str, Any], ...] = ()) -> Live:
    """The live cluster of `state`, seeded from `seed` when the state is new (else `seed` is unused).
    Everything is checked before a new state file is written: a refused start leaves none behind."""
    # The service's defaults differ from the simulator's: admit first, GIs created GPU by GPU.
    policy = make_policy(POLICY, **{"goal": DEFAULT_GOAL, "gpu_order": True, **dict(options)})
    snap = None
    if not _seeded(state):
        if seed is None:
            raise UserError(f"--from: {state} holds no state yet: give --from SNAPSHOT.json to seed it")
        if not seed.is_file():
            raise UserError(f"--from: {seed}: no such file")
        snap = load_snapshot(seed)
    elif seed is not None:
        print(f"origamig serve: {state} is already seeded; --from {seed} is not read again", file=sys.stderr)
    store = Store(state)
    if snap is not None:
        store.seed(snap.document)
    return Live(store, policy)


def _seeded(state: Path) -> bool:
    if not state.exists():
        return False
    store = Store(state)
    try:
        return store.seeded()
    finally:
        store.close()


def serve(config: ServeConfig) -> None:
    """Run the service until it is stopped (SIGINT/SIGTERM)."""
    import uvicorn

    from origamig.serve.app import build_app
    from origamig.serve.optimizer import Optimizer
    from origamig.serve.replay import ReplayClock

    live = open_live(config.state, config.seed, config.options)
    optimizer = Optimizer(live)
    clock = ReplayClock(live, optimizer) if config.clock == "replay" else None
    app = build_app(live, config.token, clock)
    dc = live.dc
    print(
        f"origamig serve: http://{config.host}:{config.port} — {len(dc.pms)} PMs, {len(dc.vms)} running, "
        f"{len(dc.pending)} pending (state {config.state})",
        file=sys.stderr,
        flush=True,
    )
    if clock is None:
        optimizer.start()
    try:
        uvicorn.run(app, host=config.host, port=config.port, log_level="warning", access_log=False)
    finally:
        optimizer.stop()
        live.store.close()
