"""The background optimizer: the policy's periodic work on the live state, in a worker process.

Its thread runs the runtime's loop on the wall clock (`service_loop.run_due`): at each time the
policy asks for (`next_check`), when no call is solving, a check is made in a worker process
(`runtime/remote_check.py`) — the whole state sent once, then what changed since the worker's last
check (`DataCenter.changes_on`: the PMs the live state's journal names) — which asks the policy for
work while it returns some (Algorithm 1's triggers, the neighborhood, the restricted BILP, the
executor; with `calls_per_step` > 1 several calls on disjoint PMs) and sends back the policy and its
calls. The API keeps answering meanwhile, and solving holds nothing: the arrivals and departures it
saw are told to the returned policy, and each call's target is adopted on the live state as it is
when the worker answers (`Runtime.end_call`): its parts become plans the VM platform runs step by
step. The thread also aborts plans whose steps wait past the step timeout.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import multiprocessing
import os
import pickle
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

from origamig.policies.base import Work
from origamig.runtime import remote_check
from origamig.runtime.remote_check import CheckRequest, Recording, run_check
from origamig.serve.events_log import EVENTS
from origamig.serve.live import Live
from origamig.serve.plan_desk import PlanDesk
from origamig.serve.service_loop import run_due
from origamig.serve.worker_exit import end_workers, exit_cleanly_on_sigterm

STUCK_AFTER_S = 900.0  # a check still solving after this long is killed, its worker replaced
LOG_REPEAT_S = 60.0  # the same log line at most once a minute
STARTING, IDLE, SOLVING, STOPPED = "starting", "idle", "solving", "stopped"
IDLE_POLL_S = 1.0  # how often a waiting optimizer looks again (a plan running, a check not due)
POLL_S = 0.05  # how often the optimizer looks whether the worker answered
PARENT_POLL_S = 1.0  # how often the worker looks whether the service still runs


def _exit_with(parent: int) -> None:
    """In the worker: end it once the service's process is gone (killed, even by SIGKILL), instead
    of waiting forever on a queue that nobody writes to any more."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(0)

    threading.Thread(target=watch, name="origamig-parent-watch", daemon=True).start()


def _start_worker(parent: int) -> None:
    """In the worker, once: end it with the service (`_exit_with`)."""
    _exit_with(parent)
    exit_cleanly_on_sigterm()


@dataclass
class OptimizerStatus:
    """What the optimizer is doing and has done (`GET /v1/status`, `GET /readyz`)."""

    state: str = STARTING  # starting, idle, solving, stopped; off (--optimizer off); replay (on its clock)
    checks: int = 0  # checks that ended (with or without calls)
    failed_checks: int = 0
    restarts: int = 0  # workers replaced (died, or stuck past the limit)
    last_check_s: float | None = None  # wall time the last check ended
    solving_since_s: float | None = None  # wall time the running check began
    worker_pid: int | None = None
    last_error: str = ""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class Optimizer:
    """A thread that makes the policy's checks, each in a worker process it supervises: a worker
    that dies is replaced and the check made again; one that solves past `stuck_after_s` is killed
    and replaced (the check counts as failed)."""

    def __init__(self, live: Live, stuck_after_s: float = STUCK_AFTER_S) -> None:
        self.live = live
        self.stuck_after_s = stuck_after_s
        self.stopping = threading.Event()
        self.status = OptimizerStatus()
        self.context = multiprocessing.get_context("spawn")
        self.pool: ProcessPoolExecutor | None = None
        self.thread = threading.Thread(target=self._loop, name="origamig-optimizer", daemon=True)
        self.looping = False  # the loop was started (not with --optimizer off, nor in a replay)
        self.resting = IDLE  # its state between checks
        self._last_logged = ("", 0.0)
        # The state the worker holds (the live journal, how far it was read, the state's number): the
        # next check sends the changes since; None: send the whole state.
        self._sent: tuple[list[int], int, int] | None = None
        self._numbers = itertools.count(1)

    def _new_worker(self) -> ProcessPoolExecutor:
        """A fresh worker process (and queue: a killed worker may have left the old one locked)."""
        old = self.pool
        self._sent = None  # a new worker holds no state
        if old is not None:
            _kill_workers(old)
            old.shutdown(wait=False, cancel_futures=True)
        self.pool = ProcessPoolExecutor(
            max_workers=1, mp_context=self.context, initializer=_start_worker, initargs=(os.getpid(),)
        )
        status = self.status
        status.worker_pid = None  # known once the new worker runs (it starts in the background)
        self.pool.submit(os.getpid).add_done_callback(
            lambda done: setattr(status, "worker_pid", done.result()) if done.exception() is None else None
        )
        return self.pool

    def start(self) -> None:
        """Start the worker and the loop (the worker is started before the first check is due)."""
        self._new_worker()
        self.status.state = IDLE
        self.looping = True
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        if self.thread.is_alive():
            self.thread.join(timeout=30)
        if self.pool is not None:
            end_workers(self.pool)  # asked to end, not killed: nothing is left behind
        self.status.state = STOPPED

    def without_loop(self, state: str) -> None:
        """No checks of its own: none at all (`off`), or only those a replay asks for (`replay`)."""
        self.resting = self.status.state = state

    def alive(self) -> bool:
        """The loop runs (or was never meant to: `--optimizer off`, a replay)."""
        return not self.looping or self.thread.is_alive()

    def stuck(self, now: float) -> bool:
        """The running check has solved for longer than twice the limit (the supervisor failed)."""
        since = self.status.solving_since_s
        return since is not None and now - since > 2 * self.stuck_after_s

    def _loop(self) -> None:
        live = self.live
        desk = PlanDesk(live)
        while not self.stopping.is_set():
            try:
                desk.expire()  # plans whose steps waited too long are aborted
                run_due(live, lambda t, kind: t <= live.now(), live.now, self.check, self._solved_s)
                head = live.loop.queue.peek_time()
                wait = IDLE_POLL_S if head is None else min(max(head - live.now(), 0.0), IDLE_POLL_S)
                self.stopping.wait(wait)
            except Exception as exc:  # reported; the next check comes as usual
                if not self.stopping.is_set():
                    self._log(f"optimizer check failed: {exc!r}")
                self.stopping.wait(IDLE_POLL_S)

    def _solved_s(self, work: Work, t: float) -> float:
        """On the wall clock a call has solved when the worker answered: now."""
        return self.live.now() - t

    def _log(self, line: str) -> None:
        """One line on stderr; the same line again at most once a minute (no log flood)."""
        self.status.last_error = line
        last, when = self._last_logged
        now = time.monotonic()
        if line != last or now - when > LOG_REPEAT_S:
            print(f"origamig serve: {line}", file=sys.stderr, flush=True)
            self._last_logged = (line, now)

    def check(self, now: float) -> list[Work]:
        """One check at time `now`: the worker decides on a copy, the live state adopts (the returned
        policy, told what happened meanwhile; its calls started). A worker that died is replaced and
        the check made once more."""
        live = self.live
        with live.lock:
            generation = live.generation
            sent = remote_check.begin(live.runtime, now)
            journal = live.dc.journal()
            read = len(journal)
            last = self._sent
            changed = journal[last[1] :] if last is not None and last[0] is journal else None
            recording = live.recording = Recording()
        number = next(self._numbers)

        def request(whole: bool) -> bytes:
            dc, policy, locked = sent.state, sent.policy, sent.locked
            if whole or changed is None or last is None:
                return pickle.dumps(CheckRequest(policy, dc, None, number, now, locked))
            return pickle.dumps(CheckRequest(policy, dc.changes_on(changed), last[2], number, now, locked))

        self.status.state, self.status.solving_since_s = SOLVING, time.time()
        try:
            try:
                result = self._solve(request(whole=False))
            except BrokenProcessPool:
                self._replace("the optimizer's worker died")
                result = self._solve(request(whole=True))
            answer = pickle.loads(result)
            if answer is None:  # the worker has not the state the changes apply to
                answer = pickle.loads(self._solve(request(whole=True)))
            policy, works = answer
            self._sent = (journal, read, number)
        except BaseException as exc:
            with live.lock:
                live.recording = None
            self._ended(failed=True)
            if isinstance(exc, BrokenProcessPool):
                self._replace("the optimizer's worker died again")
            raise
        try:
            with live.writing, live.lock:
                if live.generation != generation:  # the fleet was read anew: PMs are numbered anew
                    self._log("a server was removed while a check solved: its calls are dropped")
                    return []
                live.recording = None
                remote_check.adopt(live.runtime, policy, works, recording, now)
            return works
        finally:
            self._ended(failed=False)

    def _solve(self, payload: bytes) -> bytes:
        """The worker's answer to one check; a worker still solving after `stuck_after_s` is killed
        (`CheckTimeout`)."""
        pool = self.pool if self.pool is not None else self._new_worker()
        future = pool.submit(run_check, payload)
        deadline = time.monotonic() + self.stuck_after_s
        while not future.done() and time.monotonic() < deadline and not self.stopping.is_set():
            time.sleep(POLL_S)
        if not future.done() and self.stopping.is_set():
            raise CheckTimeout("the service is stopping")
        if not future.done():
            self._replace(f"a check ran past {self.stuck_after_s:g} s")
            raise CheckTimeout(f"a check ran past {self.stuck_after_s:g} s; its worker was replaced")
        return future.result()

    def _replace(self, why: str) -> None:
        self._log(f"{why}: starting a new worker")
        self.status.restarts += 1
        self._new_worker()

    def _ended(self, failed: bool) -> None:
        status = self.status
        began = status.solving_since_s
        EVENTS.emit("check", ok=not failed, duration_s=round(time.time() - began, 3) if began else 0.0,
                    error=status.last_error if failed else "")  # fmt: skip
        status.checks += 1
        status.failed_checks += failed
        status.last_check_s, status.solving_since_s = time.time(), None
        if status.state == SOLVING:
            status.state = self.resting


class CheckTimeout(RuntimeError):
    """A check whose worker solved for longer than the optimizer allows."""


def _kill_workers(pool: ProcessPoolExecutor) -> None:
    """End the pool's worker processes now (a stuck solver does not stop when asked)."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        with contextlib.suppress(Exception):
            process.kill()
