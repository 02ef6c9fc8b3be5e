"""Solving one check's side-by-side calls at once, in worker processes.

With `calls_per_step` > 1 a check chooses its calls one after another on disjoint PMs; with
`solve_workers` > 1 it then solves them together, one call per worker at a time, and hands them to the
driver in the order chosen. A call is a function of the state, its neighborhood and the options (with
a deterministic budget, of nothing else), so the results are those of solving the calls in turn; only
the wall clock differs (docs/policies.md#extensions).

The state is pickled once per check; a worker unpickles it once per check however many of its calls
it solves. Workers are spawned once per process and pool size and kept for later checks and runs
(`shared_pool`). A daemonic process (a Dask worker) may not have children, and a script whose top
level is not guarded by `if __name__ == "__main__":` breaks spawned workers: there the calls are
solved in turn, with a warning (the same results).
"""

from __future__ import annotations

import atexit
import multiprocessing
import pickle
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from itertools import count
from typing import Any

from origamig.cluster.datacenter import DataCenter
from origamig.policies.base import Work


@dataclass(frozen=True)
class CallJob:
    """One chosen call to solve: `solve(dc, *arguments)` on the check's state `dc`."""

    solve: Callable[..., Work]
    arguments: tuple[Any, ...]


def solve_calls(dc: DataCenter, jobs: Sequence[CallJob], workers: int) -> list[Work]:
    """Each job's Work, in the jobs' order: in `workers` processes when there are several jobs."""
    pool = shared_pool(workers) if workers > 1 and len(jobs) > 1 else None
    if pool is None:
        return _in_turn(dc, jobs)
    state = (next(_CHECKS), pickle.dumps(dc, protocol=pickle.HIGHEST_PROTOCOL))
    try:
        return list(pool.map(_solve_in_worker, [state] * len(jobs), jobs))
    except BrokenProcessPool:
        _POOLS.pop(workers, None)
        _warn_once(
            "solve_workers: a worker process ended before it answered (a script that starts a run "
            'must guard its top level with `if __name__ == "__main__":`, as every program using '
            "spawned processes must); side-by-side calls are solved in turn from now on"
        )
        _BROKEN.append(True)
        return _in_turn(dc, jobs)


def _in_turn(dc: DataCenter, jobs: Sequence[CallJob]) -> list[Work]:
    return [job.solve(dc, *job.arguments) for job in jobs]


_CHECKS = count()  # numbers each check's pickled state, so that a worker unpickles it once
_POOLS: dict[int, Executor] = {}
_WARNED: list[bool] = []
_BROKEN: list[bool] = []  # a pool broke in this process: solve in turn from then on


def _warn_once(message: str) -> None:
    if not _WARNED:
        _WARNED.append(True)
        warnings.warn(message, RuntimeWarning, stacklevel=4)


def shared_pool(workers: int) -> Executor | None:
    """This process's pool of `workers` spawned processes (made on first use, shut down at exit), or
    None in a daemonic process."""
    if _BROKEN:
        return None
    if multiprocessing.current_process().daemon:
        _warn_once(
            "solve_workers: a daemonic process (a Dask worker) cannot start worker processes; "
            "side-by-side calls are solved in turn (the same results, more wall time)"
        )
        return None
    if workers not in _POOLS:
        context = multiprocessing.get_context("spawn")
        _POOLS[workers] = ProcessPoolExecutor(max_workers=workers, mp_context=context)
    return _POOLS[workers]


@atexit.register
def _shut_down() -> None:
    for pool in _POOLS.values():
        pool.shutdown(wait=False, cancel_futures=True)
    _POOLS.clear()


_STATE: dict[str, Any] = {}  # in a worker: the check number and state it last unpickled


def _solve_in_worker(state: tuple[int, bytes], job: CallJob) -> Work:
    number, data = state
    if _STATE.get("number") != number:
        _STATE.update(number=number, dc=pickle.loads(data))
    return job.solve(_STATE["dc"], *job.arguments)
