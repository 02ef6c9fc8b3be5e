"""What the service tells its operators as it goes (docs/service.md#logs-and-metrics): one JSON line on
stderr per optimizer check and per plan event — created, step acknowledged, done, failed, aborted
(with its cause), cancelled — and, with `--access-log`, per request.

Plan events are told by the live state's effects as the runtime makes them (a plan adopted, a plan
ended) and by the plans' desk as the platform reports steps (`serve/plan_desk.py`).
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from origamig.runtime.plan_run import PlanRun, PlanStatus

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


def plan_created(run: PlanRun, log: EventLog = EVENTS) -> None:
    log.emit(
        "plan.created",
        plan=run.id,
        kind=str(run.kind),
        steps=len(run.steps),
        moves=sum(1 for m in run.moves if m.vm is not None),
        admitted=list(run.admitted),
        rejected=list(run.rejected),
        gain=run.gain,
    )


def plan_step(run: PlanRun, n: int, result: str, late: bool = False, log: EventLog = EVENTS) -> None:
    fields: dict[str, Any] = {"plan": run.id, "step": n, "op": str(run.steps[n].op), "result": result}
    log.emit("plan.step", **(fields | ({"late": True} if late else {})))


def plan_ended(run: PlanRun, log: EventLog = EVENTS) -> None:
    done = sum(run.acked)
    fields: dict[str, Any] = {"plan": run.id, "steps_done": done, "steps": len(run.steps)}
    if run.status == PlanStatus.ABORTED:
        fields["cause"] = str(run.cause)
    if run.reason:
        fields["reason"] = run.reason
    log.emit(END_EVENTS[run.status], **fields)
