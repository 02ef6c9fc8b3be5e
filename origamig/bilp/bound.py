"""A safe upper bound on a region's optimum from its LP relaxation, and the "no change" proof it gives.

Most calls of a long simulation end with nothing to change, and proving that costs a full MIP solve.
Before the MIP, `no_change_proof` solves the LP relaxation of the compiled model (the same rows and
cuts, integrality dropped) and turns its row duals π into a bound that holds whatever their accuracy
(weak Lagrangian duality): for every x with lo ≤ A x ≤ hi inside the column bounds,

    c·x ≤ Σ_r π_r·side_r + max over the column box of (c − Aᵀπ)·x,   side_r = hi_r if π_r > 0 else lo_r,

so the bound is computed from π by one matrix product, never trusted from the LP solver's report.
The objective values of integer solutions are multiples of `Compiled.objective_step`; when the bound
is below the current placement's value plus one step, no placement is strictly better than the
current one and the call's answer is the current placement, proved optimal. See
docs/model.md#no-change-proof.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from origamig.bilp.backends import base

if TYPE_CHECKING:
    from origamig.bilp.compile import Compiled

# A bound must fall this far (relative to the objective) below the next better objective value:
# covers the rounding of the bound's own float sums, never the accuracy of the LP solver.
_MARGIN = 1e-9
# With a wall-clock limit the LP may spend at most this share of it (the MIP gets the rest).
_LP_SHARE_OF_LIMIT = 0.25


@dataclass(frozen=True)
class NoChangeProof:
    """The LP bound of one region model against its current placement."""

    bound: float  # proved upper bound on the optimum (inf when the LP gave none)
    start: float  # objective of the current placement (the start)
    proved: bool  # bound < start + one objective step: nothing is strictly better than the start
    wall_s: float
    work: float  # HiGHS work units of the LP (thousands of simplex iterations)
    lp_x: np.ndarray | None = field(default=None, repr=False, compare=False)  # the LP's column values

    @property
    def modeled_s(self) -> float:
        """The LP's load-independent duration (HiGHS's seconds per work unit)."""
        from origamig.bilp.backends.highs import HighsBackend

        return self.work * HighsBackend.seconds_per_work

    def as_result(self, solver: str, compiled: Compiled) -> base.SolveResult:
        """The start as the proved optimum (only when `proved`)."""
        if not self.proved:
            raise ValueError("the bound does not prove the start optimal")
        return base.SolveResult(
            solver=solver,
            termination=base.BOUND,
            solution_status=base.SOLUTION_OPTIMAL,
            objective=self.start,
            bound=self.start,
            wall_s=self.wall_s,
            x=compiled.hint.copy(),
        )


def lagrangian_bound(compiled: Compiled, duals: np.ndarray) -> float:
    """max c·x + offset over the model's rows and column bounds is at most this, for any `duals`."""
    return lagrangian_terms(compiled, duals)[0]


def lagrangian_terms(compiled: Compiled, duals: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """The Lagrangian bound of `duals`, the reduced costs c − Aᵀπ, and each column's term of the bound
    (its reduced cost times the column bound it is taken at). With column n held at a value v, the
    bound becomes `bound − term[n] + reduced[n]·v`: reduced-cost fixing that holds for any `duals`."""
    A = compiled.A
    pi = np.asarray(duals, dtype=float)
    side = np.where(pi > 0, compiled.row_hi, compiled.row_lo)
    usable = np.isfinite(side) & np.isfinite(pi)
    pi = np.where(usable, pi, 0.0)  # a multiplier on an unbounded side would prove nothing
    side = np.where(usable, side, 0.0)
    rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
    reduced = compiled.c - np.bincount(A.indices, weights=A.data * pi[rows], minlength=A.shape[1])
    end = np.where(reduced > 0, compiled.col_hi, compiled.col_lo)
    with np.errstate(invalid="ignore"):
        box = np.where(reduced == 0, 0.0, reduced * end)
    return float(pi @ side + np.sum(box) + compiled.offset), reduced, box


def _lp_signed(
    compiled: Compiled, duals: np.ndarray
) -> tuple[np.ndarray, tuple[float, np.ndarray, np.ndarray]]:
    """An LP's row duals as the multipliers of its bound, whichever their sign convention, with their
    `lagrangian_terms`: a solver's duals for a maximization come with either sign, both give a valid
    bound, and the smaller one is the LP's."""
    plus, minus = lagrangian_terms(compiled, duals), lagrangian_terms(compiled, -duals)
    return (duals, plus) if plus[0] <= minus[0] else (-duals, minus)


def lp_multipliers(compiled: Compiled, duals: np.ndarray) -> np.ndarray:
    """An LP's row duals, signed as the multipliers of its bound (`_lp_signed`)."""
    return _lp_signed(compiled, duals)[0]


def lp_terms(compiled: Compiled, duals: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """`lagrangian_terms` of an LP's row duals, signed as the multipliers of its bound (`_lp_signed`)."""
    return _lp_signed(compiled, duals)[1]


def lp_duals(compiled: Compiled, time_limit_s: float | None) -> tuple[np.ndarray | None, float]:
    """Row duals of the LP relaxation (HiGHS simplex, one thread), or None if it was not solved (or
    highspy is not installed: then no proof, every call goes to its solver); and the work spent
    (thousands of simplex iterations)."""
    duals, _, work = lp_solution(compiled, time_limit_s)
    return duals, work


def lp_solution(
    compiled: Compiled, time_limit_s: float | None
) -> tuple[np.ndarray | None, np.ndarray | None, float]:
    """`lp_duals` with the LP's column values as well (None with the duals)."""
    try:
        import highspy
    except ImportError:
        return None, None, 0.0

    from origamig.bilp.backends.highs import ITERATIONS_PER_WORK_UNIT, highs_lp, new_highs

    h = new_highs(highspy)
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("random_seed", 0)
    h.setOptionValue("presolve", "off")  # on these LPs presolve costs more than it saves (half the time)
    if time_limit_s is not None:
        h.setOptionValue("time_limit", float(time_limit_s))
    h.passModel(highs_lp(highspy, compiled, relaxed=True))
    h.run()
    work = max(0, h.getInfo().simplex_iteration_count) / ITERATIONS_PER_WORK_UNIT
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None, None, work
    solution = h.getSolution()
    return np.asarray(solution.row_dual, dtype=float), np.asarray(solution.col_value, dtype=float), work


def no_change_proof(compiled: Compiled, limits: base.Limits) -> NoChangeProof:
    """Whether the LP bound proves that no placement beats the current one by an objective step.

    In a deterministic solve the LP runs without a clock (its result cannot depend on the load);
    with a wall-clock limit it gets a share of it, and a timed-out LP proves nothing."""
    t0 = time.perf_counter()
    start = compiled.objective_of(compiled.hint)
    wall = limits.wall_limit_s
    duals, lp_x, work = lp_solution(compiled, None if wall is None else _LP_SHARE_OF_LIMIT * wall)
    bound = np.inf
    if duals is not None:
        bound = lp_terms(compiled, duals)[0]
    step = compiled.objective_step
    proved = step > 0 and bound < start + step - _MARGIN * max(1.0, abs(start))
    return NoChangeProof(bound, start, proved, time.perf_counter() - t0, work, lp_x)
