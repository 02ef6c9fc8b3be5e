"""A portfolio of HiGHS and CP-SAT: both solve the same model at once, the first proof wins.

Each solver runs in its own helper process (`race.race_in_children`): HiGHS on one thread,
CP-SAT on the rest of the threads asked for (at least one, so at least two in all). The first
answer proved optimal is the answer, and the other solver's process is ended at once (a new helper
replaces it on the next solve). When neither proves within the limit, the answer is the better of
the two incumbents with the tighter of the two bounds (each is a valid upper bound), proved when
they meet. The two solvers complement each other: on hard neighborhoods one often proves well before
the other (docs/bilp.md#portfolio).

A race is decided by the wall clock, so the portfolio cannot solve deterministically; a
deterministic run names one solver.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from origamig.bilp.backends import base, deadline, race

if TYPE_CHECKING:
    from origamig.bilp.compile import Compiled

MEMBERS = ("highs", "cpsat")  # the racing solvers, HiGHS first (it gets one thread)


class PortfolioBackend:
    """HiGHS and CP-SAT racing in two helper processes."""

    name = "portfolio"
    optional: ClassVar[tuple[str, str] | None] = ("ortools.sat.python.cp_model", "cpsat")
    features: ClassVar[frozenset[base.Feature]] = frozenset(
        {
            base.Feature.MIP_START,
            base.Feature.HINT,
            base.Feature.WALL_CLOCK_GUARD,
            base.Feature.FIRST_PROOF_WINS,
        }
    )
    # The reported work is the winner's, converted to its seconds on one idle core.
    seconds_per_work: ClassVar[float] = 1.0
    default_work_limit: ClassVar[float] = 0.0  # never used: the portfolio has no deterministic mode
    helper_backends: ClassVar[tuple[str, ...]] = MEMBERS

    @classmethod
    def available(cls) -> str | None:
        for name in MEMBERS:
            why = base.get_backend_class(name).available()
            if why is not None:
                return why
        return None

    def solve(
        self,
        compiled: Compiled,
        hint: np.ndarray,
        limits: base.Limits,
        meanwhile: base.Meanwhile | None = None,
    ) -> base.SolveResult:
        """Race HiGHS and CP-SAT within `limits` (wall clock); the first proof wins. An answer of
        `meanwhile` (done while they race) ends the race and is the answer."""
        if limits.deterministic:
            raise ValueError("the portfolio races on the wall clock and cannot solve deterministically")
        if os.name != "posix":  # no helper processes: HiGHS alone, in this process
            return deadline.solve_limited(base.get_backend("highs"), compiled, hint, limits, meanwhile)
        started = time.perf_counter()
        total = max(len(MEMBERS), limits.thread_count())
        runs = [
            (MEMBERS[0], dataclasses.replace(limits, threads=1)),
            (MEMBERS[1], dataclasses.replace(limits, threads=total - 1)),
        ]
        entrants = race.race_in_children(
            runs, compiled, hint, limits.time_limit_s, started, _settles, meanwhile
        )
        if len(entrants) > len(runs):  # `meanwhile` answered
            return dataclasses.replace(entrants[-1].result, solver=self.name, winner="")
        return combine(entrants, compiled, hint)

    def solve_in_process(self, compiled: Compiled, hint: np.ndarray, limits: base.Limits) -> base.SolveResult:
        """HiGHS alone in this process (a race needs helper processes)."""
        return base.get_backend(MEMBERS[0]).solve_in_process(compiled, hint, limits)


def _settles(result: base.SolveResult) -> bool:
    return result.proved_optimal or result.termination == base.INFEASIBLE


def _incumbent_rank(result: base.SolveResult) -> tuple[float, float]:
    """Better objective first, then the earlier answer."""
    return (result.objective if result.objective is not None else -np.inf, -result.wall_s)


def combine(entrants: list[race.Entrant], compiled: Compiled, hint: np.ndarray) -> base.SolveResult:
    """One answer from the racers': the first proof, else the best incumbent under the tightest bound.
    Its wall time runs to the last answer taken into account (from when both helpers were ready)."""
    answered = [e.result for e in entrants if e.answered]
    if not answered:  # every helper failed or was ended: the start, with the first one's reason
        return dataclasses.replace(entrants[0].result, solver=PortfolioBackend.name, winner="")
    proved = sorted((r for r in answered if _settles(r)), key=lambda r: r.wall_s)
    best = proved[0] if proved else max(answered, key=_incumbent_rank)
    work = best.work * base.get_backend_class(best.solver).seconds_per_work
    if proved:
        return dataclasses.replace(best, solver=PortfolioBackend.name, winner=best.solver, work=work)
    bounds = [r.bound for r in answered if r.bound is not None]
    objective = best.objective if best.objective is not None else compiled.objective_of(hint)
    bound = max(objective, min(bounds)) if bounds else compiled.trivial_bound()
    meets = bound - objective <= base.proof_tolerance(compiled, objective)
    return dataclasses.replace(
        best,
        solver=PortfolioBackend.name,
        winner=best.solver,
        work=work,
        wall_s=max(r.wall_s for r in answered),
        bound=objective if meets else bound,
        termination=base.OPTIMAL if meets else best.termination,
        solution_status=base.SOLUTION_OPTIMAL if meets else best.solution_status,
    )


BACKEND = PortfolioBackend
