"""Replay mode (`origamig serve --clock replay`, docs/service.md#replaying-a-request-log): the client
sets the clock, and the service runs the policy's checks and call ends at the simulated times the
simulator would — on the simulator's own event queue (`sim/events.py`), so that the same-time order
is the simulator's: at one instant call ends come before departures and arrivals (the client's), and
checks after them.

`advance(t)` pops, in that order, every call end at or before t and every check strictly before t
(a check at t sees the client's arrivals at t, so it runs when the clock next moves past t), and
stops at a check that makes a plan: the plan's steps are acknowledged by the client at `created_s +
modeled_s` (the simulator's call end), which ends its call. A check is the one the wall-clock
optimizer makes — the policy's calls in the worker process — and a call without a plan keeps its
PMs until its own call end. As in the simulator, after every event with no call running and no
check queued, the next check is queued at the policy's `next_check`.
"""

from __future__ import annotations

from origamig.errors import UserError
from origamig.serve.live import Live
from origamig.serve.optimizer import Optimizer
from origamig.serve.plans import LivePlan
from origamig.sim.events import CALL_END, CHECK, EventQueue


class ReplayClock:
    """Simulated seconds, moved forward by the client only."""

    def __init__(self, live: Live, optimizer: Optimizer) -> None:
        self.live = live
        self.optimizer = optimizer
        self.t = 0.0
        self.queue = EventQueue()  # the checks and the call ends of calls without a plan
        self.check_due = False
        live.now = lambda: self.t

    def advance(self, t: float) -> list[LivePlan]:
        """Move the clock towards `t`: to `t`, or — when a check makes plans — to that check's time,
        with the plans (their acknowledgements may be due before `t`: the client moves on from there)."""
        if not t >= self.t:
            raise UserError(f"now: {t!r} is before the clock ({self.t!r}); a replay only moves forward")
        live = self.live
        with live.writing:
            while True:
                self._ask()
                head = self.queue.peek()
                if head is None or not (head[0] < t or (head[0] == t and head[1] == CALL_END)):
                    break
                when, kind, _, work = self.queue.pop()
                self.t = max(self.t, when)
                if kind == CALL_END:
                    with live.lock:
                        live.runtime.end_call(work, self.t, apply=False)
                    continue
                self.check_due = False
                before = set(live.plans)
                for held in self.optimizer.check(self.t, hold=True):
                    self.queue.push(self.t + held.modeled_s, CALL_END, held)
                made = [live.plans[i] for i in sorted(set(live.plans) - before)]
                if made:
                    return made
            self.t = t
        return []

    def _ask(self) -> None:
        """With no call running and no check queued: queue the policy's next check."""
        live = self.live
        if self.check_due or live.runtime.running:
            return
        when = live.policy.next_check(self.t)
        if when is not None:
            self.queue.push(max(when, self.t), CHECK)
            self.check_due = True
