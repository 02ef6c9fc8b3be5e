"""One simulation: a policy driven over a request stream on the simulated clock (docs/simulator.md).

The life cycle is the runtime's (`runtime/lifecycle.py`) and so is the loop over the clock
(`runtime/loop.py`); this module pushes the requests' arrivals and their departures on the loop's
queue, pops every event in order (`runtime/events.py`), and records the metrics as the runtime's
effects:
- arrival: `Runtime.arrive` → placed now (its departure at now + lifetime), deferred (waits in the
  pending queue) or rejected.
- departure: `Runtime.depart` (its moves go with it).
- check: the policy's calls, made in this process; each solves for its wall time, or its modeled
  time in deterministic mode, holding nothing.
- call end: the call's target is adopted on the state as it is then and its plans start.
- move end: a simulated controller carries out each move's steps at its modeled end (a migration's
  copy over the PMs' 12.5 Gbit/s links, GI operations; docs/plans.md#in-time): a VM admitted by a plan
  starts then (its lifetime too), a migration is counted then.

A run can save itself between two events (`Checkpoint`: every `every_s` wall seconds, atomically) and
`resume` from that file in another process: the resumed run gives the same results as one that was
never stopped (the whole state — data center, event queue, policy, recorder — is pickled, gzipped).
"""

from __future__ import annotations

import gzip
import math
import os
import pickle
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from origamig.bilp.backends.cpu_time import cpu_seconds
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, PmSpec, VmSpec
from origamig.judge.check import check, check_counters
from origamig.policies.base import Policy, Work
from origamig.runtime.events import ARRIVAL, CALL_END, DEPARTURE
from origamig.runtime.lifecycle import CallEnd, ProtocolError, Runtime
from origamig.runtime.loop import Loop
from origamig.runtime.migration import MigrationModel, Move
from origamig.runtime.plan_run import PlanRun
from origamig.sim.energy import PowerModel
from origamig.sim.metrics import Recorder
from origamig.sim.workload import Request

PROGRESS_EVERY = 4096  # events between two progress callbacks

Progress = Callable[[float, int, int], None]  # (simulated seconds, events, calls)
Sampler = Callable[[float, DataCenter], None]  # (sample time, the state just before events at that time)


CHECKPOINT_FORMAT = 1
CHECKPOINT_EVERY_S = 600.0  # default wall seconds between two saves of a checkpointed run


@dataclass(frozen=True)
class Checkpoint:
    """Where a run saves itself, how often (wall seconds), and what it is a run of (`identity`: a
    checkpoint of anything else is not resumed)."""

    path: Path
    identity: str
    every_s: float = CHECKPOINT_EVERY_S


class SimulationError(ProtocolError):
    """A policy broke the Protocol (placed on a locked PM, produced an invalid state, ...)."""


@dataclass(frozen=True)
class RunResult:
    """The outcome of one run: metrics (`metrics.METRIC_NAMES`), policy counters, run statistics."""

    policy: str
    seed: int
    metrics: dict[str, float | None]
    counters: dict[str, float] = field(default_factory=dict)
    events: int = 0
    requests: int = 0
    calls: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0  # CPU seconds of the run on every core, its solver helper processes included
    call_stats_s: dict[str, float] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)


class Simulation:
    """One run of one policy over one request stream."""

    def __init__(
        self,
        pms: Sequence[PmSpec],
        requests: Sequence[Request],
        policy: Policy,
        warmup_s: float,
        measure_s: float,
        deterministic: bool = False,
        debug_check: bool = False,
        power: PowerModel | None = None,
        samples: Sequence[float] = (),
        on_sample: Sampler | None = None,
        initial: Sequence[tuple[Request, Placement]] = (),
        migration: MigrationModel | None = None,
    ) -> None:
        """`on_sample(t, dc)` is called once per time in `samples` (≤ the end), after every event
        before t and before any event at or after t; it must not change `dc`. `initial` are VMs
        running at t = 0 (a cluster's state), each leaving when its request's lifetime ends.
        `migration`: the rates and times of moves (docs/plans.md#in-time; default: the paper's)."""
        self.dc = DataCenter(pms)
        for req, placement in initial:
            self.dc.place(req.vm, placement)
        # The policy's life cycle (runtime/lifecycle.py) and the loop over the simulated clock
        # (runtime/loop.py), with a simulated controller; this simulation is their effects.
        self.runtime = Runtime(self.dc, policy, self, migration)
        self.loop = Loop(self.runtime, simulated_controller=True)
        self.initial = tuple(initial)
        self.samples = sorted(s for s in samples if s <= warmup_s + measure_s) if on_sample else []
        self.on_sample = on_sample
        self.requests = sorted(requests, key=lambda r: r.arrival_s)
        self.policy = policy
        self.end = warmup_s + measure_s
        self.deterministic = deterministic
        self.debug_check = debug_check
        self.rec = Recorder(self.dc, power or PowerModel(pms), warmup_s, measure_s)
        self.queue = self.loop.queue
        self.pending: dict[str, tuple[Request, float]] = {}  # deferred VM id → (request, arrival)
        self.arriving: Request | None = None  # the request being decided (for the runtime's effects)
        self.events = 0
        self.calls = 0
        self.call_stats: dict[str, float] = {}
        self.started = False
        self.next_sample = 0
        self.wall_before = 0.0  # wall seconds spent by earlier parts of a resumed run
        self.cpu_before = 0.0  # CPU seconds spent by earlier parts of a resumed run
        self.now = 0.0

    @property
    def running(self) -> list[Work]:
        """The calls solving, in start order."""
        return self.runtime.solving

    def run(self, progress: Progress | None = None, checkpoint: Checkpoint | None = None) -> RunResult:
        """Run to the end (from where a resumed run stopped); with `checkpoint`, save every `every_s`.

        `progress` hears from the run as it starts, after every call ends and every `PROGRESS_EVERY`
        events, and at the end."""
        if checkpoint is not None and self.on_sample is not None:
            raise ValueError("a run that samples its states cannot be checkpointed")
        started = saved = time.perf_counter()
        self._cpu_started = cpu_seconds()
        self._begin()
        if progress is not None:
            progress(self.now, self.events, self.calls)
        end, queue, pop = self.end, self.queue, self.queue.pop
        while queue:
            t, kind, _, payload = pop()
            if t > end:
                break
            self._sample_until(t)
            self.rec.advance(t)
            self._handle(kind, payload, t)
            self.events += 1
            self._settle(t)
            if kind == CALL_END or self.events % PROGRESS_EVERY == 0:
                if progress is not None:
                    progress(t, self.events, self.calls)
                if checkpoint is not None:
                    saved = self._save_if_due(checkpoint, t, started, saved)
        self._sample_until(math.inf)
        return self._result(progress, started)

    def _begin(self) -> None:
        """On the first call of `run`: the initial VMs' departures, the first arrival, the first check."""
        if self.started:
            return
        self.started = True
        for req, _ in self.initial:
            self.queue.push(req.lifetime_s, DEPARTURE, req.vm.id)
        if self.requests:
            self.queue.push(self.requests[0].arrival_s, ARRIVAL, 0)
        self._settle(0.0)

    def _sample_until(self, t: float) -> None:
        """Show `on_sample` every sample time up to `t`, before the events at `t`."""
        samples = self.samples
        while self.next_sample < len(samples) and samples[self.next_sample] <= t:
            self.on_sample(samples[self.next_sample], self.dc)  # type: ignore[misc]
            self.next_sample += 1

    def _handle(self, kind: int, payload: Any, t: float) -> None:
        """The handler of one event (module docstring)."""
        try:
            if kind == ARRIVAL:
                reqs = self.requests
                self._arrive(reqs[payload], t)
                if payload + 1 < len(reqs):  # arrivals enter the heap one at a time
                    self.queue.push(reqs[payload + 1].arrival_s, ARRIVAL, payload + 1)
            elif kind == DEPARTURE:
                self.runtime.depart(payload, t)
            else:
                self.loop.handle(kind, payload, t, self.runtime.check, self._call_s)
        except ProtocolError as exc:
            raise SimulationError(str(exc)) from None

    def _call_s(self, work: Work) -> float:
        """How long a call solves on the simulated clock: its modeled time in deterministic mode."""
        return work.modeled_s if self.deterministic else work.wall_s

    def _settle(self, t: float) -> None:
        """After an event: verify the state (`debug_check`), and queue the next check when idle."""
        if self.debug_check:
            self._verify(t)
        try:
            self.loop.settle(t)
        except ProtocolError as exc:
            raise SimulationError(str(exc)) from None

    def _save_if_due(self, checkpoint: Checkpoint, t: float, started: float, saved: float) -> float:
        """Save the run at `t` when `every_s` wall seconds passed since `saved`; the last save time."""
        now = time.perf_counter()
        if now - saved < checkpoint.every_s:
            return saved
        self.now = t
        self.save(checkpoint, self.wall_before + (now - started), self._cpu_so_far())
        return now

    def _cpu_so_far(self) -> float:
        return getattr(self, "cpu_before", 0.0) + (cpu_seconds() - self._cpu_started)

    def _result(self, progress: Progress | None, started: float) -> RunResult:
        """The metrics and counters of the finished run."""
        metrics = self.rec.finish()
        if progress is not None:
            progress(self.end, self.events, self.calls)
        return RunResult(
            policy=self.policy.name,
            seed=-1,
            metrics=metrics,
            counters=dict(self.policy.counters()),
            events=self.events,
            requests=sum(1 for r in self.requests if r.arrival_s <= self.end),
            calls=self.calls,
            wall_s=self.wall_before + (time.perf_counter() - started),
            cpu_s=self._cpu_so_far(),
            call_stats_s=dict(self.call_stats),
        )

    def save(self, checkpoint: Checkpoint, wall_s: float, cpu_s: float = 0.0) -> None:
        """Write the whole state between two events to `checkpoint.path` (atomically): a small
        header (identity, simulated time, wall time so far), then the state."""
        state = dict(self.__dict__, wall_before=wall_s, cpu_before=cpu_s)
        header = {"format": CHECKPOINT_FORMAT, "identity": checkpoint.identity}
        header.update(t=self.now, end=self.end, wall_s=wall_s)
        path = Path(checkpoint.path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        with gzip.open(tmp, "wb", compresslevel=3) as f:
            pickle.dump(header, f, protocol=pickle.HIGHEST_PROTOCOL)
            pickle.dump(state, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)

    @classmethod
    def resume(cls, checkpoint: Checkpoint) -> Simulation | None:
        """The run saved at `checkpoint.path`, or None when there is none, it is unreadable, or it
        is a checkpoint of another run (another identity or format). Checkpoints are pickles this
        program wrote itself: never resume one from an untrusted source."""
        header = checkpoint_header(checkpoint.path)
        if header is None or header.get("identity") != checkpoint.identity:
            return None
        try:
            with gzip.open(checkpoint.path, "rb") as f:
                pickle.load(f)
                state = pickle.load(f)
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError):
            return None
        sim = cls.__new__(cls)
        sim.__dict__.update(state)
        sim.runtime.bind(sim)  # the runtime is pickled without its effects
        return sim

    # --- handlers ------------------------------------------------------------------------------
    def _arrive(self, req: Request, t: float) -> None:
        self.rec.requested_vm(t, req.vm.memory_slices)
        self.arriving = req
        self.runtime.arrive(req.vm, t)

    # --- the runtime's effects (runtime/lifecycle.py): metrics and events ------------------------
    def placed(self, vm: VmSpec, placement: Placement, now: float) -> None:
        req = self._arriving()
        self.rec.admitted_vm(now, vm.memory_slices, 0.0)
        self.queue.push(now + req.lifetime_s, DEPARTURE, vm.id)
        self.rec.touch((placement.pm,))

    def deferred(self, vm: VmSpec, now: float) -> None:
        self.pending[vm.id] = (self._arriving(), now)

    def _arriving(self) -> Request:
        assert self.arriving is not None, "an effect of an arrival outside `_arrive`"
        return self.arriving

    def departed(self, vm_id: str, placement: Placement | None, now: float) -> None:
        if placement is not None:
            self.rec.touch((placement.pm,))

    def call_started(self, work: Work, now: float) -> None:
        self.calls += 1
        self.rec.call(now, self._call_s(work))
        for key, value in work.phases_s.items():
            self.call_stats[key] = self.call_stats.get(key, 0.0) + value

    def call_ended(self, work: Work, end: CallEnd, now: float) -> None:
        for v in end.rejected:
            del self.pending[v]

    def move_started(self, plan: PlanRun, move: Move, now: float) -> None:
        self.loop.move_started(plan, move, now)

    def vm_moved(self, plan: PlanRun, move: Move, now: float) -> None:
        self.rec.migrated(now, 1, move.network_bytes / 1e9)

    def vm_started(self, plan: PlanRun, move: Move, now: float) -> None:
        assert move.vm is not None
        req, arrived = self.pending.pop(move.vm)
        self.rec.admitted_vm(arrived, req.vm.memory_slices, now - arrived, by_plan=True)
        self.queue.push(now + req.lifetime_s, DEPARTURE, move.vm)

    def move_ended(self, plan: PlanRun, move: Move, now: float) -> None:
        started = plan.started_s[move.n]
        if move.inter_pm and started is not None:
            self.rec.links_busy(started, now, len(move.pms))

    def plan_ended(self, plan: PlanRun, now: float) -> None:
        self.rec.plan_ended(plan.created_s, now - plan.created_s)

    def touched(self, pms: Iterable[int]) -> None:
        self.rec.touch(pms)

    def _verify(self, t: float) -> None:
        problems = check(self.dc) + check_counters(self.dc)
        if problems:
            raise SimulationError(f"invalid state at t={t}: " + "; ".join(map(str, problems[:5])))


def checkpoint_header(path: Path | str) -> dict[str, Any] | None:
    """The header of a checkpoint file (identity, simulated time `t` of `end`, `wall_s` so far), or
    None when there is no readable checkpoint of this format there."""
    try:
        with gzip.open(path, "rb") as f:
            header = pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, ValueError):
        return None
    if not isinstance(header, dict) or header.get("format") != CHECKPOINT_FORMAT:
        return None
    return header
