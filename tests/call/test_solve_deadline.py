"""One deadline for the whole `solve`: the calls share it, and a solve stopped by it keeps its plan.

The clock here is the test's own: each call "takes" `CALL_S` seconds of it (a wrapper around the
call's decision advances it), so the deadline falls between two calls on any machine.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from benchmarks.product.solve_admission import held_out_cluster
from origamig.bilp.backends.base import Limits, make_limits
from origamig.call import successive
from origamig.call.decision import Decision
from origamig.call.solve import Outcome, solve_snapshot
from origamig.call.successive import Deadline
from origamig.snapshot.document import Snapshot, parse_snapshot
from tests.call.test_solve_calls import assert_replays

CALL_S = 10.0  # what each call takes on the test's clock
WALL = Limits(time_limit_s=60.0, threads=1)  # a wall-clock limit: the deadline applies


@dataclass
class CallClock:
    """A clock that moves only when a call ends; it records each call's solver limit."""

    now: float = 0.0
    limits: list[float | None] = field(default_factory=list)

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[CallClock]:
    c = CallClock()
    decide = successive.decide

    def timed(*args: Any, **kwargs: Any) -> Decision:
        c.limits.append(args[5].time_limit_s)  # the limits the call was given
        decision = decide(*args, **kwargs)
        c.now += CALL_S
        return decision

    monkeypatch.setattr(successive, "decide", timed)
    yield c


def _snap() -> Snapshot:
    return parse_snapshot(held_out_cluster(12, 0))  # 8 pending VMs, three admission calls


def _solve(snap: Snapshot, limits: Limits = WALL, deadline: Deadline | None = None) -> Outcome:
    return solve_snapshot(snap, solver="highs", limits=limits, deadline=deadline)


def test_a_solve_stopped_by_its_deadline_returns_the_plan_of_the_calls_it_made(clock: CallClock) -> None:
    snap = _snap()
    unbounded = _solve(snap)
    assert len(unbounded.calls) >= 3 and len(unbounded.admitted) == 8
    clock.now, clock.limits = 0.0, []
    out = _solve(snap, deadline=Deadline(0.0, 1.5 * CALL_S, clock=clock))
    # the second call starts with 5 s left and ends past the deadline: no third call
    assert len(out.calls) == 2
    assert out.time is not None and out.time.out_of_time and out.time.calls == 2
    made = {v for c in out.calls for v in c.admitted}
    assert made and set(out.admitted) == made  # the plan of the calls made, nothing else
    assert set(out.waiting) == set(snap.pending) - made and not out.rejected
    for v in out.waiting:
        assert out.reasons[v] == "the time limit ran out before a call reached it (--time-limit)"
    assert out.status == "improved" and out.plan is not None
    assert_replays(snap, out)


def test_the_first_call_may_take_all_the_time_the_next_what_is_left(clock: CallClock) -> None:
    _solve(_snap(), deadline=Deadline(0.0, 25.0, clock=clock))
    assert clock.limits[:3] == [25.0, 15.0, 5.0]


def test_a_call_limit_caps_each_call(clock: CallClock) -> None:
    _solve(_snap(), deadline=Deadline(0.0, 25.0, call_limit_s=7.0, clock=clock))
    assert clock.limits[:3] == [7.0, 7.0, 5.0]


def test_the_first_call_is_made_even_when_the_time_is_already_up(clock: CallClock) -> None:
    clock.now = 100.0
    out = _solve(_snap(), deadline=Deadline(0.0, 1.0, clock=clock))
    assert len(out.calls) == 1 and clock.limits == [0.0]
    assert out.time is not None and out.time.out_of_time


def test_a_deterministic_solve_has_no_deadline(clock: CallClock) -> None:
    snap = _snap()
    out = _solve(snap, make_limits("highs", 1.0, None, True), Deadline(0.0, 1.0, clock=clock))
    assert len(out.calls) >= 3 and len(out.admitted) == 8
    assert out.time is not None and out.time.limit_s is None and not out.time.out_of_time


def test_the_time_account_adds_up() -> None:
    out = _solve(_snap())
    t = out.time
    assert t is not None and t.limit_s == WALL.time_limit_s and t.calls == len(out.calls)
    assert t.wall_s == pytest.approx(t.before_calls_s + t.calls_s + t.after_calls_s)
    assert 0 < sum(t.phases_s.values()) <= t.calls_s
    doc = out.to_json()["time"]
    assert doc["calls"] == len(out.calls) and doc["out_of_time"] is False
