"""HiGHS (highspy) backend: the standard form passed row-wise, the current placement as MIP start.

HiGHS does not enforce `time_limit` inside MIP presolve, so the solve runs in highspy's solver
thread and a wall-clock guard cancels it (`HandleUserInterrupt`, `startSolve`, `wait`,
`cancelSolve`) when the limit passes; the incumbent — at least the start — is kept. Some phases
(presolve, probing, symmetry detection) see neither clock nor interrupt: they are skipped when they
would take most of the time, and a solve with a wall-clock limit runs in a helper process that is
ended at the deadline (`deadline.py`).
Work reported: thousands of simplex iterations (deterministic on one thread and, unlike nodes,
roughly proportional to time). HiGHS has no iteration budget for a MIP, and highspy 1.16's MIP
callbacks do not see the iteration count, so `Limits.work_limit` is applied as a node limit
(`mip_max_nodes`) — a different unit from the work reported.
HiGHS is deterministic for a fixed thread count; its thread pool is process-global, so a change of
thread count resets the scheduler.
Presolve runs without probing (`presolve_rule_off`, bit 15): on these models probing took ~90% of
presolve (0.25–0.6 s on 1–3k columns) and did not pay for itself; without it calls prove in about
half the time (benchmarks/solver/solvers.py, README "Solver benchmark").
A solve with a wall-clock limit also skips HiGHS's root reduced-cost heuristic (a sub-MIP run once
at the root): on the 60 recorded 128-PM calls, solved to proof, it took a quarter of the CPU time
(158.6 → 119.6 s, the same optima; benchmarks/results/highs_options-rrc.json) and on 16-PM
neighborhoods half of the median time. A deterministic solve with an effort budget (`_EffortBudget`,
every simulation's call) skips it too and runs without restarts: both repeat root work the budget
would pay twice. A deterministic solve without one keeps HiGHS's defaults (docs/bilp.md).
"""

from __future__ import annotations

import math
import os
import sys
import time
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from origamig.bilp.backends import base, deadline

if TYPE_CHECKING:
    from origamig.bilp.compile import Compiled

_GUARD_GRACE_S = 0.05  # cancel this long after the limit if HiGHS has not stopped by itself
# Presolve + symmetry detection of the H100 stress model (436k nonzeros): 4.5-6 s under load.
PRESOLVE_S_PER_NONZERO = 1e-5
ITERATIONS_PER_WORK_UNIT = 1000
_PRESOLVE_PROBING = 1 << 15  # HiGHS presolve rule 15 (probing), as a `presolve_rule_off` bit
_threads_in_use: list[int] = []
_banner_done: list[bool] = []


class HighsBackend(deadline.SolvesInHelper):
    """HiGHS branch-and-cut via highspy."""

    name = "highs"
    optional: ClassVar[tuple[str, str] | None] = None  # highspy is a core dependency
    features: ClassVar[frozenset[base.Feature]] = frozenset(
        {base.Feature.MIP_START, base.Feature.WALL_CLOCK_GUARD, base.Feature.WORK_LIMIT}
    )
    # Wall seconds per unit of reported work on one idle core, for the load-independent call
    # time of deterministic simulations: one unit (1000 simplex iterations) took 0.5-0.6 s of CPU
    # on 16-PM neighborhoods with presolve probing on; without probing 0.7x that per instance
    # (median over 10 neighborhoods, both forms side by side: benchmarks/solver/solvers.py).
    seconds_per_work: ClassVar[float] = 0.4
    # Work budget of a deterministic solve when the caller gives none (branch-and-bound nodes).
    default_work_limit: ClassVar[float] = 1000.0
    helper_backends: ClassVar[tuple[str, ...]] = ("highs",)

    @classmethod
    def available(cls) -> str | None:
        try:
            import highspy  # noqa: F401
        except ImportError as err:
            return f"highspy is not installed ({err})"
        return None

    def solve_in_process(self, compiled: Compiled, hint: np.ndarray, limits: base.Limits) -> base.SolveResult:
        """Solve here, the wall-clock limit held by HiGHS's time limit and the cancelling guard."""
        import highspy

        t0 = time.perf_counter()
        h, interrupted, spent = self._run(highspy, compiled, hint, limits, t0)
        if _stale(h, compiled):
            # HiGHS 1.16 quirk: when presolve alone solves the MIP, getSolution() still returns the
            # MIP start. Such models are tiny: solve again without the start.
            h, interrupted, spent = self._run(highspy, compiled, None, limits, t0)
        return self._result(h, compiled, hint, interrupted, time.perf_counter() - t0, spent)

    def _run(
        self, highspy: Any, compiled: Compiled, hint: np.ndarray | None, limits: base.Limits, t0: float
    ) -> tuple[Any, bool, bool]:
        """One guarded HiGHS run; returns (solver, whether the wall-clock guard cancelled it, whether
        the effort budget stopped it)."""
        h = new_highs(highspy)
        self._apply_limits(h, compiled, limits)
        h.passModel(highs_lp(highspy, compiled))
        if hint is not None:
            start = highspy.HighsSolution()
            start.col_value = list(map(float, hint))
            start.value_valid = True
            h.setSolution(start)
        budget = _EffortBudget.on(h, limits)
        h.HandleUserInterrupt = True
        h.startSolve()
        interrupted = False
        if limits.wall_limit_s is None:
            h.wait()
        else:
            done, _ = h.wait(max(0.0, limits.wall_limit_s - (time.perf_counter() - t0)) + _GUARD_GRACE_S)
            if not done:
                interrupted = True
                h.cancelSolve()
                h.wait()
        return h, interrupted, budget is not None and budget.exhausted

    def _apply_limits(self, h: Any, compiled: Compiled, limits: base.Limits) -> None:
        threads = limits.thread_count()
        if _threads_in_use and _threads_in_use[0] != threads:
            h.resetGlobalScheduler(True)
        _threads_in_use[:] = [threads]
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", threads)
        h.setOptionValue("random_seed", 0)
        h.setOptionValue("presolve_rule_off", _PRESOLVE_PROBING)
        budgeted = limits.deterministic and limits.effort_limit is not None
        if not limits.deterministic or budgeted:  # see the module's docstring
            h.setOptionValue("mip_heuristic_run_root_reduced_cost", False)
        if budgeted:  # a restart repeats the root's work: with a budget, it spends the budget again
            h.setOptionValue("mip_allow_restart", False)
        if limits.wall_limit_s is not None:
            h.setOptionValue("time_limit", float(limits.wall_limit_s))
            if compiled.size["nonzeros"] * PRESOLVE_S_PER_NONZERO > 0.5 * limits.wall_limit_s:
                # Presolve and symmetry detection check no clock; when they would take most of the
                # time, skip them and go straight to the (interruptible) root LP and heuristics.
                h.setOptionValue("presolve", "off")
                h.setOptionValue("mip_detect_symmetry", False)
        if limits.work_limit is not None:
            h.setOptionValue("mip_max_nodes", max(1, math.ceil(limits.work_limit)))
        h.setOptionValue("mip_rel_gap", float(limits.gap))
        h.setOptionValue("mip_abs_gap", 0.999 * compiled.objective_step if compiled.objective_step else 1e-6)

    def _result(
        self,
        h: Any,
        compiled: Compiled,
        hint: np.ndarray,
        interrupted: bool,
        wall: float,
        spent: bool = False,
    ) -> base.SolveResult:
        import highspy

        status = h.getModelStatus()
        info = h.getInfo()
        x = np.asarray(h.getSolution().col_value, dtype=float) if info.primal_solution_status == 2 else None
        if x is None or len(x) != len(hint):
            x = None
        term = {
            highspy.HighsModelStatus.kOptimal: base.OPTIMAL,
            highspy.HighsModelStatus.kTimeLimit: base.TIME_LIMIT,
            highspy.HighsModelStatus.kSolutionLimit: base.WORK_LIMIT,
            highspy.HighsModelStatus.kInterrupt: base.INTERRUPTED,
            highspy.HighsModelStatus.kInfeasible: base.INFEASIBLE,
        }.get(status, base.ERROR)
        if interrupted:
            term = base.INTERRUPTED
        elif spent and term == base.INTERRUPTED:  # the effort budget stopped it: a work limit
            term = base.WORK_LIMIT
        reason = (
            f"HiGHS stopped with model status {h.modelStatusToString(status)}" if term == base.ERROR else ""
        )
        if x is None or compiled.objective_of(x) < compiled.objective_of(hint) - 1e-6:
            x = hint.copy()  # never return less than the always-feasible start
        objective = compiled.objective_of(x)
        if term == base.ERROR:  # nothing HiGHS reports after an error is trusted
            bound = compiled.trivial_bound()
        elif np.isfinite(info.mip_dual_bound):
            bound = float(info.mip_dual_bound)
        else:  # solved in presolve (no B&B bound) when optimal; otherwise stopped before having one
            bound = objective if term == base.OPTIMAL else compiled.trivial_bound()
        proved = term == base.OPTIMAL and bound - objective <= base.proof_tolerance(compiled, objective)
        bound = objective if proved else max(bound, objective)
        return base.SolveResult(
            solver=self.name,
            termination=term,
            solution_status=base.SOLUTION_OPTIMAL if proved else base.SOLUTION_FEASIBLE,
            objective=objective,
            bound=bound,
            wall_s=wall,
            work=max(0.0, float(info.simplex_iteration_count)) / ITERATIONS_PER_WORK_UNIT,
            x=x,
            guard=base.GUARD_CANCEL if interrupted else base.Guard.NONE,
            reason=reason,
        )


class _EffortBudget:
    """Stops a deterministic HiGHS solve after `Limits.effort_limit` progress checks: the MIP
    interrupt callbacks HiGHS makes at fixed points of its search (each cut round, heuristic, node),
    whose count, unlike its clock, is the same on any machine."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.checks = 0
        self.exhausted = False

    @classmethod
    def on(cls, h: Any, limits: base.Limits) -> _EffortBudget | None:
        """The budget of `limits` set on solver `h` (None when it has none)."""
        if limits.effort_limit is None or not limits.deterministic:
            return None
        budget = cls(limits.effort_limit)
        h.cbMipInterrupt += budget._check
        return budget

    def _check(self, event: Any) -> None:
        self.checks += 1
        if self.checks > self.limit:
            self.exhausted = True
            event.interrupt()


def new_highs(highspy: Any) -> Any:
    """A Highs instance. The first one in a process prints a banner on the C-level stdout before any
    option can silence it (it would corrupt `--json` output), so that one is made with fd 1 muted."""
    if _banner_done:
        return highspy.Highs()
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
            h = highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    _banner_done.append(True)
    return h


def _stale(h: Any, compiled: Compiled) -> bool:
    """True when HiGHS reports an objective that its returned solution does not have."""
    info = h.getInfo()
    if info.primal_solution_status != 2:
        return False
    x = np.asarray(h.getSolution().col_value, dtype=float)
    reported = float(info.objective_function_value)
    return len(x) == len(compiled.c) and abs(compiled.objective_of(x) - reported) > base.proof_tolerance(
        compiled, reported
    )


def highs_lp(highspy: Any, compiled: Compiled, relaxed: bool = False) -> Any:
    """The compiled model as a HighsLp; `relaxed` drops integrality (the LP relaxation)."""
    A = compiled.A
    inf = highspy.kHighsInf
    lp = highspy.HighsLp()
    lp.num_col_ = A.shape[1]
    lp.num_row_ = A.shape[0]
    lp.sense_ = highspy.ObjSense.kMaximize
    lp.offset_ = compiled.offset
    lp.col_cost_ = compiled.c.astype(float)
    lp.col_lower_ = np.where(np.isfinite(compiled.col_lo), compiled.col_lo, -inf)
    lp.col_upper_ = np.where(np.isfinite(compiled.col_hi), compiled.col_hi, inf)
    lp.row_lower_ = np.where(np.isfinite(compiled.row_lo), compiled.row_lo, -inf)
    lp.row_upper_ = np.where(np.isfinite(compiled.row_hi), compiled.row_hi, inf)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data.astype(float)
    if not relaxed:
        lp.integrality_ = [
            highspy.HighsVarType.kInteger if b else highspy.HighsVarType.kContinuous for b in compiled.integer
        ]
    return lp


BACKEND = HighsBackend
