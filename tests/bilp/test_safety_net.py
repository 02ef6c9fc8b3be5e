"""Deterministic solves run in a helper process ended by a safety net; that changes no result.

A deterministic solve has no wall-clock limit, so a solver phase that checks neither its work budget
nor an interrupt (HiGHS's MIP presolve once ran 40+ minutes in one 16-PM call of a full-scale run)
would stall a whole simulation. The helper process is ended after `Limits.safety_net_s` and the call
answers with its start. A solver that never returns is stood in for by a hint that, unpickled in
the helper process, sleeps there (and one that crashes, by a hint that ends the helper).
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import multiprocessing.queues
import os
import random
import time

import numpy as np
import pytest

from origamig.bilp import build_model, compile_model, restrict
from origamig.bilp.backends import base, helper_pool
from origamig.bilp.backends.base import SAFETY_NET_S, Limits, get_backend, make_limits
from origamig.cluster.records import Weights
from origamig.policies.base import make_policy
from tests.bilp_instances import fragmented
from tests.helper_faults import KillsTheHelper, StallsInTheHelper

BACKENDS = ("highs", "cpsat")
pytestmark = pytest.mark.skipif(os.name != "posix", reason="the helper process needs POSIX pipes")


def _compiled(seed: int, n_pms: int = 10):
    dc = fragmented(random.Random(seed), n_pms, 60, 6)
    region = restrict(dc, range(n_pms), list(dc.pending))
    return compile_model(build_model(region, Weights()))


def test_a_deterministic_solve_has_a_safety_net_but_no_wall_clock_limit() -> None:
    for solver in BACKENDS:
        limits = make_limits(solver, time_limit_s=0.001, deterministic=True)
        assert limits.wall_limit_s is None  # the solver itself never sees a clock
        assert limits.kill_after_s == SAFETY_NET_S  # but its process is ended after the net
    assert make_limits("highs", time_limit_s=3.0).kill_after_s == 3.0
    assert Limits(time_limit_s=None).kill_after_s is None  # no limit asked, none imposed


def test_the_safety_net_is_an_origamig_option() -> None:
    assert make_policy("origamig", deterministic=True).limits.kill_after_s == SAFETY_NET_S
    assert make_policy("origamig", deterministic=True, safety_net_s=900).limits.kill_after_s == 900
    # without determinism the wall-clock limit rules
    assert make_policy("origamig", safety_net_s=900, time_limit_s=7).limits.kill_after_s == 7


@pytest.mark.parametrize("name", BACKENDS)
@pytest.mark.parametrize("seed", [3, 11])
def test_a_deterministic_solve_gives_the_same_answer_in_its_helper_process(name: str, seed: int) -> None:
    compiled = _compiled(seed)
    limits = make_limits(name, deterministic=True, work_limit=0.5 if name == "cpsat" else 20)
    backend = get_backend(name)
    here = backend.solve(compiled, compiled.hint, dataclasses.replace(limits, kill_at_deadline=False))
    helper = backend.solve(compiled, compiled.hint, limits)
    assert helper.guard == "" and here.guard == ""
    assert np.array_equal(helper.x, here.x)
    assert (helper.termination, helper.objective, helper.bound, helper.work) == (
        here.termination,
        here.objective,
        here.bound,
        here.work,
    )


@pytest.mark.parametrize("name", BACKENDS)
def test_the_safety_net_ends_a_solve_that_never_returns(name: str) -> None:
    compiled = _compiled(5, n_pms=4)
    backend = get_backend(name)
    limits = dataclasses.replace(make_limits(name, deterministic=True, work_limit=10), safety_net_s=0.5)
    backend.solve(compiled, compiled.hint, limits)  # a helper is running: its start is not in the timing
    t0 = time.perf_counter()
    result = backend.solve(compiled, compiled.hint.view(StallsInTheHelper), limits)
    assert time.perf_counter() - t0 < 60  # ended long before the helper would have answered
    assert result.termination == base.INTERRUPTED and result.guard == base.GUARD_KILLED
    assert "safety net" in result.reason
    assert np.array_equal(result.x, compiled.hint)  # the start: nothing moves
    assert result.objective == compiled.objective_of(compiled.hint)
    after = backend.solve(compiled, compiled.hint, dataclasses.replace(limits, safety_net_s=60))
    assert after.guard == "" and after.termination != base.ERROR  # a new helper took the next call


@pytest.mark.parametrize("name", BACKENDS)
def test_a_helper_that_dies_answers_with_the_start_as_an_error(name: str) -> None:
    compiled = _compiled(5, n_pms=4)
    backend = get_backend(name)
    limits = make_limits(name, deterministic=True, work_limit=10)
    result = backend.solve(compiled, compiled.hint.view(KillsTheHelper), limits)
    assert result.termination == base.ERROR and result.guard == ""
    assert "exited with status 3" in result.reason
    assert np.array_equal(result.x, compiled.hint)
    assert backend.solve(compiled, compiled.hint, limits).termination != base.ERROR


def test_calls_share_one_long_lived_helper_process() -> None:
    """No call pays a process start: consecutive solves of this process go to the same helper."""
    compiled = _compiled(3, n_pms=4)
    backend = get_backend("highs")
    limits = make_limits("highs", deterministic=True, work_limit=10)
    backend.solve(compiled, compiled.hint, limits)
    helpers = helper_pool.helper_pids()
    for _ in range(3):
        backend.solve(compiled, compiled.hint, limits)
    assert helper_pool.helper_pids() == helpers and os.getpid() not in helpers


def test_a_prepared_helper_is_the_one_the_next_solve_takes() -> None:
    """`prepare` starts the helper while the caller builds its model; the solve then finds it."""
    limits = make_limits("cpsat", deterministic=True, work_limit=0.5)
    helper_pool.prepare("cpsat", limits)
    prepared = helper_pool.helper_pids()
    compiled = _compiled(3, n_pms=4)
    get_backend("cpsat").solve(compiled, compiled.hint, limits)
    assert helper_pool.helper_pids() == prepared


def _solve_in_a_daemon(name: str, answers: multiprocessing.queues.Queue) -> None:
    compiled = _compiled(3, n_pms=4)
    limits = make_limits(name, deterministic=True, work_limit=10)
    result = get_backend(name).solve(compiled, compiled.hint, limits)
    answers.put((result.termination, result.objective, result.x.tolist()))


@pytest.mark.parametrize("name", BACKENDS)
def test_the_safety_net_works_inside_a_daemonic_process(name: str) -> None:
    """A Dask nanny's workers are daemonic processes, which may not have multiprocessing children."""
    compiled = _compiled(3, n_pms=4)
    limits = make_limits(name, deterministic=True, work_limit=10)
    here_limits = dataclasses.replace(limits, kill_at_deadline=False)
    here = get_backend(name).solve(compiled, compiled.hint, here_limits)
    ctx = multiprocessing.get_context("fork")
    answers = ctx.Queue()
    daemon = ctx.Process(target=_solve_in_a_daemon, args=(name, answers), daemon=True)
    daemon.start()
    try:
        got = answers.get(timeout=120)
    finally:
        daemon.join(timeout=10)
    assert got == (here.termination, here.objective, here.x.tolist())
