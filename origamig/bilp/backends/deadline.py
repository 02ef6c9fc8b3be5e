"""The last resort of a wall-clock limit: solve in a helper process and end it at the deadline.

In the solver's own process a limit is held by the solver's time limit and by a guard that cancels
it through its interrupt callbacks. Neither reaches every phase: HiGHS checks no clock and calls no
callback inside parts of MIP presolve, probing and the root set-up, which on a model of 170k columns
under load ran for minutes past a 10 s limit. So a solve with a wall-clock limit runs in a helper
process, and the caller ends that process at the deadline; the answer is then the always-feasible
start, with `guard = GUARD_KILLED`.

The helper (`solver_host.py`) is long-lived: a process starts one the first time it solves and
sends it every later solve (the standard form without its Pyomo columns, pickled over a pipe, and
the `SolveResult` back), so no call pays a process start; only a helper ended at a deadline is
replaced, on the next call (the time a new helper takes to start and import its solver is not
counted in the solve's limit; `prepare` starts it while the caller builds its model). A helper
serves one solver; concurrent callers (threads) each take
their own idle helper. Helpers
are started with `subprocess`, not `multiprocessing`, so that they work inside daemonic processes
too (a Dask nanny's workers, which may not have `multiprocessing` children). A helper gets the
remaining time as its own limit, less a margin to send its answer back, so the kill is for the
cases where the solver would not have stopped anyway. It exits when its parent closes the pipe or
dies. Helpers need POSIX pipes; elsewhere the solve runs in the calling process, its limit held by
the solver and its guard alone.

A deterministic solve has no wall-clock limit (its result must not depend on the machine's load);
it runs in a helper too, ended only by the safety net (`Limits.safety_net_s`, minutes), so that a
solver phase that never ends cannot stall a simulation. Its helper gets no time limit of its own;
the helper's solve gives exactly the answer of a solve in the calling process.

While its helpers solve, the caller may do work of its own (`meanwhile`: a one-shot `solve` proves
"no change" by the LP bound there). An answer of that work settles the solve like a helper's: a helper
still solving is ended, and a new one starts at once in its place, for the caller's next solve. Work
that gives no answer but is needed after the solve (a one-shot command's imports for planning and
printing) goes in `meanwhile` too, after it (`base.then`, `base.Once`): the caller hands it to its
solves, and it is done the first time one waits.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as connection_wait
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

try:
    import resource
except ImportError:  # not on Windows
    resource = None  # type: ignore[assignment]

from origamig.bilp.backends import base
from origamig.bilp.backends.solver_host import READY

if TYPE_CHECKING:
    from origamig.bilp.compile import Compiled

KILL_GRACE_S = 0.3  # the caller ends the helper this long after the deadline if no answer came
EXIT_WAIT_S = 1.0  # how long the caller waits for a helper that failed to exit, to read its status
START_TIMEOUT_S = 120.0  # how long a new helper may take to import its solver (a loaded machine)
HOST_MODULE = "origamig.bilp.backends.solver_host"
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclasses.dataclass
class _Host:
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


class _Hosts:
    """The idle helpers of this process."""

    def __init__(self) -> None:
        self.idle: list[_Host] = []
        self.lock = threading.Lock()

    def take(self, backend_name: str) -> _Host:
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

    def _pop(self, backend_name: str) -> _Host | None:
        for host in reversed(self.idle):
            if host.backend_name == backend_name:
                self.idle.remove(host)
                return host
        return None

    def give_back(self, host: _Host) -> None:
        with self.lock:
            self.idle.append(host)

    def forget(self) -> None:
        """In a forked child: the parent's helpers are not this process's (closes only the copies)."""
        for host in self.idle:
            host.close()
        self.idle = []
        self.lock = threading.Lock()


_HOSTS = _Hosts()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_HOSTS.forget)


def prepare(backend_name: str, limits: base.Limits) -> None:
    """Start this process's helper for `backend_name` now if a solve within `limits` will need one
    and none is running, so that it imports its solver while the caller builds the model."""
    if limits.kill_after_s is not None and limits.kill_at_deadline and os.name == "posix":
        try:
            _HOSTS.prepare(backend_name)
        except OSError:  # the solve itself reports it
            return


def start_solver_helpers(name: str, limits: base.Limits) -> None:
    """Start the helper processes that solves of backend `name` within `limits` will use, now, so that
    they import their solvers while the caller does other work (a one-shot process: its imports, the
    input, the model); a later solve finds them ready. Nothing is started if none will be needed."""
    for helper in base.get_backend_class(name).helper_backends:
        prepare(helper, limits)


def _start_host(backend_name: str) -> _Host:
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
    return _Host(backend_name, process, send, receive)


def _await_ready(host: _Host) -> None:
    """Wait until `host` says it is ready; `OSError` (and the helper ended) if it does not."""
    try:
        ready = host.receive.poll(START_TIMEOUT_S) and host.receive.recv() == READY
    except (EOFError, OSError):
        ready = False
    if not ready:
        code = host.end()
        raise OSError(f"the solver process did not start (exit status {code})")
    host.ready_at = time.perf_counter()


def cpu_seconds() -> float:
    """CPU seconds so far of this process, of its idle solver helpers (read from /proc; a helper is
    idle between solves) and of its children already ended and reaped. The difference of two readings
    taken between solves is what the solves in between cost on every core. Off Linux: this process's
    own time and its reaped children's."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN) if resource is not None else None
    reaped = children.ru_utime + children.ru_stime if children is not None else 0.0
    return time.process_time() + reaped + sum(_proc_cpu_s(pid) for pid in helper_pids())


def _proc_cpu_s(pid: int) -> float:
    """User + system seconds of a live process (0 when it is gone or there is no /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS  # utime and stime, in clock ticks


def helper_pids() -> list[int]:
    """The process ids of this process's idle helpers, ascending (for tests and diagnostics)."""
    with _HOSTS.lock:
        return sorted(host.process.pid for host in _HOSTS.idle)


def _portable(compiled: Compiled) -> Compiled:
    """`compiled` as a helper gets it: without its Pyomo columns (the solve does not read them)."""
    try:
        return dataclasses.replace(compiled, columns=())
    except TypeError:  # a standard form without Pyomo columns travels as it is
        return compiled


def solve_limited(
    backend: Any,
    compiled: Compiled,
    hint: np.ndarray,
    limits: base.Limits,
    meanwhile: base.Meanwhile | None = None,
) -> base.SolveResult:
    """`backend`'s solve within `limits`: with a wall-clock limit (or the safety net) in a helper
    process ended at the deadline, `meanwhile` done while it solves; otherwise `meanwhile` first
    and, when it gives no answer, the solve in this process with the time that is left."""
    if limits.kill_after_s is not None and limits.kill_at_deadline and os.name == "posix":
        return solve_in_child(backend.name, compiled, hint, limits, time.perf_counter(), meanwhile)
    t0 = time.perf_counter()
    early = meanwhile() if meanwhile is not None else None
    if early is not None:
        return early
    return base.errors_as_result(backend, compiled, hint, limits.less(time.perf_counter() - t0))


class SolvesInHelper:
    """What a backend that solves in helper processes inherits: its `solve` (`solve_limited`)."""

    name: str

    def solve(
        self,
        compiled: Compiled,
        hint: np.ndarray,
        limits: base.Limits,
        meanwhile: base.Meanwhile | None = None,
    ) -> base.SolveResult:
        """Solve within `limits`; with a wall-clock limit in a helper process ended at the deadline,
        `meanwhile` done while it solves."""
        return solve_limited(self, compiled, hint, limits, meanwhile)


def solve_in_child(
    backend_name: str,
    compiled: Compiled,
    hint: np.ndarray,
    limits: base.Limits,
    started: float,
    meanwhile: base.Meanwhile | None = None,
) -> base.SolveResult:
    """Solve in a helper process; at `started + limits.kill_after_s` (perf_counter) plus a short
    grace, end it and answer with the start. A helper that dies answers the same way, as an ERROR.
    An answer of `meanwhile` (done here while the helper solves) is the answer."""
    assert limits.kill_after_s is not None
    if os.name != "posix":  # no helper processes: the solve here, `meanwhile` first
        return solve_limited(base.get_backend(backend_name), compiled, hint, limits, meanwhile)
    runs = [(backend_name, limits)]
    entrants = race_in_children(runs, compiled, hint, limits.kill_after_s, started, meanwhile=meanwhile)
    return entrants[-1].result  # the helper's, or the caller's when `meanwhile` answered


@dataclasses.dataclass(frozen=True)
class Entrant:
    """One solver's part in a race: its result, and whether the solver itself answered (False: the
    result is the start, because its helper was ended or failed)."""

    result: base.SolveResult
    answered: bool


@dataclasses.dataclass
class _Race:
    """The helpers of one race and what they answered so far (`race_in_children`)."""

    runs: Sequence[tuple[str, base.Limits]]
    hosts: list[_Host | None]
    failures: list[str]  # per run: why its helper could not be had ("" when it was)
    ready_at: float  # perf_counter when the last helper was ready: the solve's time starts there
    deadline: float  # perf_counter; inf without a limit
    answers: dict[int, base.HelperAnswer] = dataclasses.field(default_factory=dict)
    answered_at: dict[int, float] = dataclasses.field(default_factory=dict)
    waiting: dict[Connection, int] = dataclasses.field(default_factory=dict)

    def receive(self, timeout: float | None) -> list[int]:
        """Read the answers that come within `timeout` seconds; the runs that answered."""
        got = []
        for conn in connection_wait(list(self.waiting), timeout):
            assert isinstance(conn, Connection)
            i = self.waiting.pop(conn)
            self.answers[i] = _receive(conn)
            self.answered_at[i] = time.perf_counter()
            got.append(i)
        return got

    def end_the_waiting(self) -> None:
        for i in self.waiting.values():
            host = self.hosts[i]
            if host is not None:
                host.end()


def _send(
    runs: Sequence[tuple[str, base.Limits]],
    compiled: Compiled,
    hint: np.ndarray,
    limit_s: float | None,
    started: float,
) -> _Race:
    """Take a helper per run (every missing one starts importing at once, then each is awaited) and
    send each the solve, with the deadline as wall time."""
    hosts: list[_Host | None] = []
    failures: list[str] = []
    for name, _ in runs:
        with contextlib.suppress(OSError):  # `take` below tries again and reports it
            _HOSTS.prepare(name)
    for name, _ in runs:
        try:
            hosts.append(_HOSTS.take(name))
            failures.append("")
        except OSError as exc:
            hosts.append(None)
            failures.append(f"solver failed: {exc}")
    ready_at = max([started] + [h.ready_at or started for h in hosts if h is not None])
    deadline = ready_at + limit_s if limit_s is not None else math.inf  # helpers' start is not the solve's
    race = _Race(runs, hosts, failures, ready_at, deadline)
    epoch_deadline = time.time() + (deadline - time.perf_counter()) if limit_s is not None else math.inf
    for i, ((name, limits), host) in enumerate(zip(runs, hosts, strict=True)):
        if host is None:
            continue
        request = (name, _portable(compiled), hint, dataclasses.replace(limits, kill_at_deadline=False))
        try:
            host.send.send((*request, epoch_deadline))
            race.waiting[host.receive] = i
        except OSError as exc:
            race.answers[i] = base.HelperFailed(f"{exc.__class__.__name__}: {exc}", died=True)
    return race


def _await(race: _Race, settles: Callable[[base.SolveResult], bool]) -> str:
    """Wait for answers until one `settles` the race or the deadline (plus a grace) passes; the name
    of the run that settled it ("" when none did)."""
    while race.waiting:
        now = time.perf_counter()
        timeout = None if race.deadline == math.inf else max(0.0, race.deadline + KILL_GRACE_S - now)
        got = race.receive(timeout)
        if not got:
            return ""
        answers = [(i, race.answers[i]) for i in got]
        settling = [i for i, a in answers if isinstance(a, base.SolveResult) and settles(a)]
        if settling:  # every answer that came with it is kept
            return race.runs[settling[-1]][0]
    return ""


def _settle(
    race: _Race, compiled: Compiled, hint: np.ndarray, limit_s: float | None, settled_by: str
) -> list[Entrant]:
    """Each run's entrant; a helper that answered goes back to the pool, one that did not is ended."""
    out = []
    for i, ((name, limits), host) in enumerate(zip(race.runs, race.hosts, strict=True)):
        answer = race.answers.get(i)
        wall = race.answered_at.get(i, time.perf_counter()) - race.ready_at
        healthy = isinstance(answer, base.SolveResult) or (
            isinstance(answer, base.HelperFailed) and not answer.died
        )
        code = None
        if host is not None:
            if healthy:
                _HOSTS.give_back(host)
            else:
                code = host.end()
        failure = race.failures[i]
        out.append(_entrant(name, compiled, hint, limits, answer, code, wall, failure, settled_by, limit_s))
    return out


def race_in_children(
    runs: Sequence[tuple[str, base.Limits]],
    compiled: Compiled,
    hint: np.ndarray,
    limit_s: float | None,
    started: float,
    settles: Callable[[base.SolveResult], bool] = lambda result: True,
    meanwhile: base.Meanwhile | None = None,
) -> list[Entrant]:
    """Send the same solve to one helper per `(backend name, limits)`, all at once, and collect the
    answers. As soon as an answer `settles` the race (by default: any answer), the helpers still
    solving are ended; at `started + limit_s` (perf_counter; None: no limit) plus a short grace every
    helper still solving is ended. An ended or dead helper's entrant is the start (INTERRUPTED with
    `GUARD_KILLED`, or ERROR); a new helper replaces it on the next solve.

    `meanwhile` is called once the requests are sent. When it returns a result, that result settles
    the race and comes back as one more entrant, after the runs' (answers already sent are kept; the
    helpers still solving are ended, and their replacements start at once). When it raises, the
    helpers still solving are ended and the exception goes on."""
    race = _send(runs, compiled, hint, limit_s, started)
    try:
        early = meanwhile() if meanwhile is not None else None
    except BaseException:  # the caller's work failed: no helper may go on solving for nobody
        race.end_the_waiting()
        raise
    if early is not None:
        race.receive(0)  # answers that came while `meanwhile` worked
        settled_by = f"the {early.termination} result"
    else:
        settled_by = _await(race, settles)
    out = _settle(race, compiled, hint, limit_s, settled_by)
    if early is not None:
        for i in race.waiting.values():  # the helpers ended because `meanwhile` answered: replaced now
            with contextlib.suppress(OSError):
                _HOSTS.prepare(runs[i][0])
        out.append(Entrant(early, True))
    return out


def _receive(conn: Connection) -> base.HelperAnswer:
    """A helper's answer; a `HelperFailed` that `died` when it died before answering, or answered
    something else."""
    try:
        got = conn.recv()
    except (EOFError, OSError) as exc:
        return base.HelperFailed(f"{exc.__class__.__name__}: {exc}", died=True)
    if isinstance(got, base.SolveResult | base.HelperFailed):
        return got
    return base.HelperFailed(f"the solver process answered {got!r}", died=True)


def _entrant(
    name: str,
    compiled: Compiled,
    hint: np.ndarray,
    limits: base.Limits,
    answer: base.HelperAnswer | None,
    code: int | None,
    wall: float,
    failure: str,
    settled_by: str,
    limit_s: float | None,
) -> Entrant:
    """The entrant of one helper from its answer (None: none came) and its exit status if ended."""
    if isinstance(answer, base.SolveResult):
        return Entrant(dataclasses.replace(answer, wall_s=wall), True)
    if failure:
        return Entrant(base.start_result(name, compiled, hint, base.ERROR, wall, "", failure), False)
    if answer is None:
        why = (
            f"ended: {settled_by} answered first"
            if settled_by
            else f"no answer {limit_s:g} s into the solve: the solver process was ended"
            + ("" if limits.wall_limit_s is not None else " (the safety net of a deterministic solve)")
        )
        return Entrant(
            base.start_result(name, compiled, hint, base.INTERRUPTED, wall, base.GUARD_KILLED, why), False
        )
    why = answer.why
    if code is not None and code < 0:
        why = f"{why}; solver process ended by signal {-code}"
    elif code is not None:
        why = f"{why}; solver process exited with status {code}"
    return Entrant(
        base.start_result(name, compiled, hint, base.ERROR, wall, "", f"solver failed: {why}"), False
    )
