"""Replay mode (`origamig serve --clock replay`, docs/service.md#replaying-a-request-log): the client
sets the clock, and the service makes the policy's checks at the simulated times the simulator would.

`advance(t)` runs, in time order, every call end (a held call's modeled time passing, at or before
t) and every check due strictly before t (the same-time order of `sim/events.py`: a check at t sees
the arrivals at t, so it runs when the clock next moves past t), and stops at a check that makes a
plan. A check is the one the wall-clock optimizer makes — the policy's work in the worker process —
and its plan waits for the client's acknowledgements, which a replay sends at `created_s +
modeled_s` (the simulator's call end).
"""

from __future__ import annotations

from origamig.errors import UserError
from origamig.serve.live import Live
from origamig.serve.optimizer import Optimizer
from origamig.serve.plans import LivePlan


class ReplayClock:
    """Simulated seconds, moved forward by the client only."""

    def __init__(self, live: Live, optimizer: Optimizer) -> None:
        self.live = live
        self.optimizer = optimizer
        self.t = 0.0
        live.now = lambda: self.t

    def advance(self, t: float) -> list[LivePlan]:
        """Move the clock towards `t`: to `t`, or — when a check makes a plan — to that check's time,
        with the plan (its acknowledgements may be due before `t`: the client moves on from there)."""
        if not t >= self.t:
            raise UserError(f"now: {t!r} is before the clock ({self.t!r}); a replay only moves forward")
        live = self.live
        with live.writing:
            while True:
                if live.held is not None and live.held[1] <= t:
                    self.t = max(self.t, live.held[1])
                    with live.lock:
                        live.end_held()
                    continue
                if live.held is None and live.running_plan() is None:
                    due = live.policy.next_check(self.t)
                    if due is not None and due < t:
                        self.t = max(self.t, due)
                        plan = self.optimizer.check(self.t, hold=True)
                        if plan is not None:
                            return [plan]
                        continue
                break
            self.t = t
        return []
