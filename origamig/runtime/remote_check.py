"""A check made in another process (the service's optimizer worker): what is sent there, what runs
there, and how the answer is adopted — for any driver that keeps answering while a check solves.

`begin` takes what the worker needs (the policy, pickled; a copy of the state or the changes since
the worker's last one; the PMs the calls keep off) and starts recording the arrivals and departures
the driver sees meanwhile (`record`). In the worker, `run_check` asks the policy for work while it
returns some (`lifecycle.collect_calls`) on its copy. `adopt` tells the returned policy what was
recorded, in order (an arrival as one that its rule places nowhere: every PM held — the VM was
placed already), makes it the runtime's policy, and starts its calls. Solving holds nothing: the calls'
targets are adopted on the live state when they end (`Runtime.end_call`).
"""

from __future__ import annotations

import gc
import pickle
from dataclasses import dataclass, field
from typing import Any

from origamig.cluster.datacenter import DataCenter, StateChanges
from origamig.policies.base import Policy, Work
from origamig.runtime.lifecycle import Runtime, collect_calls

# In the worker: the state of its last check, as the driver sent it, and the number the driver gave
# it; the next check may come as the changes since (`DataCenter.changes_on`).
_BASE: tuple[int, DataCenter] | None = None


@dataclass(frozen=True)
class CheckRequest:
    """One check, as the driver sends it: the pickled policy, the state — whole, or the changes since
    the worker's state numbered `base` — the number of the state it makes, the time and the PMs held."""

    policy: bytes
    state: DataCenter | StateChanges
    base: int | None
    number: int
    now: float
    locked: frozenset[int]


def run_check(payload: bytes) -> bytes:
    """In the worker: one check of a pickled `CheckRequest`; the pickled (policy, calls). `None` when
    the request holds changes to a state the worker does not have (a new worker): the driver then
    sends the whole state."""
    global _BASE
    paused = gc.isenabled()
    gc.disable()  # a whole state is many objects: no collector passes over them while they are read
    try:
        request: CheckRequest = pickle.loads(payload)
        state = request.state
        if isinstance(state, StateChanges):
            if _BASE is None or _BASE[0] != request.base:
                return pickle.dumps(None)
            _BASE[1].apply_changes(state)
            state = _BASE[1]
        policy = pickle.loads(request.policy)
    finally:
        if paused:
            gc.enable()
    _BASE = (request.number, state)
    dc = state.copy()  # the check changes its copy; the state stays as sent, for the next changes
    works = collect_calls(policy, dc, request.now, request.locked)
    return pickle.dumps((policy, works), protocol=pickle.HIGHEST_PROTOCOL)


@dataclass
class Recording:
    """The arrivals and departures a driver saw while a check solved elsewhere, in order."""

    events: list[tuple[str, Any, float]] = field(default_factory=list)

    def arrived(self, vm: Any, now: float) -> None:
        self.events.append(("arrive", vm, now))

    def departed(self, vm_id: str, now: float) -> None:
        self.events.append(("depart", vm_id, now))


@dataclass(frozen=True)
class Sent:
    """What `begin` took of the runtime: the pickled policy, a copy of the state, the PMs held."""

    policy: bytes
    state: DataCenter
    locked: frozenset[int]


def begin(runtime: Runtime, now: float) -> Sent:
    """What a check at `now` sends (the state's copy is cheap: copy on write; pickle it outside any
    lock)."""
    return Sent(pickle.dumps(runtime.policy), runtime.dc.copy(), runtime.locked(now))


def adopt(runtime: Runtime, policy: Policy, works: list[Work], recording: Recording, now: float) -> None:
    """Make `policy` (the check's) the runtime's, told what `recording` saw, and start its calls at
    `now` (the check's time)."""
    every_pm = frozenset(range(len(runtime.dc.pms)))
    for kind, what, t in recording.events:
        if kind == "arrive":  # for the policy's bookkeeping only (the VM was placed): with every
            policy.arrive(runtime.dc, what, t, every_pm)  # PM held, its rule looks at none
        else:
            policy.depart(runtime.dc, what, t)
    runtime.policy = policy
    for work in works:
        runtime.start_call(work, now)
