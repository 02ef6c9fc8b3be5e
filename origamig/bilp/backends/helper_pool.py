"""This process's solver helpers (`solver_host.py`): long-lived processes, one solver each, kept idle
between solves and taken by one caller at a time.

A process starts a helper the first time it solves and sends it every later solve, so no call pays a
process start; only a helper ended at a deadline is replaced, on the next call (`prepare` starts one
while the caller builds its model; the time it takes to start and import its solver is not counted in
the solve's limit). Concurrent callers (threads) each take their own idle helper. Helpers are started
with `subprocess`, not `multiprocessing`, so that they work inside daemonic processes too (a Dask
nanny's workers, which may not have `multiprocessing` children). A helper exits when its parent closes
the pipe or dies.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path

from origamig.bilp.backends import base
from origamig.bilp.backends.solver_host import READY

EXIT_WAIT_S = 1.0  # how long the caller waits for a helper that failed to exit, to read its status
START_TIMEOUT_S = 120.0  # how long a new helper may take to import its solver (a loaded machine)
HOST_MODULE = "origamig.bilp.backends.solver_host"


@dataclasses.dataclass
class Host:
    """One helper process and the two ends of its pipes held by the caller."""

    backend_name: str  # the solver it imported before it said it was ready, and serves
    process: subprocess.Popen[bytes]
    send: Connection
    receive: Connection
    ready_at: float | None = None  # perf_counter when it had imported the solver and said so

    def close(self) -> None:
        """Close the pipes (an idle helper then exits by itself)."""
        self.send.close()
        self.receive.close()

    def end(self) -> int | None:
        """Kill the helper (SIGKILL: nothing in it can delay that), close the pipes, return its exit
        status when it has one (negative: the signal that ended it)."""
        if self.process.poll() is None:
            self.process.kill()
        self.close()
        try:
            return self.process.wait(timeout=EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            return None


class Hosts:
    """The idle helpers of this process."""

    def __init__(self) -> None:
        self.idle: list[Host] = []
        self.lock = threading.Lock()

    def take(self, backend_name: str) -> Host:
        """An idle (or starting) helper of `backend_name`, else a new one; ready to solve."""
        with self.lock:
            host = self._pop(backend_name)
        if host is None or host.process.poll() is not None:
            if host is not None:
                host.close()
            host = _start_host(backend_name)
        if host.ready_at is None:
            _await_ready(host)
        return host

    def prepare(self, backend_name: str) -> None:
        """Start a helper of `backend_name` without waiting for it, unless one is idle or starting."""
        with self.lock:
            if any(host.backend_name == backend_name for host in self.idle):
                return
        host = _start_host(backend_name)
        self.give_back(host)

    def _pop(self, backend_name: str) -> Host | None:
        for host in reversed(self.idle):
            if host.backend_name == backend_name:
                self.idle.remove(host)
                return host
        return None

    def give_back(self, host: Host) -> None:
        with self.lock:
            self.idle.append(host)

    def forget(self) -> None:
        """In a forked child: the parent's helpers are not this process's (closes only the copies)."""
        for host in self.idle:
            host.close()
        self.idle = []
        self.lock = threading.Lock()


HOSTS = Hosts()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=HOSTS.forget)


def prepare(backend_name: str, limits: base.Limits) -> None:
    """Start this process's helper for `backend_name` now if a solve within `limits` will need one
    and none is running, so that it imports its solver while the caller builds the model."""
    if limits.kill_after_s is not None and limits.kill_at_deadline and os.name == "posix":
        try:
            HOSTS.prepare(backend_name)
        except OSError:  # the solve itself reports it
            return


def start_solver_helpers(name: str, limits: base.Limits) -> None:
    """Start the helper processes that solves of backend `name` within `limits` will use, now, so that
    they import their solvers while the caller does other work (a one-shot process: its imports, the
    input, the model); a later solve finds them ready. Nothing is started if none will be needed."""
    for helper in base.get_backend_class(name).helper_backends:
        prepare(helper, limits)


def _start_host(backend_name: str) -> Host:
    """A new helper process running this very package (its folder first on the helper's path); it
    says "ready" once it has imported `backend_name`'s solver (`_await_ready`)."""
    package_parent = str(Path(__file__).resolve().parents[3])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    to_host, from_us = os.pipe()
    to_us, from_host = os.pipe()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", HOST_MODULE, str(os.getpid()), backend_name],
            stdin=to_host,
            stdout=from_host,
            env=env,
            close_fds=True,
        )
    except BaseException:
        for fd in (from_us, to_us):
            os.close(fd)
        raise
    finally:
        os.close(to_host)
        os.close(from_host)
    send, receive = Connection(from_us, readable=False), Connection(to_us, writable=False)
    return Host(backend_name, process, send, receive)


def _await_ready(host: Host) -> None:
    """Wait until `host` says it is ready; `OSError` (and the helper ended) if it does not."""
    try:
        ready = host.receive.poll(START_TIMEOUT_S) and host.receive.recv() == READY
    except (EOFError, OSError):
        ready = False
    if not ready:
        code = host.end()
        raise OSError(f"the solver process did not start (exit status {code})")
    host.ready_at = time.perf_counter()


def helper_pids() -> list[int]:
    """The process ids of this process's idle helpers, ascending (for tests and diagnostics)."""
    with HOSTS.lock:
        return sorted(host.process.pid for host in HOSTS.idle)
