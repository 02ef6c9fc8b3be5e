"""CP-SAT (OR-Tools) backend: the standard form written straight into a CpModelProto, full hint.

CP-SAT needs integer data: every row coefficient and bound must be integral (they are: milli-cores,
megabytes, slice counts) and the objective is multiplied by `Compiled.objective_scale`. With two
workers CP-SAT runs only its weak `default_lp` full-problem worker, so the `max_lp` subsolver is
requested (and `linearization_level=2` on one worker); with more than one worker presolve probing is
off (`cp_model_probing_level=0`: about a third less deterministic time on recorded calls).
Deterministic mode fixes the worker count, interleaves the search when it uses more than one, and
stops on `max_deterministic_time` (`Limits.work_limit`, CP-SAT's deterministic seconds, which are
also the reported work units).
A wall-clock guard calls `stop_search` if the time limit passes (CP-SAT normally stops by itself);
presolve and symmetry detection are skipped when they would take most of the time, and a solve with
a wall-clock limit runs in a helper process that is ended at the deadline (`deadline.py`).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from origamig.bilp.backends import base, deadline

if TYPE_CHECKING:
    from origamig.bilp.compile import Compiled

_GUARD_GRACE_S = 0.3
# CP-SAT's presolve of the H100 stress model (436k nonzeros) takes seconds and checks no clock often.
PRESOLVE_S_PER_NONZERO = 1e-5
_FALLBACK_SCALE = 10**6  # objective scale when the weights have more than 6 decimals (rounded)


class CpSatBackend(deadline.SolvesInHelper):
    """OR-Tools CP-SAT with LP relaxation workers."""

    name = "cpsat"
    # (module, pip extra): CP-SAT is optional, `get_backend` names the extra when it is missing.
    optional: ClassVar[tuple[str, str] | None] = ("ortools.sat.python.cp_model", "cpsat")
    features: ClassVar[frozenset[base.Feature]] = frozenset(
        {base.Feature.HINT, base.Feature.DETERMINISTIC_TIME, base.Feature.WORK_LIMIT}
    )
    # Wall seconds per unit of reported work on one idle core, for the load-independent call
    # time of deterministic simulations: one deterministic second
    # took about 1.2 s of CPU on 16-PM neighborhoods.
    seconds_per_work: ClassVar[float] = 1.2
    # Work budget of a deterministic solve when the caller gives none (deterministic seconds).
    default_work_limit: ClassVar[float] = 10.0
    helper_backends: ClassVar[tuple[str, ...]] = ("cpsat",)

    @classmethod
    def available(cls) -> str | None:
        try:
            from ortools.sat.python import cp_model  # noqa: F401
        except ImportError as err:
            return f"ortools is not installed ({err})"
        return None

    def solve_in_process(self, compiled: Compiled, hint: np.ndarray, limits: base.Limits) -> base.SolveResult:
        """Solve here: CP-SAT's own time limit, and a guard that stops the search if it overruns."""
        from ortools.sat.python import cp_model

        t0 = time.perf_counter()
        scale = compiled.objective_scale or _FALLBACK_SCALE
        model = cp_model.CpModel()
        _fill(model.proto, compiled, hint, scale, cp_model.INT_MIN, cp_model.INT_MAX)
        solver = cp_model.CpSolver()
        self._apply_limits(solver.parameters, limits, t0, compiled.size["nonzeros"])
        guard = None
        stopped: list[bool] = []
        if limits.wall_limit_s is not None:
            wait = max(0.0, limits.wall_limit_s - (time.perf_counter() - t0)) + _GUARD_GRACE_S

            def stop() -> None:
                stopped.append(True)
                solver.stop_search()

            guard = threading.Timer(wait, stop)
            guard.daemon = True
            guard.start()
        try:
            status = solver.solve(model)
        finally:
            if guard is not None:
                guard.cancel()
        result = self._result(solver, status, compiled, hint, scale, limits, time.perf_counter() - t0)
        return dataclasses.replace(result, guard=base.GUARD_CANCEL) if stopped else result

    def _apply_limits(self, p: Any, limits: base.Limits, t0: float, nonzeros: int) -> None:
        workers = limits.thread_count()
        p.num_workers = workers
        p.random_seed = 0
        if workers == 1:
            p.linearization_level = 2
        elif workers == 2:
            p.subsolvers.append("max_lp")
        else:
            p.extra_subsolvers.append("max_lp")
        if workers > 1:
            p.cp_model_probing_level = 0  # presolve probing: ~35% of the work on these models, no gain
        if limits.deterministic and workers > 1:
            p.interleave_search = True
        if limits.wall_limit_s is not None:
            p.max_time_in_seconds = max(0.01, limits.wall_limit_s - (time.perf_counter() - t0))
            if nonzeros * PRESOLVE_S_PER_NONZERO > 0.5 * limits.wall_limit_s:
                # Presolve and symmetry detection would take most of the time: search from the hint.
                p.cp_model_presolve = False
                p.symmetry_level = 0
        if limits.work_limit is not None:
            p.max_deterministic_time = float(limits.work_limit)
        p.relative_gap_limit = float(limits.gap)
        p.absolute_gap_limit = 0.999

    def _result(
        self,
        solver: Any,
        status: Any,
        compiled: Compiled,
        hint: np.ndarray,
        scale: int,
        limits: base.Limits,
        wall: float,
    ) -> base.SolveResult:
        from ortools.sat.python import cp_model

        x = None
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            x = np.asarray(solver.response_proto.solution, dtype=float)
        if x is None or len(x) != len(hint) or compiled.objective_of(x) < compiled.objective_of(hint) - 1e-6:
            x = hint.copy()
        objective = compiled.objective_of(x)
        bound = compiled.trivial_bound()
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            bound = float(solver.best_objective_bound) / scale + compiled.offset
        bound = max(objective, bound)
        proved = status == cp_model.OPTIMAL and limits.gap == 0.0
        work = float(solver.deterministic_time)
        reason = ""
        if status == cp_model.OPTIMAL:
            term = base.OPTIMAL if proved else base.GAP_LIMIT
            bound = objective if proved else bound
        elif status == cp_model.INFEASIBLE:
            term = base.INFEASIBLE
        elif status == cp_model.MODEL_INVALID:
            term = base.ERROR
            reason = base.one_line(f"CP-SAT: {solver.status_name(status)} {solver.solution_info()}")
        elif limits.work_limit is not None and work >= limits.work_limit * 0.99:
            term = base.WORK_LIMIT
        else:
            term = base.TIME_LIMIT
        return base.SolveResult(
            solver=self.name,
            termination=term,
            solution_status=base.SOLUTION_OPTIMAL if proved else base.SOLUTION_FEASIBLE,
            objective=objective,
            bound=bound,
            wall_s=wall,
            work=work,
            x=x,
            reason=reason,
        )


def _fill(proto: Any, compiled: Compiled, hint: np.ndarray, scale: int, int_min: int, int_max: int) -> None:
    """Columns, rows, objective and hint of `compiled` into an (empty) CpModelProto."""
    if not compiled.integer.all():
        raise ValueError("CP-SAT needs every column integer")
    for lo, hi in zip(compiled.col_lo, compiled.col_hi, strict=True):
        proto.variables.add().domain.extend([_int(lo, int_min, int_max), _int(hi, int_min, int_max)])
    A = compiled.A
    data = A.data
    if not np.array_equal(data, np.round(data)):
        raise ValueError("CP-SAT needs integer row coefficients")
    coeffs = data.astype(np.int64).tolist()
    indices = A.indices.tolist()
    ptr = A.indptr.tolist()
    for r, (lo, hi) in enumerate(zip(compiled.row_lo, compiled.row_hi, strict=True)):
        lin = proto.constraints.add().linear
        lin.vars.extend(indices[ptr[r] : ptr[r + 1]])
        lin.coeffs.extend(coeffs[ptr[r] : ptr[r + 1]])
        lin.domain.extend([_int(lo, int_min, int_max, up=True), _int(hi, int_min, int_max)])
    nz = np.flatnonzero(compiled.c)
    obj = proto.objective
    obj.vars.extend(nz.tolist())
    obj.coeffs.extend((-np.round(compiled.c[nz] * scale)).astype(np.int64).tolist())
    obj.scaling_factor = -1.0
    proto.solution_hint.vars.extend(range(len(hint)))
    proto.solution_hint.values.extend(np.round(hint).astype(np.int64).tolist())


def _int(v: float, int_min: int, int_max: int, up: bool = False) -> int:
    if not np.isfinite(v):
        return int_min if v < 0 else int_max
    return int(np.ceil(v - 1e-9)) if up else int(np.floor(v + 1e-9))


BACKEND = CpSatBackend
