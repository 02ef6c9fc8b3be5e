"""The backend Protocol, the frozen `Limits` record, `SolveResult`, and the registry of solvers.

A backend solves a `Compiled` standard form from a complete start vector (the current placement)
within `Limits`. Adding a solver touches one file plus one line in `solver_registry.py`: the class has a
`name`, a `features` set, `available()` returning None or the reason it cannot run, and imports its
vendor package lazily.
"""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from origamig.errors import UserError, require_extra
from origamig.solver_registry import BACKEND_MODULES, NOT_DETERMINISTIC

if TYPE_CHECKING:
    from origamig.bilp.compile import Compiled


class Termination(StrEnum):
    """Why the solver stopped (the `termination` of the solve document)."""

    OPTIMAL = "optimal"
    TIME_LIMIT = "time_limit"
    WORK_LIMIT = "work_limit"
    GAP_LIMIT = "gap_limit"
    INTERRUPTED = "interrupted"  # the wall-clock guard cancelled the solve
    BOUND = "bound"  # not solved: the LP bound proved the start optimal first (`bilp/bound.py`)
    INFEASIBLE = "infeasible"
    ERROR = "error"


class Feature(StrEnum):
    """What a backend can do beyond solving (its `features`; the conformance tests pick backends by them)."""

    MIP_START = "mip_start"  # takes the start as a MIP start (an incumbent from the first node)
    HINT = "hint"  # takes the start as a search hint
    WORK_LIMIT = "work_limit"  # stops on a deterministic work budget: the same answer on any machine
    DETERMINISTIC_TIME = "deterministic_time"  # its work is the solver's own deterministic time
    WALL_CLOCK_GUARD = "wall_clock_guard"  # a solve past its wall-clock limit is cancelled from outside
    FIRST_PROOF_WINS = "first_proof_wins"  # several solvers race; the first proof is the answer


class Guard(StrEnum):
    """How a wall-clock limit was enforced when the solver did not stop by itself."""

    NONE = ""
    CANCEL = "cancelled"
    KILLED = "killed"


class SolutionStatus(StrEnum):
    """What the solve has."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    NONE = "none"


# The short names the backends use for the members.
OPTIMAL = Termination.OPTIMAL
TIME_LIMIT = Termination.TIME_LIMIT
WORK_LIMIT = Termination.WORK_LIMIT
GAP_LIMIT = Termination.GAP_LIMIT
INTERRUPTED = Termination.INTERRUPTED
BOUND = Termination.BOUND
INFEASIBLE = Termination.INFEASIBLE
ERROR = Termination.ERROR
GUARD_CANCEL = Guard.CANCEL
GUARD_KILLED = Guard.KILLED
SOLUTION_OPTIMAL = SolutionStatus.OPTIMAL
SOLUTION_FEASIBLE = SolutionStatus.FEASIBLE
SOLUTION_NONE = SolutionStatus.NONE
# A deterministic solve has no wall-clock limit, yet a solver phase that consults neither the work
# budget nor an interrupt can run without end: HiGHS 1.16's MIP presolve, after a restart, sat over
# 40 minutes in one 16-PM call that ends in 21 s with restarts off. Such a solve runs in a helper
# process that is ended after this long (the answer is then the start: nothing moves). A run in which
# no call reaches the net gives exactly the results it gave before the net existed.
SAFETY_NET_S = 300.0


@dataclass(frozen=True)
class Limits:
    """What a solve may spend. `deterministic` = fixed threads (1 unless given) and no wall-clock
    effect on the result: only `work_limit` (in the backend's work units) stops it early."""

    time_limit_s: float | None = 10.0
    threads: int | None = None  # None: all cores
    deterministic: bool = False
    work_limit: float | None = None
    # HiGHS only, deterministic solves: the most progress checks (the MIP interrupt callbacks HiGHS
    # makes at fixed points of its search: a count that does not depend on the machine) a solve may
    # take, beside `work_limit`'s node budget; None: the node budget alone.
    effort_limit: int | None = None
    gap: float = 0.0  # relative gap at which to stop (0: prove optimal)
    # With a wall-clock limit, solve in a helper process that is ended at the deadline (deadline.py):
    # the only way to hold the limit through solver phases that check no clock or interrupt.
    kill_at_deadline: bool = True
    # Deterministic solves only: the wall-clock time after which the solve's process is ended.
    safety_net_s: float | None = SAFETY_NET_S

    @property
    def wall_limit_s(self) -> float | None:
        """The wall-clock limit the backends enforce: none in deterministic mode with a work budget,
        so that the machine's load cannot change the result; otherwise `time_limit_s`."""
        return None if self.budget_only else self.time_limit_s

    @property
    def budget_only(self) -> bool:
        """Deterministic with a work budget: the solver itself never sees a clock."""
        return self.deterministic and self.work_limit is not None

    @property
    def kill_after_s(self) -> float | None:
        """When the solve's process is ended if it has not answered: the wall-clock limit, or in
        deterministic mode (which has none) the safety net."""
        return self.safety_net_s if self.budget_only else self.time_limit_s

    def less(self, spent_s: float) -> Limits:
        """These limits with `spent_s` taken off the wall-clock limit (a deterministic budget, which
        has none, is untouched)."""
        wall = self.wall_limit_s
        if wall is None or spent_s <= 0:
            return self
        return replace(self, time_limit_s=max(0.0, wall - spent_s))

    def until(self, deadline: float | None) -> Limits:
        """These limits cut so that the solve ends by `deadline` (a `time.perf_counter()` instant;
        None: no deadline). A deterministic budget, which consults no clock, is untouched."""
        wall = self.wall_limit_s
        if deadline is None or self.budget_only:
            return self
        left = max(0.0, deadline - time.perf_counter())
        return self if wall is not None and wall <= left else replace(self, time_limit_s=left)

    def thread_count(self) -> int:
        if self.threads is not None:
            return max(1, self.threads)
        return 1 if self.deterministic else max(1, os.cpu_count() or 1)


@dataclass(frozen=True, eq=False)
class SolveResult:
    """Why the solve stopped (`termination`) apart from what it has (`solution_status`)."""

    solver: str
    termination: Termination
    solution_status: SolutionStatus
    objective: float | None  # the incumbent's objective (maximize)
    bound: float | None  # proved upper bound
    wall_s: float
    work: float = 0.0  # deterministic work spent: CP-SAT deterministic s; HiGHS 1000s of simplex iterations
    x: np.ndarray | None = field(default=None, repr=False)
    # How the wall-clock limit was enforced: "" (the solver stopped by itself), GUARD_CANCEL (the
    # in-process guard interrupted it) or GUARD_KILLED (its helper process was ended at the deadline).
    guard: Guard = Guard.NONE
    reason: str = ""  # why, for ERROR (the solver's status or exception) and GUARD_KILLED
    winner: str = ""  # a portfolio's answer: the solver whose answer it took ("" for one solver)

    @property
    def proved_optimal(self) -> bool:
        return self.solution_status == SOLUTION_OPTIMAL

    @property
    def gap(self) -> float | None:
        """Relative gap (bound − objective) / max(1, |objective|); 0 when proved optimal."""
        if self.objective is None or self.bound is None:
            return None
        return max(0.0, self.bound - self.objective) / max(1.0, abs(self.objective))

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.solver,
            "termination": self.termination,
            "solution_status": self.solution_status,
            "proved_optimal": self.proved_optimal,
            "objective": self.objective,
            "bound": self.bound,
            "gap": self.gap,
            "wall_s": self.wall_s,
            "work": self.work,
            "guard": self.guard,
            "reason": self.reason,
            "winner": self.winner,
        }


@dataclass(frozen=True)
class HelperFailed:
    """A solver helper's answer that is not a result: its solver raised (`died` false: the helper
    lives on and serves the next solve), or the helper died before answering."""

    why: str
    died: bool = False


# What a solver helper answers (`solver_host.py`; read by `race.py`).
HelperAnswer = SolveResult | HelperFailed


# The caller's own work during a solve (`Backend.solve`): a result it returns is the solve's answer.
Meanwhile = Callable[[], SolveResult | None]


class Once:
    """Tasks done at most once, in order, the first time this is called: work a one-shot caller needs
    later anyway (a command's imports for planning and printing), handed to its solves to do while a
    solver works (`then`). A task that raises is not done again."""

    def __init__(self, tasks: Sequence[Callable[[], object]]) -> None:
        self._tasks = list(tasks)

    def __call__(self) -> None:
        while self._tasks:
            self._tasks.pop(0)()


def then(meanwhile: Meanwhile | None, work: Callable[[], object] | None) -> Meanwhile | None:
    """`meanwhile`, and when it gives no answer, `work` (whose return is not an answer)."""
    if work is None:
        return meanwhile

    def both() -> SolveResult | None:
        early = meanwhile() if meanwhile is not None else None
        if early is None:
            work()
        return early

    return both


def one_line(text: str, limit: int = 240) -> str:
    """`text` (a solver's message) on one line, at most `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def start_result(
    solver: str,
    compiled: Compiled,
    hint: np.ndarray,
    termination: Termination,
    wall_s: float,
    guard: Guard | str,  # a member or its spelling ("" for none)
    reason: str,
) -> SolveResult:
    """The always-feasible start as the answer of a solve that produced nothing usable."""
    objective = compiled.objective_of(hint)
    return SolveResult(
        solver=solver,
        termination=termination,
        solution_status=SOLUTION_FEASIBLE,
        objective=objective,
        bound=max(objective, compiled.trivial_bound()),
        wall_s=wall_s,
        x=hint.copy(),
        guard=Guard(guard),
        reason=one_line(reason),
    )


class Backend(Protocol):
    """A MIP solver behind one call. `hint` is a complete feasible start (the current placement)."""

    name: str
    optional: tuple[str, str] | None  # (vendor module, pip extra) of an optional solver
    features: frozenset[Feature]
    seconds_per_work: float  # wall seconds per unit of `SolveResult.work` on one idle core
    default_work_limit: float  # work budget of a deterministic solve when the caller gives none
    helper_backends: tuple[str, ...]  # the solvers whose helper processes a limited solve uses

    @classmethod
    def available(cls) -> str | None: ...

    def solve(
        self, compiled: Compiled, hint: np.ndarray, limits: Limits, meanwhile: Meanwhile | None = None
    ) -> SolveResult:
        """Solve within `limits`. `meanwhile` is the caller's own work, done while a helper process
        solves (or first, when the solve runs here); a result it returns is the answer."""
        ...

    def solve_in_process(self, compiled: Compiled, hint: np.ndarray, limits: Limits) -> SolveResult:
        """The solve in the calling process (`solve` sends it to a helper process when limited)."""
        ...


def errors_as_result(backend: Any, compiled: Compiled, hint: np.ndarray, limits: Limits) -> SolveResult:
    """`backend.solve_in_process(...)`, an exception of the solver (a value it cannot represent, say)
    becoming an ERROR result with the start and the exception as its reason."""
    t0 = time.perf_counter()
    try:
        return backend.solve_in_process(compiled, hint, limits)
    except (ValueError, OverflowError, RuntimeError, MemoryError) as exc:
        why = f"solver failed: {exc.__class__.__name__}: {exc}"
        return start_result(backend.name, compiled, hint, ERROR, time.perf_counter() - t0, Guard.NONE, why)


def proof_tolerance(compiled: Compiled, objective: float) -> float:
    """How far a bound may sit above `objective` for the objective to count as proved optimal: just
    under the model's objective step (no better placement is closer), or a relative 1e-6."""
    return max(0.999 * compiled.objective_step, 1e-6 * max(1.0, abs(objective)))


def get_backend_class(name: str) -> Any:
    """The class of the backend called `name` (its module imported, no vendor package); `ValueError`
    naming the choices if unknown."""
    if name not in BACKEND_MODULES:
        raise ValueError(f"unknown solver {name!r} (choose from {', '.join(BACKEND_MODULES)})")
    return importlib.import_module(BACKEND_MODULES[name]).BACKEND


def get_backend(name: str) -> Backend:
    """An instance of the backend called `name`; `ValueError` naming the choices if unknown,
    `MissingExtra` naming the pip extra if its solver is an optional dependency not installed."""
    backend: Backend = get_backend_class(name)()
    if backend.optional is not None:
        vendor, extra = backend.optional
        require_extra(vendor, extra, f"--solver {name}")
    return backend


def available() -> dict[str, str | None]:
    """Every registered backend → None if usable, else the reason it is not."""
    out: dict[str, str | None] = {}
    for name, path in BACKEND_MODULES.items():
        try:
            module = importlib.import_module(path)
        except ImportError as err:  # the backend module itself imports no vendor package eagerly
            out[name] = f"cannot import {path}: {err}"
            continue
        out[name] = module.BACKEND.available()
    return out


def make_limits(
    solver: str,
    time_limit_s: float | None = 10.0,
    threads: int | None = None,
    deterministic: bool = False,
    work_limit: float | None = None,
    safety_net_s: float | None = SAFETY_NET_S,
    effort_limit: int | None = None,
) -> Limits:
    """`Limits` for `solver`; a deterministic solve without a work budget gets the backend's default,
    so that its result never depends on the wall clock (only `safety_net_s` can end it)."""
    if deterministic and solver in NOT_DETERMINISTIC:
        raise UserError(
            f"--solver {solver}: cannot solve deterministically (a deterministic solve names one solver)"
        )
    if deterministic and work_limit is None:
        work_limit = get_backend(solver).default_work_limit
    return Limits(
        time_limit_s=time_limit_s,
        threads=threads,
        deterministic=deterministic,
        work_limit=work_limit,
        safety_net_s=safety_net_s,
        effort_limit=effort_limit if deterministic else None,
    )
