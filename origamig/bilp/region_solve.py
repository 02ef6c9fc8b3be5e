"""One call of the optimizer on a region: restrict, build, compile, LP bound, solve, decode.

`solve_region` is the whole of it; `origamig.bilp` re-exports it (see the package docstring)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from origamig.bilp.backends.base import Limits, SolveResult, get_backend, then
from origamig.bilp.backends.helper_pool import start_solver_helpers
from origamig.bilp.bound import NoChangeProof, no_change_proof
from origamig.bilp.compile import compile_model, decode, start_of
from origamig.bilp.model import BilpModel, build_model
from origamig.bilp.nogood import NoGood, add_no_goods, touched_gpus
from origamig.bilp.primal import repair
from origamig.bilp.restrict import Region, restrict
from origamig.bilp.standard_form import Compiled
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, PmSpec, Weights
from origamig.judge.objective import evaluate


@dataclass(frozen=True)
class RegionSolution:
    """The outcome of one call: target placement of the region, admitted / rejected pending VMs."""

    target: dict[str, Placement]  # every VM of the region placed in the solution (running + admitted)
    admitted: tuple[str, ...]
    rejected: tuple[str, ...]
    result: SolveResult
    timings: dict[str, float]  # build_s, compile_s, bound_s, solve_s, decode_s
    work: float  # deterministic work units spent (see the backend)
    size: dict[str, int]  # columns, rows, nonzeros
    modeled_s: float = 0.0  # load-independent duration: work × the backend's seconds per unit + build
    primal_gain: float | None = None  # what the fast primal answer gained over the start (None: not run)


# Build + compile cost per nonzero of the compiled model, measured on 16-PM neighborhoods
# (about 0.13 s for 42k nonzeros on one idle core; benchmarks/solver/solvers.py).
BUILD_SECONDS_PER_NONZERO = 3e-6


def solve_region(
    dc: DataCenter,
    region_pms: Sequence[int],
    pending: Sequence[str],
    weights: Weights,
    solver: str = "highs",
    limits: Limits = Limits(),  # noqa: B008 — frozen record
    prove_first: bool = True,
    no_goods: Sequence[NoGood] = (),
    bound_alongside: bool = False,
    primal: bool = False,
    while_waiting: Callable[[], object] | None = None,
    deadline: float | None = None,
) -> RegionSolution:
    """Optimize the region from its current placement (pending VMs rejected) as the start.

    With `prove_first`, the LP bound is tried before the MIP (`bound.no_change_proof`): when it
    proves that nothing beats the current placement, that placement is the answer, proved optimal,
    with termination `bound` and no MIP solved. With `bound_alongside` as well (and a wall-clock
    limit), the LP bound is computed while the solver's helper process already solves the MIP, and
    a proof ends that helper: the answer comes sooner, at the price of a new helper for the next call
    (for a one-shot process such as `origamig solve`). `no_goods` exclude earlier targets whose moves
    had no valid order (`nogood.py`). With `primal`, when the bound proves nothing, the fast primal
    answer (`primal.repair`, guided by the LP's values when it ran) is the solver's start: the solver
    returns at least as good a placement at any limit (docs/solving.md#fast-primal-answer).
    `while_waiting`: the caller's work that gives no answer, done while the solver works (after the
    LP bound alongside, when that proves nothing; `backends.base.Once` for work done once).
    `deadline` (a `time.perf_counter()` instant) cuts the solver's wall-clock limit so that it ends
    by then, whatever the call spent before it (the calls of one `solve` share one deadline)."""
    backend = get_backend(solver)
    start_solver_helpers(solver, limits)  # new solver helpers start while the model is built
    t0 = time.perf_counter()
    region = restrict(dc, region_pms, pending)
    model = build_model(region, weights, unpruned=touched_gpus(no_goods))
    add_no_goods(model, no_goods)
    t1 = time.perf_counter()
    compiled = compile_model(model)
    t2 = time.perf_counter()
    proofs: list[NoChangeProof] = []

    def prove() -> SolveResult | None:
        proofs.append(no_change_proof(compiled, limits))
        return proofs[-1].as_result(backend.name, compiled) if proofs[-1].proved else None

    alongside = prove_first and bound_alongside and not limits.deterministic
    early = prove() if prove_first and not alongside else None
    t_bound = time.perf_counter()
    start, primal_gain = compiled.hint, None
    if primal and early is None:
        start, primal_gain = _primal_start(
            dc, region, weights, model, compiled, proofs[-1] if proofs else None
        )
    t_primal = time.perf_counter()
    if early is not None:
        result = early
    else:
        meanwhile = then(prove if alongside else None, while_waiting)
        result = backend.solve(compiled, start, limits.less(t_primal - t2).until(deadline), meanwhile)
    t3 = time.perf_counter()
    proof = proofs[0] if proofs else None
    target, result = _decoded(dc.pms, region, weights, model, compiled, result)
    t4 = time.perf_counter()
    admitted = tuple(v for v in region.pending if v in target)
    rejected = tuple(v for v in region.pending if v not in target)
    timings = {  # alongside, the LP bound's time is part of the solve's (bound_s overlaps solve_s)
        "build_s": t1 - t0,
        "compile_s": t2 - t1,
        "bound_s": proof.wall_s if proof is not None else 0.0,
        "solve_s": t3 - t_primal,
        "decode_s": t4 - t3,
    }
    if primal_gain is not None:
        timings["primal_s"] = t_primal - t_bound
    modeled = (
        result.work * backend.seconds_per_work
        + (proof.modeled_s if proof is not None else 0.0)
        + compiled.size.get("nonzeros", 0) * BUILD_SECONDS_PER_NONZERO
    )
    return RegionSolution(
        target, admitted, rejected, result, timings, result.work, compiled.size, modeled, primal_gain
    )


def _decoded(
    pms: Sequence[PmSpec],
    region: Region,
    weights: Weights,
    model: BilpModel,
    compiled: Compiled,
    result: SolveResult,
) -> tuple[dict[str, Placement], SolveResult]:
    """The placement the solver's answer decodes to, and the answer valued as that placement when it
    is not proved (an unproved incumbent may carry a needless m, ω or φ)."""
    target = decode(model, compiled, result.x if result.x is not None else compiled.hint)
    if not result.proved_optimal:
        value = evaluate(pms, region.vms, target, region.previous, weights, region.pms, region.vms).value
        if result.objective is None or value > result.objective:
            result = replace(result, objective=value, bound=max(value, result.bound or value))
    return target, result


def _primal_start(
    dc: DataCenter,
    region: Region,
    weights: Weights,
    model: BilpModel,
    compiled: Compiled,
    proof: NoChangeProof | None,
) -> tuple[np.ndarray, float]:
    """The solver's start from the fast primal answer, and its gain over the current placement (the
    current placement and 0 when it finds nothing better, or its answer has no valid column vector)."""
    lp_pm: dict[int, float] = {}
    lp_vm_pm: dict[tuple[str, int], float] = {}
    if proof is not None and proof.lp_x is not None:
        phi = {id(var): j for j, var in model.pyomo.phi.items()}
        x = {id(var): key for key, var in model.pyomo.x.items()}
        for var, value in zip(compiled.columns, proof.lp_x, strict=True):
            if id(var) in phi:
                lp_pm[phi[id(var)]] = float(value)
            elif id(var) in x:
                lp_vm_pm[x[id(var)]] = float(value)
    found = repair(dc.pms, region, weights, lp_pm, lp_vm_pm)
    if found is None:
        return compiled.hint, 0.0
    vector = start_of(model, compiled, found.target)
    if vector is None or not compiled.holds(vector):
        return compiled.hint, 0.0
    gain = compiled.objective_of(vector) - compiled.objective_of(compiled.hint)
    return (vector, gain) if gain > 0 else (compiled.hint, 0.0)
