"""The effort budget of a deterministic HiGHS solve: a count of the solver's progress checks.

HiGHS calls its MIP interrupt callback at fixed points of its search; stopping after K of them stops
every run of the same model at the same point, on any machine (docs/bilp.md#effort-budget).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from origamig.bilp import Limits, build_model, compile_model, restrict, solve_region
from origamig.bilp.backends.base import get_backend, make_limits
from origamig.cluster.records import Weights
from origamig.errors import UserError
from origamig.policies.optimizer.options import OrigaMIGOptions
from tests.bilp_instances import fragmented


def _limits(effort: int | None) -> Limits:
    return Limits(time_limit_s=None, threads=1, deterministic=True, work_limit=1000, effort_limit=effort)


def _solve(seed: int, n_pms: int, effort: int | None):
    dc = fragmented(random.Random(seed), n_pms, 5 * n_pms, 5)
    compiled = compile_model(build_model(restrict(dc, range(n_pms), list(dc.pending)), Weights()))
    return compiled, get_backend("highs").solve(compiled, compiled.hint, _limits(effort))


def test_a_budgeted_solve_repeats_exactly_and_stops_as_a_work_limit() -> None:
    _, first = _solve(5, 8, 2)
    _, again = _solve(5, 8, 2)
    assert first.termination == "work_limit" and not first.proved_optimal
    assert np.array_equal(first.x, again.x) and first.objective == again.objective
    assert first.work == again.work and first.bound == again.bound


@pytest.mark.parametrize("seed", [1, 5, 9])
def test_a_larger_budget_never_returns_less_and_an_ample_one_changes_nothing(seed: int) -> None:
    """A budget only ends the search, which is the same run up to that point: the incumbent it
    returns can only grow with the budget, and a budget the search never reaches gives the
    unbudgeted answer bit for bit (both without restarts: see the next test)."""
    values = []
    for effort in (1, 3, 10, 100_000):
        compiled, res = _solve(seed, 8, effort)
        assert res.objective >= compiled.objective_of(compiled.hint) - 1e-9  # never below the start
        values.append(res.objective)
    assert values == sorted(values)
    assert res.termination == "optimal" and res.proved_optimal


def test_a_budgeted_solve_neither_restarts_nor_runs_the_root_reduced_cost_heuristic() -> None:
    """Both repeat the root's work, which a budget would pay twice; a deterministic solve without
    a budget keeps HiGHS's defaults (and a wall-clock one skips the heuristic: docs/bilp.md)."""
    import highspy

    from origamig.bilp.backends.highs import HighsBackend, new_highs

    compiled, _ = _solve(1, 2, None)
    cases = ((_limits(20), False, False), (_limits(None), True, True), (Limits(time_limit_s=5), False, True))
    for limits, heuristic, restarts in cases:
        h = new_highs(highspy)
        HighsBackend()._apply_limits(h, compiled, limits)
        assert h.getOptionValue("mip_heuristic_run_root_reduced_cost")[1] is heuristic
        assert h.getOptionValue("mip_allow_restart")[1] is restarts


def test_the_budget_reaches_solve_region_and_only_deterministic_limits_carry_it() -> None:
    dc = fragmented(random.Random(5), 8, 40, 5)
    sol = solve_region(dc, range(8), list(dc.pending), Weights(), "highs", _limits(2), prove_first=False)
    assert sol.result.termination == "work_limit"
    assert make_limits("highs", 5.0, effort_limit=20).effort_limit is None  # a wall-clock solve
    assert make_limits("highs", 5.0, deterministic=True, effort_limit=20).effort_limit == 20


@pytest.mark.parametrize("value", [0, -3, 2.5, True, "many"])
def test_an_effort_limit_that_is_not_a_positive_integer_is_refused(value: object) -> None:
    with pytest.raises(UserError, match=r"effort_limit: .* must be a positive integer or null"):
        OrigaMIGOptions(effort_limit=value)  # type: ignore[arg-type]
