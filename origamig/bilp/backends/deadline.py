"""The last resort of a wall-clock limit: solve in a helper process and end it at the deadline.

In the solver's own process a limit is held by the solver's time limit and by a guard that cancels
it through its interrupt callbacks. Neither reaches every phase: HiGHS checks no clock and calls no
callback inside parts of MIP presolve, probing and the root set-up, which on a model of 170k columns
under load ran for minutes past a 10 s limit. So a solve with a wall-clock limit runs in a helper
process, and the caller ends that process at the deadline; the answer is then the always-feasible
start, with `guard = GUARD_KILLED`.

The helpers are long-lived, one solver each (`helper_pool.py`; the process itself is
`solver_host.py`), and a solve is a race of one helper or more (`race.py`). A helper gets the
remaining time as its own limit, less a margin to send its answer back, so the kill is for the
cases where the solver would not have stopped anyway. Helpers need POSIX pipes; elsewhere the solve
runs in the calling process, its limit held by the solver and its guard alone.

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

import os
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from origamig.bilp.backends import base
from origamig.bilp.backends.race import race_in_children

if TYPE_CHECKING:
    from origamig.bilp.compile import Compiled


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
