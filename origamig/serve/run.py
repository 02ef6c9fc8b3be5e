"""Start the service: bind the socket, lock the state (one server per state), open (or seed) it,
build the policy and the app, run uvicorn.

Nothing is half-written: the listening socket is bound before the state file is created, every
setting is checked before that, and a start that fails after a new state file was written removes
it; any start-up failure is one `error:` line (exit 2). An existing state that is not a whole
origamig state, or that cannot be written, is refused, never seeded anew.
"""

from __future__ import annotations

import contextlib
import gc
import os
import socket
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from origamig.call.goals import DEFAULT_GOAL
from origamig.errors import UserError
from origamig.serve.door import plain_int
from origamig.serve.live import PLATFORM
from origamig.serve.opening import DEFAULT_STEP_TIMEOUT_S, open_state
from origamig.serve.platform import Platform
from origamig.serve.state_file import STOPPED
from origamig.serve.stopping import DRAIN_S, StopSignals
from origamig.serve.store import StateMoved, StoreWriteError

DEFAULT_LISTEN = "127.0.0.1:8787"
# The collector's thresholds while serving: the young generations as Python's defaults, a full pass
# after 1,000 passes over the middle one instead of 10 (at 10,000 PMs a full pass takes 0.1–0.3 s,
# and at the default it came every few seconds under load; the service makes few reference cycles).
GC_THRESHOLDS = (700, 10, 1000)
REQUEST_TIMEOUT_S = 10.0  # a connection's time to deliver a whole request (`connections.py`)
# The service's policy defaults differ from the simulator's: admit first, GIs created GPU by GPU.
SERVE_DEFAULTS: dict[str, Any] = {"goal": DEFAULT_GOAL, "gpu_order": True, "primal": True}
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
    tls: dict[str, Any] = field(default_factory=dict)  # the ssl_* settings of `tls.tls_options`
    request_timeout_s: float = REQUEST_TIMEOUT_S  # to deliver a whole request (`connections.py`)
    controller: str = PLATFORM  # who carries out plans' steps: the platform, or `simulated` (docs)
    platform: Platform | None = None  # None: the seed's `platform` field (`serve/platform.py`)
    kubeconfig: Path | None = None  # the Kubernetes API of POST /k8s/bind (None: in-cluster, if any)
    access_log: bool = False  # one JSON line per request (`serve/events_log.py`)


def parse_listen(text: str) -> tuple[str, int]:
    """`HOST:PORT` (IPv6 hosts in brackets) → (host, port)."""
    host, sep, port = text.rpartition(":")
    number = plain_int(port, 5)
    if not sep or not host or number is None or not 0 < number < 65536:
        raise UserError(f"--listen: {text!r} is not HOST:PORT (e.g. {DEFAULT_LISTEN})")
    return host.strip("[]"), number


def read_token(path: Path) -> str:
    """The bearer token: the file's text without surrounding white space (at least 16 characters).
    A file that group or others may read or write is refused, as ssh refuses a loose key."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise UserError(f"--token-file: {path}: cannot read ({exc.strerror})") from None
    if mode & 0o077:
        raise UserError(
            f"--token-file: {path}: mode {stat.S_IMODE(mode):04o} lets group or others at the token "
            f"(chmod 600 {path})"
        )
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


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound now (`UserError` naming the address when it cannot be)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets that say they are TCP; without it a
    # keep-alive client waits ~40 ms (Nagle and delayed ACKs) for every answer after the first.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
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
    from origamig.serve.bind import Binder, kube_api
    from origamig.serve.connections import (
        ACCEPT_BACKLOG,
        connection_cap,
        quiet_repeats,
        raise_open_file_limit,
        service_protocol,
    )
    from origamig.serve.events_log import EVENTS
    from origamig.serve.metrics import Metrics
    from origamig.serve.optimizer import Optimizer
    from origamig.serve.optimizer_off import reject_waiting
    from origamig.serve.replay import ReplayClock
    from origamig.serve.state_watch import StateWatch

    api = kube_api(config.kubeconfig)  # a kubeconfig that cannot be read stops the start here
    stops = StopSignals()  # SIGTERM and SIGINT alike: the cleanup below always runs
    open_files = raise_open_file_limit()  # before the socket and the state take any
    sock = bind(config.host, config.port)  # before any state file is written
    scheme = "https" if config.tls else "http"
    holder = f"pid {os.getpid()}, {scheme}://{config.host}:{config.port}"
    try:
        opened = open_state(
            config.state,
            config.seed,
            policy_options(config),
            config.step_timeout_s,
            config.intra_pm_moves,
            holder,
            config.controller,
            config.platform,
        )
    except BaseException:
        sock.close()
        raise
    live = opened.live
    # The loaded state lives as long as the process: out of the collector's full passes, which would
    # otherwise walk all of it now and then and hold every request meanwhile. What the service keeps
    # later (indexes, encoded pieces, remembered answers) grows too: full passes are made rare.
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    if not config.optimizer:
        try:
            rejected = reject_waiting(live)
        except StoreWriteError:  # a full disk: they wait, and are rejected at the next start
            rejected = []
        if rejected:
            shown = ", ".join(rejected[:5]) + (", ..." if len(rejected) > 5 else "")
            print(
                f"origamig serve: --optimizer off: {len(rejected)} pending VMs rejected ({shown}): "
                "nothing would admit them (GET /v1/vms/{id} says why)",
                file=sys.stderr,
                flush=True,
            )
    optimizer = Optimizer(live)
    clock = ReplayClock(live, optimizer) if config.clock == "replay" else None
    metrics = Metrics(live)
    EVENTS.listeners.append(metrics.on_event)
    app = build_app(live, config.token, clock, optimizer, Binder(live, api), metrics, config.access_log)
    dc = live.dc
    print(
        f"origamig serve: {scheme}://{config.host}:{config.port} — {len(dc.pms)} PMs, {len(dc.vms)} running, "
        f"{len(dc.pending)} pending (state {live.store.path}{', read-only' if opened.read_only else ''})",
        file=sys.stderr,
        flush=True,
    )
    if clock is None and config.optimizer:
        optimizer.start()
    else:
        optimizer.without_loop("off" if not config.optimizer else "replay")
    quiet_repeats()
    protocol = service_protocol(connection_cap(open_files), config.request_timeout_s, config.tls)
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            http=cast(Any, protocol),  # a factory of protocols, as uvicorn calls a class
            backlog=ACCEPT_BACKLOG,
            timeout_graceful_shutdown=DRAIN_S,
        )
    )
    stops.attach(server)
    watch = StateWatch(live.store, stops.fail, os.getpid())
    watch.start()
    try:
        server.run(sockets=[sock])
    finally:
        watch.stop()
        optimizer.stop()
        if stops.fault is None:
            with contextlib.suppress(StoreWriteError):  # a full disk: the state stays marked running
                live.store.mark(STOPPED)
        opened.close()  # the last connection: SQLite folds the write-ahead log into the file
        sock.close()
        stops.restore()
    if stops.fault is not None:
        raise StateMoved(stops.fault)
    stops.say_stopped()
