"""The LP bound beside the solver (`solve_region(..., bound_alongside=True)`, the one-shot `solve`).

Checked here: a call gives the same answer as with the bound first (the same optimum, the same start
when the bound proves it); the caller's work during a race settles it when it answers, ending the
helper still solving and starting its replacement at once; it changes nothing when it does not
answer; and a solve in the calling process does that work first, with the time it took taken off
the limit.
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
from origamig.bilp.backends import base, deadline, helper_pool, race
from origamig.cluster.records import Weights
from origamig.judge.check import check_placement
from tests.bilp_instances import A30, A100, fragmented
from tests.helper_faults import StallsInTheCpsatHelper
from tests.profiles import examples

pytestmark = pytest.mark.skipif(os.name != "posix", reason="helper processes need POSIX pipes")
LIMITED = Limits(time_limit_s=60, threads=1)
W = Weights()


def _compiled(seed: int, n_pms: int = 3):
    dc = fragmented(random.Random(seed), n_pms, 5 * n_pms, 1)
    return compile_model(build_model(restrict(dc, range(n_pms), list(dc.pending)), W))


def _bound_answer(compiled) -> base.SolveResult:
    return base.start_result("highs", compiled, compiled.hint, base.BOUND, 0.01, base.Guard.NONE, "")


@settings(max_examples=examples(15), deadline=None)
@given(seed=st.integers(0, 10_000), n_pms=st.integers(2, 3), pending=st.integers(0, 2))
def test_alongside_gives_the_answer_of_the_bound_first(seed: int, n_pms: int, pending: int) -> None:
    rng = random.Random(seed)
    dc = fragmented(rng, n_pms, 5 * n_pms, pending, models=(A100, A100) if seed % 2 else (A30, A30))
    pms = range(n_pms)
    first = solve_region(dc, pms, list(dc.pending), W, limits=LIMITED)
    beside = solve_region(dc, pms, list(dc.pending), W, limits=LIMITED, bound_alongside=True)
    assert first.result.proved_optimal and beside.result.proved_optimal
    assert beside.result.objective == pytest.approx(first.result.objective)
    assert not check_placement(dc.pms, {**dc.vms, **dc.pending}, beside.target)  # the independent checker
    if first.result.termination == base.BOUND:  # the same proof, alongside: the start is the answer
        assert beside.target == first.target and beside.admitted == ()
    assert beside.timings["bound_s"] > 0  # the bound was computed in both cases


def test_an_answer_of_the_callers_work_settles_the_race_and_a_new_helper_starts() -> None:
    compiled = _compiled(5)
    helper_pool.prepare("cpsat", LIMITED)
    before = set(helper_pool.helper_pids())
    stalled = compiled.hint.view(StallsInTheCpsatHelper)  # CP-SAT's helper sleeps two minutes on it
    t0 = time.perf_counter()
    entrants = race.race_in_children(
        [("cpsat", LIMITED)], compiled, stalled, 60.0, t0, meanwhile=lambda: _bound_answer(compiled)
    )
    assert time.perf_counter() - t0 < 30
    cpsat, ours = entrants
    assert ours.answered and ours.result.termination == base.BOUND
    assert not cpsat.answered and cpsat.result.reason == "ended: the bound result answered first"
    after = set(helper_pool.helper_pids())
    ended, started = before - after, after - before
    assert len(ended) == 1 and len(started) == 1  # ended, and replaced at once
    with pytest.raises(ProcessLookupError):
        os.kill(ended.pop(), 0)
    again = deadline.solve_in_child("cpsat", compiled, compiled.hint, LIMITED, time.perf_counter())
    assert again.proved_optimal  # the replacement solves


def test_the_callers_work_without_an_answer_changes_nothing() -> None:
    compiled = _compiled(7)
    calls: list[int] = []

    def nothing() -> None:
        calls.append(1)

    plain = deadline.solve_in_child("highs", compiled, compiled.hint, LIMITED, time.perf_counter())
    beside = deadline.solve_in_child(
        "highs", compiled, compiled.hint, LIMITED, time.perf_counter(), meanwhile=nothing
    )
    assert calls == [1]
    assert beside.proved_optimal and beside.objective == plain.objective
    assert np.array_equal(beside.x, plain.x)


def test_in_this_process_the_callers_work_comes_first_and_its_time_is_taken_off() -> None:
    compiled = _compiled(9)
    here = Limits(time_limit_s=30, threads=1, kill_at_deadline=False)
    seen: list[float | None] = []

    class Recording:
        name = "highs"

        def solve_in_process(self, c, hint, limits):
            seen.append(limits.time_limit_s)
            return base.get_backend("highs").solve_in_process(c, hint, limits)

    def slow() -> None:
        time.sleep(0.2)

    answer = deadline.solve_limited(
        Recording(), compiled, compiled.hint, here, lambda: _bound_answer(compiled)
    )
    assert answer.termination == base.BOUND and seen == []  # answered: no solve
    solved = deadline.solve_limited(Recording(), compiled, compiled.hint, here, slow)
    assert solved.proved_optimal and len(seen) == 1 and seen[0] is not None and seen[0] <= 30 - 0.2


def test_limits_less_takes_time_off_a_wall_clock_limit_only() -> None:
    assert Limits(time_limit_s=10).less(3).time_limit_s == 7
    assert Limits(time_limit_s=1).less(3).time_limit_s == 0
    budget = Limits(deterministic=True, work_limit=100)
    assert budget.less(3) == budget  # no clock in a deterministic budget
    assert Limits(time_limit_s=None).less(3).time_limit_s is None


def test_a_failure_of_the_callers_work_ends_the_helper_and_goes_on() -> None:
    compiled = _compiled(11)
    helper_pool.prepare("cpsat", LIMITED)
    before = set(helper_pool.helper_pids())
    stalled = compiled.hint.view(StallsInTheCpsatHelper)

    def fails() -> None:
        raise RuntimeError("the bound failed")

    with pytest.raises(RuntimeError, match="the bound failed"):
        race.race_in_children(
            [("cpsat", LIMITED)], compiled, stalled, 60.0, time.perf_counter(), meanwhile=fails
        )
    ended = before - set(helper_pool.helper_pids())
    assert len(ended) == 1
    with pytest.raises(ProcessLookupError):
        os.kill(ended.pop(), 0)  # no helper goes on solving for nobody


def test_work_done_while_waiting_is_done_once_while_the_helper_solves() -> None:
    compiled = _compiled(13)
    done: list[float] = []
    work = base.Once([lambda: done.append(time.perf_counter())])
    helper_pool.prepare("cpsat", LIMITED)
    stalled = compiled.hint.view(StallsInTheCpsatHelper)  # the helper sleeps: only the deadline ends it
    t0 = time.perf_counter()
    bound_then_work = base.then(lambda: _bound_answer(compiled), work)
    _, ours = race.race_in_children(
        [("cpsat", LIMITED)], compiled, stalled, 60.0, t0, meanwhile=bound_then_work
    )
    assert ours.result.termination == base.BOUND and done == []  # answered at once: nothing waited on
    t0 = time.perf_counter()
    (cpsat,) = race.race_in_children(
        [("cpsat", LIMITED)], compiled, stalled, 1.0, t0, meanwhile=base.then(None, work)
    )
    ended = time.perf_counter()
    assert not cpsat.answered and ended - t0 >= 1.0  # ended at the deadline (1 s after the helper was ready)
    assert len(done) == 1 and ended - done[0] >= 0.9  # done before the wait for it, not after
    solved = deadline.solve_in_child(
        "highs", compiled, compiled.hint, LIMITED, time.perf_counter(), base.then(None, work)
    )
    assert solved.proved_optimal and len(done) == 1  # once


def test_a_failure_of_work_done_while_waiting_ends_the_helper_and_goes_on() -> None:
    compiled = _compiled(17)
    helper_pool.prepare("cpsat", LIMITED)
    before = set(helper_pool.helper_pids())

    def fails() -> None:
        raise ImportError("no such module")

    stalled = compiled.hint.view(StallsInTheCpsatHelper)
    with pytest.raises(ImportError, match="no such module"):
        race.race_in_children(
            [("cpsat", LIMITED)],
            compiled,
            stalled,
            60.0,
            time.perf_counter(),
            meanwhile=base.then(None, fails),
        )
    ended = before - set(helper_pool.helper_pids())
    assert len(ended) == 1
    with pytest.raises(ProcessLookupError):
        os.kill(ended.pop(), 0)


def test_a_solver_that_raises_in_its_helper_answers_helper_failed_and_the_start() -> None:
    from origamig.bilp.backends.solver_host import answer

    compiled = _compiled(19)
    failed = answer(("no-such-solver", compiled, compiled.hint, LIMITED, float("inf")))
    assert isinstance(failed, base.HelperFailed) and not failed.died
    assert failed.why.startswith("ValueError: ")
    entrant = race._entrant("highs", compiled, compiled.hint, LIMITED, failed, None, 0.1, "", "", 5.0)
    assert not entrant.answered and entrant.result.termination == base.ERROR
    assert entrant.result.reason == f"solver failed: {failed.why}"
    assert np.array_equal(entrant.result.x, compiled.hint)  # the always-feasible start
