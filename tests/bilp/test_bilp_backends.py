"""Backend conformance: HiGHS and CP-SAT agree, honor limits, and return checker-valid placements."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.bilp import Limits, available, backend_names, solve_region
from origamig.bilp.backends.base import Feature, get_backend, get_backend_class
from origamig.cluster.records import Weights
from origamig.judge.check import check_placement
from origamig.judge.objective import evaluate
from tests.bilp_instances import A30, A100, fragmented
from tests.profiles import examples

SINGLE = ("highs", "cpsat")  # the solvers
BACKENDS = (*SINGLE, "portfolio")  # every registered backend must be listed here
EXACT = Limits(time_limit_s=60, threads=1)


def having(feature: Feature) -> list[str]:
    """The backends that declare `feature`: the tests of a feature run on every backend declaring it."""
    return [name for name in BACKENDS if feature in get_backend_class(name).features]


def test_every_registered_backend_is_under_test() -> None:
    assert set(backend_names()) == set(BACKENDS)


@pytest.mark.parametrize("name", BACKENDS)
def test_backend_available_here(name: str) -> None:
    assert available()[name] is None


def test_every_feature_is_declared_by_some_backend() -> None:
    declared = {f for name in BACKENDS for f in get_backend_class(name).features}
    assert declared == set(Feature)  # a feature nobody declares is dead code in the enum
    assert having(Feature.WORK_LIMIT) == list(SINGLE)  # both solvers run deterministically, the race not


def test_unknown_backend_names_the_choices() -> None:
    with pytest.raises(ValueError, match="highs"):
        get_backend("gurobi")


def _region_value(dc, sol, w: Weights) -> float:
    """Eq. (5) of the solution over the whole (tiny) data center: every PM is in the region."""
    everything = {**dc.vms, **dc.pending}
    return evaluate(dc.pms, everything, sol.target, dc.placement, w).value


def _assert_valid(dc, sol) -> None:
    everything = {**dc.vms, **dc.pending}
    combined = {v: pl for v, pl in dc.placement.items() if v not in sol.target}
    combined.update(sol.target)
    assert check_placement(dc.pms, everything, combined) == []
    assert set(sol.admitted) | set(sol.rejected) == set(dc.pending)


@settings(max_examples=examples(200), deadline=None)
@given(
    seed=st.integers(0, 10**6),
    n_pms=st.integers(1, 3),
    n_vms=st.integers(1, 8),
    pending=st.integers(0, 3),
    a30=st.booleans(),
    migration=st.sampled_from([0.0, 10.0, 35.0]),
)
def test_highs_and_cpsat_reach_the_same_optimum(seed, n_pms, n_vms, pending, a30, migration) -> None:
    dc = fragmented(
        random.Random(seed), n_pms, n_vms, pending, models=(A30,) if a30 else (A100,), cpu=32, ram_gb=128
    )
    w = Weights(migration=migration)
    pend = list(dc.pending)
    out = {name: solve_region(dc, range(n_pms), pend, w, solver=name, limits=EXACT) for name in SINGLE}
    for sol in out.values():
        assert sol.result.proved_optimal
        _assert_valid(dc, sol)
        assert np.isclose(_region_value(dc, sol, w), sol.result.objective)
    assert np.isclose(out["highs"].result.objective, out["cpsat"].result.objective)


@pytest.mark.parametrize("name", BACKENDS)
def test_time_limited_solve_keeps_the_best_incumbent(name: str) -> None:
    dc = fragmented(random.Random(11), 16, 90, 8)
    w = Weights()
    start = evaluate(dc.pms, dc.vms, dc.placement, dc.placement, w).value
    limits = Limits(time_limit_s=0.3, threads=1)
    sol = solve_region(dc, range(16), list(dc.pending), w, solver=name, limits=limits)
    res = sol.result
    _assert_valid(dc, sol)
    assert res.objective >= start
    assert np.isclose(_region_value(dc, sol, w), res.objective)
    assert res.gap is not None and res.bound is not None and res.bound >= res.objective - 1e-6
    assert res.wall_s <= limits.time_limit_s + 1.0
    assert res.proved_optimal == (res.gap == 0.0 and res.termination in ("optimal", "bound"))


@pytest.mark.parametrize("name", having(Feature.WORK_LIMIT))
def test_deterministic_mode_repeats_exactly(name: str) -> None:
    dc = fragmented(random.Random(5), 8, 40, 5)
    limits = Limits(time_limit_s=None, deterministic=True, work_limit=0.5 if name == "cpsat" else 1)
    runs = [
        solve_region(dc, range(8), list(dc.pending), Weights(), solver=name, limits=limits) for _ in range(2)
    ]
    assert runs[0].target == runs[1].target
    assert runs[0].result.objective == runs[1].result.objective
    assert runs[0].result.bound == runs[1].result.bound
    assert runs[0].work == runs[1].work
    if name == "cpsat":  # (HiGHS's node budget does not bind here: it proves the optimum at the root)
        assert runs[0].result.termination == "work_limit"


def test_deterministic_limits_never_enforce_the_wall_clock():
    from origamig.bilp.backends.base import make_limits

    for solver in having(Feature.WORK_LIMIT):
        limits = make_limits(solver, time_limit_s=0.001, deterministic=True)
        assert limits.work_limit == get_backend(solver).default_work_limit
        assert limits.wall_limit_s is None  # the result cannot depend on the machine's load
        assert make_limits(solver, time_limit_s=3.0).wall_limit_s == 3.0


@settings(max_examples=examples(15), deadline=None)
@given(seed=st.integers(0, 10**6), n_pms=st.integers(2, 6))
def test_a_call_proved_within_its_node_budget_is_the_same_with_a_larger_one(seed: int, n_pms: int) -> None:
    """HiGHS is deterministic and its node limit only ends the search: a call proved within 100
    nodes comes back with the very same answer from 1,000 (on real calls:
    benchmarks/results/node_budget.json)."""
    dc = fragmented(random.Random(seed), n_pms, 8 * n_pms, 3)
    answers = [
        solve_region(
            dc, range(n_pms), list(dc.pending), Weights(), "highs",
            Limits(time_limit_s=None, threads=1, deterministic=True, work_limit=nodes), prove_first=False,
        )
        for nodes in (100, 1000)
    ]  # fmt: skip
    small, large = (a.result for a in answers)
    if small.proved_optimal:
        assert np.array_equal(small.x, large.x) and answers[0].target == answers[1].target
    assert large.objective >= small.objective - 1e-9


@settings(max_examples=examples(25), deadline=None)
@given(seed=st.integers(0, 10**6), n_pms=st.integers(2, 5), pending=st.integers(0, 3))
def test_a_wall_clock_solve_reaches_the_optimum_of_a_deterministic_one(seed: int, n_pms: int, pending: int):
    """The two modes differ in HiGHS's settings (a wall-clock solve skips the root reduced-cost
    heuristic), never in the optimum: both prove the same value, of a placement the checker accepts."""
    dc = fragmented(random.Random(seed), n_pms, 8 * n_pms, pending)
    pms, w = range(n_pms), Weights()
    budget = Limits(time_limit_s=None, threads=1, deterministic=True, work_limit=10_000)
    timed, exact = (
        solve_region(dc, pms, list(dc.pending), w, "highs", limits, prove_first=False)
        for limits in (EXACT, budget)
    )
    assert timed.result.proved_optimal and exact.result.proved_optimal
    assert timed.result.objective == pytest.approx(exact.result.objective)
    _assert_valid(dc, timed)
    assert _region_value(dc, timed, w) == pytest.approx(_region_value(dc, exact, w))


def test_only_a_deterministic_highs_solve_runs_the_root_reduced_cost_heuristic() -> None:
    """Deterministic solves keep the setting the stored simulation results were made with."""
    import highspy

    from origamig.bilp import build_model, compile_model, restrict
    from origamig.bilp.backends.highs import HighsBackend, new_highs

    dc = fragmented(random.Random(1), 2, 8, 1)
    compiled = compile_model(build_model(restrict(dc, range(2), list(dc.pending)), Weights()))
    for limits, runs in ((EXACT, False), (Limits(deterministic=True, work_limit=100), True)):
        h = new_highs(highspy)
        HighsBackend()._apply_limits(h, compiled, limits)
        assert h.getOptionValue("mip_heuristic_run_root_reduced_cost")[1] is runs
