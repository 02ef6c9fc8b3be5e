"""What the service tells its operators as it goes (docs/service.md#logs-and-metrics): one JSON line on
stderr per optimizer check and per plan event — created, step acknowledged, done, failed, aborted
(with its cause), cancelled — and, with `--access-log`, per request.

Plan events are read off the plan book itself: `PlanBook` is the service's mapping of plans, and
every change of a plan is a store of its new record there, so comparing the record before and after
tells what happened, whichever code path made the change.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from origamig.serve.plans import LivePlan, PlanStatus

_write_lock = threading.Lock()
Listener = Callable[[str, dict[str, Any]], None]  # (event, fields): the metrics count them too


class EventLog:
    """Writes one JSON object per line to `stream` (stderr), with the wall time and the event name;
    tells each listener too."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream
        self.listeners: list[Listener] = []

    def emit(self, event: str, **fields: Any) -> None:
        for listener in self.listeners:
            listener(event, fields)
        line = json.dumps({"ts": round(time.time(), 3), "event": event, **fields}, default=str)
        stream = self.stream if self.stream is not None else sys.stderr
        with _write_lock:
            stream.write(line + "\n")
            stream.flush()


EVENTS = EventLog()  # the service's one log (a process serves one state)

END_EVENTS = {
    PlanStatus.DONE: "plan.done",
    PlanStatus.FAILED: "plan.failed",
    PlanStatus.ABORTED: "plan.aborted",
    PlanStatus.CANCELLED: "plan.cancelled",
}


def plan_events(before: LivePlan | None, after: LivePlan) -> list[tuple[str, dict[str, Any]]]:
    """The events between two records of one plan: created, each step acknowledged done, and its end
    (a failed step is acknowledged `failed`, then the plan ends `failed`)."""
    out: list[tuple[str, dict[str, Any]]] = []
    if before is None:
        out.append(("plan.created", {
            "plan": after.id, "kind": str(after.kind), "steps": len(after.steps),
            "admitted": list(after.admitted), "rejected": list(after.rejected), "gain": after.gain,
        }))  # fmt: skip
        before_done = 0
    else:
        before_done = before.done
    for n in range(before_done, after.done):
        op = str(after.steps[n]["op"])
        out.append(("plan.step", {"plan": after.id, "step": n, "op": op, "result": "done"}))
    if after.status == PlanStatus.FAILED and (before is None or before.status != PlanStatus.FAILED):
        step = after.steps[after.done] if after.done < len(after.steps) else {}
        out.append(("plan.step", {"plan": after.id, "step": after.done, "op": str(step.get("op", "")),
                                  "result": "failed"}))  # fmt: skip
    ended = before is None or before.status == PlanStatus.RUNNING
    if after.status != PlanStatus.RUNNING and ended:
        fields: dict[str, Any] = {"plan": after.id, "steps_done": after.done, "steps": len(after.steps)}
        if after.status == PlanStatus.ABORTED:
            fields["cause"] = str(after.cause)
        if after.reason:
            fields["reason"] = after.reason
        out.append((END_EVENTS[after.status], fields))
    return out


class PlanBook(dict[int, LivePlan]):
    """The service's plans by id: a mapping that logs each plan event as the plan is stored."""

    def __init__(self, plans: Iterable[tuple[int, LivePlan]] = (), log: EventLog = EVENTS) -> None:
        super().__init__(plans)  # plans read back from the store: no event
        self.log = log

    def __setitem__(self, plan_id: int, plan: LivePlan) -> None:
        before = self.get(plan_id)
        super().__setitem__(plan_id, plan)
        for event, fields in plan_events(before, plan):
            self.log.emit(event, **fields)
