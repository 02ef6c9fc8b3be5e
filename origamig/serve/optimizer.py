"""The background optimizer: the policy's periodic work on the live state, in a worker process.

At each time the policy asks for (`next_check`), when no call is running, the policy and a copy of
the state are sent to a worker process, which asks the policy for work while it returns some
(`runtime.collect_calls`: Algorithm 1's triggers, the neighborhood, the restricted BILP, the executor;
with `calls_per_step` > 1 several calls on disjoint PMs) and sends back the policy and its calls. The
API keeps answering meanwhile; the arrivals and departures it saw are told to the returned policy
(`Live.adopt`), and each applied call becomes a plan the VM platform runs step by step. As in the
simulator, no check is made while a call runs.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import queue
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from origamig.policies.base import Work
from origamig.policies.runtime import collect_calls
from origamig.serve.live import Live

IDLE_POLL_S = 1.0  # how often a waiting optimizer looks again (a plan running, a check not due)
SELECT_POLL_S = 0.05  # how often the optimizer looks for the PMs of a call the worker chose
PARENT_POLL_S = 1.0  # how often the worker looks whether the service still runs


def _exit_with(parent: int) -> None:
    """In the worker: end it once the service's process is gone (killed, even by SIGKILL), instead
    of waiting forever on a queue that nobody writes to any more."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(0)

    threading.Thread(target=watch, name="origamig-parent-watch", daemon=True).start()


_SELECTED: Any = None  # in the worker: where it tells the service each call's PMs (`_start_worker`)


def _start_worker(parent: int, selected: Any) -> None:
    """In the worker, once: end it with the service (`_exit_with`), and keep the queue on which it
    tells the service the PMs of each call it chose, before it solves."""
    global _SELECTED
    _SELECTED = selected
    _exit_with(parent)


def run_check(payload: bytes) -> bytes:
    """In the worker: one check of the pickled (policy, state, now, locked) — the policy asked for
    work while it returns some (`runtime.collect_calls`), each call's PMs told to the service as
    soon as they are chosen; the policy and its calls."""
    raw_policy, dc, now, locked = pickle.loads(payload)
    policy = pickle.loads(raw_policy)
    if hasattr(policy, "on_select") and _SELECTED is not None:
        policy.on_select = _SELECTED.put
    works = collect_calls(policy, dc, now, locked)
    if hasattr(policy, "on_select"):
        policy.on_select = None
    return pickle.dumps((policy, works), protocol=pickle.HIGHEST_PROTOCOL)


class Optimizer:
    """A thread that makes the policy's checks, each in the worker process."""

    def __init__(self, live: Live) -> None:
        self.live = live
        self.stopping = threading.Event()
        context = multiprocessing.get_context("spawn")
        self.selected = context.Queue()  # the PMs of each call the worker chose, before it solves
        self.pool = ProcessPoolExecutor(
            max_workers=1,
            mp_context=context,
            initializer=_start_worker,
            initargs=(os.getpid(), self.selected),
        )
        self.thread = threading.Thread(target=self._loop, name="origamig-optimizer", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=30)
        self.pool.shutdown(wait=False, cancel_futures=True)

    def _loop(self) -> None:
        live = self.live
        due: float | None = None
        while not self.stopping.is_set():
            live.expire()  # a plan whose next step waited too long is aborted: its PMs are free
            with live.lock:
                if due is None and not live.runtime.running:
                    due = live.policy.next_check(live.now())
            wait = IDLE_POLL_S if due is None else min(max(due - live.now(), 0.0), IDLE_POLL_S)
            if self.stopping.wait(wait) or due is None or live.now() < due:
                continue
            try:
                self.check(due)
            except Exception as exc:  # a failed call is reported and the next check comes as usual
                print(f"origamig serve: optimizer check failed: {exc!r}", file=sys.stderr, flush=True)
            due = None

    def check(self, now: float, hold: bool = False) -> list[Work]:
        """One check at time `now`: the worker decides, the live state adopts ([] when a call runs: no
        check while one does, as in the simulator). `hold`: a replay's calls without a plan keep their
        PMs for their modeled time and are returned (`Live.adopt`)."""
        live = self.live
        with live.lock:
            if live.runtime.running:
                return []
            policy = pickle.dumps(live.policy)  # small; the state's copy is pickled outside the lock
            dc, locked = live.dc.copy(), live.locked
            live.recording = []
        payload = pickle.dumps((policy, dc, now, locked))
        try:
            future = self.pool.submit(run_check, payload)
            self._hold_while_solving(future)
            policy, works = pickle.loads(future.result())
        except BaseException:
            with live.lock:
                live.recording = None
                live.runtime.release_solving()
            raise
        with live.writing, live.lock:
            live.runtime.release_solving()
            return live.adopt(policy, works, now, hold)

    def _hold_while_solving(self, future: Any) -> None:
        """While the worker solves, hold the PMs of each call it chose (arrivals keep off them)."""
        live = self.live
        while not future.done() or not self.selected.empty():
            try:
                pms = self.selected.get(timeout=SELECT_POLL_S)
            except queue.Empty:
                continue
            with live.lock:
                live.runtime.hold_solving(frozenset(pms))
