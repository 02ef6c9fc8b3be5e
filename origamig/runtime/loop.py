"""One loop over a clock for every driver (docs/design.md#runtime): the events of a runtime — calls
ending, moves ending, checks — on an event queue (`events.py`), and when to make the next check.

The simulator pushes its arrivals and departures on the same queue and pops everything; the service's
replay pops what is due when its client moves the clock; the service's wall clock pops what is due
when real time reaches it. How a check is made (in this process, or in a worker process) and how long
a call solves are the driver's: `check` makes one and returns the calls it started, `call_s` gives a
call's duration on this clock (None: it has already ended — the wall clock's calls end when their
worker answers).

A simulated controller (`simulated_controller`) carries out each move's steps at the move's modeled
end (a `STEP_END` event); without it the platform acknowledges steps (the service's routes).

After every event, with no call solving and no check queued, the next check is queued at the
policy's `next_check`. A policy that asks again at the time of a check that found no work while
plans run is asked again once a move has ended (it waits for those moves: a simulated controller's
move end, the platform's last step of a move, a VM that left); with no plan running that is a broken
Protocol (`LoopError`): it would ask for ever.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from origamig.policies.base import Work
from origamig.runtime.events import CALL_END, CHECK, STEP_END, EventQueue
from origamig.runtime.lifecycle import ProtocolError, Runtime
from origamig.runtime.migration import Move
from origamig.runtime.plan_run import PlanRun

CheckMaker = Callable[[float], list[Work]]
CallSeconds = Callable[[Work], float | None]


class LoopError(ProtocolError):
    """A policy asked for checks for ever at one instant."""


class Loop:
    """The runtime's own events on one clock (module doc)."""

    def __init__(self, runtime: Runtime, simulated_controller: bool = True) -> None:
        self.runtime = runtime
        self.queue = EventQueue()
        self.simulated_controller = simulated_controller
        self.check_due = False
        self.idle_check_t = -1.0  # time of the last check that found no work
        self.after_moves: int | None = None  # the plan book's move count when a check was put off

    # --- what the driver tells it --------------------------------------------------------------
    def call_started(self, work: Work, now: float, duration_s: float | None) -> None:
        """A call started solving; it ends after `duration_s` (None: at once)."""
        self.queue.push(now + max(duration_s or 0.0, 0.0), CALL_END, work)

    def move_started(self, plan: PlanRun, move: Move, now: float) -> None:
        """A move started: a simulated controller ends it after its modeled duration."""
        if self.simulated_controller:
            self.queue.push(now + move.duration_s, STEP_END, (plan.id, move.n))

    # --- events --------------------------------------------------------------------------------
    def handle(self, kind: int, payload: Any, t: float, check: CheckMaker, call_s: CallSeconds) -> None:
        """Run one of the runtime's events (a call's end, a move's end, a check) at time t."""
        runtime = self.runtime
        if kind == CALL_END:
            runtime.end_call(payload, t)
        elif kind == STEP_END:
            plan_id, n = payload
            runtime.move_done(plan_id, n, t)
        elif kind == CHECK:
            self.checked(t, check(t), call_s)
        else:
            raise ValueError(f"not an event of the runtime: kind {kind}")

    def checked(self, t: float, works: list[Work], call_s: CallSeconds) -> None:
        """The check at t (popped from the queue) started `works`: each ends after its solve."""
        self.check_due = False
        for work in works:
            self.call_started(work, t, call_s(work))
        if not works:
            self.idle_check_t = t

    def settle(self, t: float) -> None:
        """After an event at t: with no call solving and no check queued, queue the next check."""
        runtime = self.runtime
        book = runtime.plans
        if self.after_moves is not None:
            if book.moves_ended == self.after_moves and book.running():
                return  # still waiting for a move to end
            self.after_moves = None
        if runtime.solving or self.check_due:
            return
        when = runtime.next_check(t)
        if when is None:
            return
        when = max(when, t)
        if when <= self.idle_check_t:
            if book.running():
                self.after_moves = book.moves_ended
                return
            raise LoopError(
                f"{runtime.policy.name} asked for another check at t={when} after one that found no work"
            )
        self.check_due = True
        self.queue.push(when, CHECK, None)
