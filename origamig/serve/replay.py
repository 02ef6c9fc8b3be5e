"""Replay mode (`origamig serve --clock replay`, docs/service.md#replaying-a-request-log): the client
sets the clock, and the service runs the runtime's events at the simulated times the simulator would
— on the runtime's own loop and event queue (`runtime/loop.py`, `runtime/events.py`), so that the
same-time order is the simulator's: at one instant call ends and move ends come before departures
and arrivals (the client's), and checks after them.

`advance(t)` runs every call end and move end at or before t and every check strictly before t (a
check at t sees the client's arrivals at t, so it runs when the clock next moves past t). A check is
the one the wall-clock optimizer makes — the policy's calls in the worker process — and its calls end
at their modeled time. With `--controller simulated` the service carries out each move's steps at its
modeled end, as the simulator does; with the platform as controller (the default) the client
acknowledges them, and `advance` stops after the first event that made plans so that it can.
"""

from __future__ import annotations

from dataclasses import dataclass

from origamig.errors import UserError
from origamig.runtime.events import CALL_END, STEP_END
from origamig.serve.live import SIMULATED, Live
from origamig.serve.optimizer import Optimizer
from origamig.serve.service_loop import run_due


@dataclass(frozen=True)
class Advanced:
    """Where the clock got to, the plans made on the way, and when the next event of the service is."""

    now: float
    plans: tuple[int, ...]
    next_s: float | None
    started: tuple[tuple[str, float], ...] = ()  # VMs plans started on the way, and when


class ReplayClock:
    """Simulated seconds, moved forward by the client only."""

    def __init__(self, live: Live, optimizer: Optimizer) -> None:
        self.live = live
        self.optimizer = optimizer
        self.t = 0.0
        live.now = lambda: self.t
        live.started_log = []

    def advance(self, t: float) -> Advanced:
        """Move the clock towards `t`: to `t`, or — with the platform as controller, when an event made
        plans — to that event's time (the client acknowledges their steps and moves on from there)."""
        if not t >= self.t:
            raise UserError(f"now: {t!r} is before the clock ({self.t!r}); a replay only moves forward")
        live = self.live

        def due(when: float, kind: int) -> bool:
            return when < t or (when == t and kind in (CALL_END, STEP_END))

        def clock() -> float:
            return self.t

        def moved(when: float, kind: int) -> bool:
            if due(when, kind):
                self.t = max(self.t, when)
                return True
            return False

        stop = live.controller != SIMULATED
        made = run_due(live, moved, clock, self.optimizer.check, lambda work, _: work.modeled_s, stop)
        if not (made and stop):
            self.t = t
        with live.lock:
            live.loop.settle(self.t)
            started, live.started_log = tuple(live.started_log or ()), []
            return Advanced(self.t, tuple(made), live.loop.queue.peek_time(), started)
