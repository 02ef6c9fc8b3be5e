"""The event heap of every clock (simulated, a replay's, the wall's): timestamped events keyed on
(time, kind priority, counter).

Same-time order, written once here: at equal times events run in the order of their kind's
priority, and events of one kind in the order they were pushed (the counter).

1. `CALL_END`  — a call's solve ends: its plan is adopted (its moves may start at once).
2. `STEP_END`  — a move of a plan ends (the controller acknowledged its steps): its VM is at its
   destination and what it held at the source is free before departures and arrivals look.
3. `DEPARTURE` — departures free resources before arrivals at the same instant need them.
4. `ARRIVAL`   — a new request meets the state left by the departures and the moves.
5. `CHECK`     — the policy's periodic check (OrigaMIG's 10-s check, TC's compaction timer) sees
   the arrivals of that instant (a request deferred at t can be admitted by a call started at t).
6. `SAMPLE`    — a metric sample observes the state after every other event of its instant.

Samples are not pushed on the heap: the metric recorder takes them lazily (before an event at
time t it takes every sample at a time < t), which gives exactly the order above at O(1) cost.
(The snapshot hook `Simulation(on_sample=...)` is different: it sees the state *before* the
events of its instant.)
"""

from __future__ import annotations

import heapq
from typing import Any

CALL_END = 0
STEP_END = 1
DEPARTURE = 2
ARRIVAL = 3
CHECK = 4
SAMPLE = 5


class EventQueue:
    """A min-heap of `(time, kind, counter, payload)` tuples."""

    __slots__ = ("_counter", "_heap")

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, int, Any]] = []
        self._counter = 0

    def push(self, time: float, kind: int, payload: Any = None) -> None:
        self._counter += 1
        heapq.heappush(self._heap, (time, kind, self._counter, payload))

    def pop(self) -> tuple[float, int, int, Any]:
        return heapq.heappop(self._heap)

    def peek_time(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def peek(self) -> tuple[float, int] | None:
        """The time and kind of the next event (None when there is none)."""
        return self._heap[0][:2] if self._heap else None

    def __len__(self) -> int:
        return len(self._heap)

    def __bool__(self) -> bool:
        return bool(self._heap)
