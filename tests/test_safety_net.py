"""Deterministic solves run in a child process ended by a safety net; that changes no result.

A deterministic solve has no wall-clock limit, so a solver phase that checks neither its work budget
nor an interrupt (HiGHS's MIP presolve once ran 40+ minutes in one 16-PM call of a full-scale run)
would stall a whole simulation. The child process is ended after `Limits.safety_net_s` and the call
answers with its start. A solver that never returns is stood in for by one that sleeps: the child is
forked, so it inherits the patched method.
"""

from __future__ import annotations

import dataclasses
import random
import sys
import time

import numpy as np
import pytest
from bilp_instances import fragmented

from origamig.bilp import build_model, compile_model, restrict
from origamig.bilp.backends import base
from origamig.bilp.backends.base import SAFETY_NET_S, Limits, get_backend, make_limits
from origamig.cluster.records import Weights
from origamig.policies.base import make_policy

BACKENDS = ("highs", "cpsat")
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the child is forked on Linux")


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
def test_a_deterministic_solve_gives_the_same_answer_in_its_child_process(name: str, seed: int) -> None:
    compiled = _compiled(seed)
    limits = make_limits(name, deterministic=True, work_limit=0.5 if name == "cpsat" else 20)
    backend = get_backend(name)
    here = backend.solve(compiled, compiled.hint, dataclasses.replace(limits, kill_at_deadline=False))
    child = backend.solve(compiled, compiled.hint, limits)
    assert child.guard == "" and here.guard == ""
    assert np.array_equal(child.x, here.x)
    assert (child.termination, child.objective, child.bound, child.work) == (
        here.termination,
        here.objective,
        here.bound,
        here.work,
    )


@pytest.mark.parametrize("name", BACKENDS)
def test_the_safety_net_ends_a_solve_that_never_returns(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = _compiled(5, n_pms=4)
    backend = get_backend(name)

    def never_returns(*_args: object) -> base.SolveResult:
        time.sleep(120)
        raise AssertionError("the safety net did not end the solve")

    monkeypatch.setattr(type(backend), "solve_in_process", never_returns)
    limits = dataclasses.replace(make_limits(name, deterministic=True, work_limit=10), safety_net_s=0.5)
    t0 = time.perf_counter()
    result = backend.solve(compiled, compiled.hint, limits)
    assert time.perf_counter() - t0 < 60  # ended long before the solver would have returned
    assert result.termination == base.INTERRUPTED and result.guard == base.GUARD_KILLED
    assert "safety net" in result.reason
    assert np.array_equal(result.x, compiled.hint)  # the start: nothing moves
    assert result.objective == compiled.objective_of(compiled.hint)
