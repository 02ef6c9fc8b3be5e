"""The last resort of a wall-clock limit: solve in a child process and end it at the deadline.

In the solver's own process a limit is held by the solver's time limit and by a guard that cancels
it through its interrupt callbacks. Neither reaches every phase: HiGHS checks no clock and calls no
callback inside parts of MIP presolve, probing and the root set-up, which on a model of 170k columns
under load ran for minutes past a 10 s limit. So a solve with a wall-clock limit runs in a child
process, and the parent ends the child at the deadline; the answer is then the always-feasible
start, with `guard = GUARD_KILLED`.

On Linux the child is forked: it starts in about a millisecond with the model already in memory
(nothing is copied or pickled on the way in), and only its `SolveResult` is sent back. A forked
child has no thread but the one that forked; HiGHS's task scheduler then runs every task on that
thread, and CP-SAT starts its own workers per solve. Elsewhere the child is spawned (it imports the
solvers and receives the numeric standard form; slower to start, the same guarantee). The child
gets the remaining time as its own limit, less a margin to send its answer back, so the kill is for
the cases where the solver would not have stopped anyway.

A deterministic solve has no wall-clock limit (its result must not depend on the machine's load);
it runs here too, ended only by the safety net (`Limits.safety_net_s`, minutes), so that a solver
phase that never ends cannot stall a simulation. Its child gets no time limit of its own.
"""

from __future__ import annotations

import dataclasses
import gc
import multiprocessing
import os
import sys
import time
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

import numpy as np

from origamig.bilp.backends import base

if TYPE_CHECKING:
    from origamig.bilp.compile import Compiled

KILL_GRACE_S = 0.3  # the parent ends the child this long after the deadline if no answer came
SEND_MARGIN_S = 0.1  # the child stops this long before the deadline, to send its answer in time
JOIN_WAIT_S = 0.05  # how long the parent waits for an ended child to exit before returning


def _mp_context() -> Any:
    return multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")


def _for_child(ctx: Any, compiled: Compiled) -> Compiled:
    """`compiled` as a child gets it: as it is when forked, without its Pyomo columns when pickled."""
    if ctx.get_start_method() == "fork":
        return compiled
    try:
        return dataclasses.replace(compiled, columns=())
    except TypeError:  # a standard form without Pyomo columns travels as it is
        return compiled


def solve_in_child(
    backend_name: str, compiled: Compiled, hint: np.ndarray, limits: base.Limits, started: float
) -> base.SolveResult:
    """Solve in a child process; at `started + limits.kill_after_s` (perf_counter) plus a short
    grace, end it and answer with the start. A child that dies answers the same way, as an ERROR."""
    assert limits.kill_after_s is not None
    collecting = gc.isenabled()
    gc.disable()  # a full collection over a large Pyomo model in the parent can take seconds
    try:
        return _solve_in_child(backend_name, compiled, hint, limits, started)
    finally:
        if collecting:
            gc.enable()


def _solve_in_child(
    backend_name: str, compiled: Compiled, hint: np.ndarray, limits: base.Limits, started: float
) -> base.SolveResult:
    limit = limits.kill_after_s
    assert limit is not None
    deadline = started + limit
    ctx = _mp_context()
    receive, send = ctx.Pipe(duplex=False)
    epoch_deadline = time.time() + (deadline - time.perf_counter())
    child_limits = dataclasses.replace(limits, kill_at_deadline=False)
    process = ctx.Process(
        target=_child,
        args=(send, backend_name, _for_child(ctx, compiled), hint, child_limits, epoch_deadline),
        daemon=True,
    )
    answer: Any = None
    try:
        process.start()
        send.close()
        if receive.poll(max(0.0, deadline + KILL_GRACE_S - time.perf_counter())):
            answer = receive.recv()
    except (EOFError, OSError) as exc:  # the child died before answering
        answer = ("died", f"{exc.__class__.__name__}: {exc}")
    finally:
        if process.is_alive():
            process.kill()  # SIGKILL: nothing in the child can delay it
        process.join(timeout=JOIN_WAIT_S)  # a large child takes a moment to exit; it is reaped later
        receive.close()
    wall = time.perf_counter() - started
    if isinstance(answer, base.SolveResult):
        return dataclasses.replace(answer, wall_s=wall)
    if answer is None:
        return base.start_result(
            backend_name,
            compiled,
            hint,
            base.INTERRUPTED,
            wall,
            base.GUARD_KILLED,
            f"no answer {limit:g} s into the solve: the solver process was ended"
            + ("" if limits.wall_limit_s is not None else " (the safety net of a deterministic solve)"),
        )
    _, why = answer if isinstance(answer, tuple) else ("error", repr(answer))
    process.join(timeout=1.0)  # a child that failed: its exit status tells how
    code = process.exitcode
    if code is not None and code < 0:
        why = f"{why}; solver process ended by signal {-code}"
    return base.start_result(backend_name, compiled, hint, base.ERROR, wall, "", f"solver failed: {why}")


def _child(
    send: Connection,
    backend_name: str,
    compiled: Compiled,
    hint: np.ndarray,
    limits: base.Limits,
    epoch_deadline: float,
) -> None:
    """In the child: solve within what is left of the time, send the SolveResult (or the error)."""
    with open(os.devnull, "wb") as null:  # native solver banners must not reach the parent's stdout
        os.dup2(null.fileno(), 1)
    remaining = max(0.01, epoch_deadline - time.time() - SEND_MARGIN_S)
    try:
        backend = base.get_backend(backend_name)
        answer: Any = backend.solve_in_process(
            compiled, hint, dataclasses.replace(limits, time_limit_s=remaining)
        )
    except Exception as exc:  # reported to the parent as the solver's error
        answer = ("error", f"{exc.__class__.__name__}: {exc}")
    try:
        send.send(answer)
    finally:
        send.close()
