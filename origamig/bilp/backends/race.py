"""Races of solver helpers (`race_in_children`): the same solve sent to one helper per solver at once,
the answers collected until one settles the race or the deadline passes, and an entrant per solver
(the start, for a helper ended or failed)."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as connection_wait
from typing import TYPE_CHECKING

import numpy as np

from origamig.bilp.backends import base
from origamig.bilp.backends.helper_pool import HOSTS, Host

if TYPE_CHECKING:
    from origamig.bilp.compile import Compiled

KILL_GRACE_S = 0.3  # the caller ends the helper this long after the deadline if no answer came


def _portable(compiled: Compiled) -> Compiled:
    """`compiled` as a helper gets it: without its Pyomo columns (the solve does not read them)."""
    try:
        return dataclasses.replace(compiled, columns=())
    except TypeError:  # a standard form without Pyomo columns travels as it is
        return compiled


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
    hosts: list[Host | None]
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
    hosts: list[Host | None] = []
    failures: list[str] = []
    for name, _ in runs:
        with contextlib.suppress(OSError):  # `take` below tries again and reports it
            HOSTS.prepare(name)
    for name, _ in runs:
        try:
            hosts.append(HOSTS.take(name))
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
                HOSTS.give_back(host)
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
                HOSTS.prepare(runs[i][0])
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
