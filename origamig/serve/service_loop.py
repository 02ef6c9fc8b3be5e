"""The runtime's loop (`runtime/loop.py`) on the service's clocks: the wall clock's optimizer thread
and a replay's client both run the events that are due with `run_due`.

An event other than a check runs under the live state's locks and is committed at once. A check is
made in the optimizer's worker process (`Optimizer.check`): the locks are free while it solves (the
API goes on answering; what it sees is recorded and told to the policy the check returns), and its
calls end after their solve — on the wall clock when the worker answers, on a replay's clock at
their modeled time.
"""

from __future__ import annotations

from collections.abc import Callable

from origamig.policies.base import Work
from origamig.runtime.events import CHECK
from origamig.serve.live import Live

Due = Callable[[float, int], bool]  # (event time, kind) → run it now?


def run_due(
    live: Live,
    due: Due,
    now: Callable[[], float],
    check: Callable[[float], list[Work]],
    solve_s: Callable[[Work, float], float],
    stop_after_plans: bool = False,
) -> list[int]:
    """Run every event `due` says is due (in the runtime's order), the next check queued after each;
    the ids of the plans made. `solve_s(work, t)`: how long a call of the check at t solves on this
    clock. With `stop_after_plans`, stop after the first event that made plans."""
    made: list[int] = []
    while True:
        with live.writing:
            with live.lock:
                loop, generation = live.loop, live.generation  # a fleet read anew has a loop of its own
                loop.settle(now())
                head = loop.queue.peek()
                if head is None or not due(*head):
                    return made
                when, kind, _, payload = loop.queue.pop()
                t = max(when, now())
                if kind != CHECK:
                    before = set(live.plans)
                    loop.handle(kind, payload, t, check, lambda w: 0.0)
                    loop.settle(t)
                    made += sorted(set(live.plans) - before)
            if kind != CHECK:
                live.commit()
                if made and stop_after_plans:
                    return made
                continue
        works = check(t)  # in the worker, the locks free meanwhile
        ends = {id(w): solve_s(w, t) for w in works}
        with live.writing:
            with live.lock:
                if live.generation != generation:  # the check was dropped; the new loop has its own
                    continue
                loop.checked(t, works, _lookup(ends))
                loop.settle(now())
            live.commit()


def _lookup(durations: dict[int, float]) -> Callable[[Work], float]:
    """A call's duration from a table made before the locks were taken (by the call's identity)."""
    return lambda work: durations[id(work)]
