"""The portfolio: HiGHS and CP-SAT race in two helper processes, the first proof wins.

Checked here: it reaches the optimum the single solvers reach and a valid placement; the race ends
the helper still solving once an answer settles it; the answers combine into the best incumbent under
the tightest bound; and it refuses to solve deterministically, wherever that is asked.
"""

from __future__ import annotations

import os
import random
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.bilp import Limits, build_model, compile_model, restrict, solve_region
from origamig.bilp.backends import base, helper_pool, race
from origamig.bilp.backends.base import make_limits
from origamig.bilp.backends.portfolio import combine
from origamig.cluster.records import Weights
from origamig.errors import UserError
from origamig.judge.check import check_placement
from origamig.judge.objective import evaluate
from origamig.policies.optimizer.options import OrigaMIGOptions
from tests.bilp_instances import A100, fragmented
from tests.helper_faults import StallsInTheCpsatHelper
from tests.profiles import examples

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the race needs helper processes (POSIX pipes)")
RACE = Limits(time_limit_s=60, threads=2)


def _compiled(seed: int, n_pms: int = 4):
    dc = fragmented(random.Random(seed), n_pms, 60, 6)
    return compile_model(build_model(restrict(dc, range(n_pms), list(dc.pending)), Weights()))


@settings(max_examples=examples(12), deadline=None)
@given(
    seed=st.integers(0, 10**6),
    n_pms=st.integers(1, 3),
    n_vms=st.integers(1, 8),
    pending=st.integers(0, 3),
    migration=st.sampled_from([0.0, 35.0]),
)
def test_the_portfolio_reaches_the_optimum_of_highs(seed, n_pms, n_vms, pending, migration) -> None:
    dc = fragmented(random.Random(seed), n_pms, n_vms, pending, models=(A100,), cpu=32, ram_gb=128)
    w = Weights(migration=migration)
    exact = Limits(time_limit_s=60, threads=1)
    alone = solve_region(
        dc, range(n_pms), list(dc.pending), w, solver="highs", limits=exact, prove_first=False
    )
    raced = solve_region(
        dc, range(n_pms), list(dc.pending), w, solver="portfolio", limits=RACE, prove_first=False
    )
    assert raced.result.proved_optimal and raced.result.solver == "portfolio"
    assert raced.result.winner in ("highs", "cpsat")
    assert np.isclose(raced.result.objective, alone.result.objective)
    everything = {**dc.vms, **dc.pending}
    combined = {v: pl for v, pl in dc.placement.items() if v not in raced.target} | raced.target
    assert check_placement(dc.pms, everything, combined) == []  # the independent checker
    assert np.isclose(
        evaluate(dc.pms, everything, raced.target, dc.placement, w).value, raced.result.objective
    )


def test_the_race_ends_the_helper_still_solving_once_an_answer_settles_it() -> None:
    compiled = _compiled(3)
    limits = Limits(time_limit_s=60, threads=1)
    for name in ("highs", "cpsat"):
        helper_pool.prepare(name, limits)
    before = set(helper_pool.helper_pids())
    t0 = time.perf_counter()
    hint = compiled.hint.view(StallsInTheCpsatHelper)
    highs, cpsat = race.race_in_children([("highs", limits), ("cpsat", limits)], compiled, hint, 60.0, t0)
    assert time.perf_counter() - t0 < 30  # not the two minutes CP-SAT's helper sleeps
    assert highs.answered and highs.result.solver == "highs"
    assert not cpsat.answered and cpsat.result.guard == base.GUARD_KILLED
    assert cpsat.result.reason == "ended: highs answered first"
    assert np.array_equal(cpsat.result.x, compiled.hint)  # an ended entrant is the start
    ended = before - set(helper_pool.helper_pids())
    assert len(ended) == 1
    with pytest.raises(ProcessLookupError):
        os.kill(ended.pop(), 0)  # the helper was ended, and reaped
    # the next race starts a new CP-SAT helper and both answer
    again = race.race_in_children(
        [("highs", limits), ("cpsat", limits)],
        compiled,
        compiled.hint,
        60.0,
        time.perf_counter(),
        lambda r: False,
    )
    assert all(e.answered and e.result.proved_optimal for e in again)


def _answer(solver: str, objective: float, bound: float, proved: bool, wall: float) -> race.Entrant:
    result = base.SolveResult(
        solver=solver,
        termination=base.OPTIMAL if proved else base.TIME_LIMIT,
        solution_status=base.SOLUTION_OPTIMAL if proved else base.SOLUTION_FEASIBLE,
        objective=objective,
        bound=bound,
        wall_s=wall,
        work=1.0,
        x=np.zeros(1),
    )
    return race.Entrant(result, True)


def _combined(*entrants: race.Entrant) -> base.SolveResult:
    compiled = _compiled(3)
    return combine(list(entrants), compiled, compiled.hint)


def test_the_first_proof_is_the_answer() -> None:
    out = _combined(_answer("highs", 5.0, 5.0, True, 2.0), _answer("cpsat", 5.0, 5.0, True, 1.0))
    assert out.winner == "cpsat" and out.proved_optimal and out.wall_s == 1.0
    assert out.work == pytest.approx(base.get_backend_class("cpsat").seconds_per_work)  # in seconds


def test_unproved_answers_give_the_best_incumbent_under_the_tightest_bound() -> None:
    out = _combined(_answer("highs", 3.0, 9.0, False, 10.0), _answer("cpsat", 4.0, 7.0, False, 10.0))
    assert (out.winner, out.objective, out.bound, out.proved_optimal) == ("cpsat", 4.0, 7.0, False)
    assert out.termination == base.TIME_LIMIT


def test_one_solvers_bound_can_prove_the_others_incumbent() -> None:
    out = _combined(_answer("highs", 3.0, 4.0, False, 10.0), _answer("cpsat", 4.0, 8.0, False, 10.0))
    assert (out.winner, out.objective, out.bound) == ("cpsat", 4.0, 4.0)
    assert out.proved_optimal and out.termination == base.OPTIMAL


def test_no_answer_gives_the_start() -> None:
    compiled = _compiled(3)
    start = base.start_result(
        "highs", compiled, compiled.hint, base.INTERRUPTED, 1.0, base.GUARD_KILLED, "no answer"
    )
    out = combine([race.Entrant(start, False), race.Entrant(start, False)], compiled, compiled.hint)
    assert np.array_equal(out.x, compiled.hint) and out.guard == base.GUARD_KILLED and not out.proved_optimal
    assert out.solver == "portfolio" and out.winner == "" and out.reason == "no answer"


def test_the_portfolio_cannot_solve_deterministically() -> None:
    with pytest.raises(UserError, match="--solver portfolio: cannot solve deterministically"):
        make_limits("portfolio", deterministic=True)
    with pytest.raises(UserError, match="solver: 'portfolio' races on the wall clock"):
        OrigaMIGOptions(solver="portfolio", deterministic=True)
    assert OrigaMIGOptions(solver="portfolio").solver == "portfolio"
