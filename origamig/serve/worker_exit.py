"""How the optimizer's worker process ends with the service: cleanly, so that nothing is left behind.

A worker killed outright leaves what it registered with multiprocessing's resource tracker (the
solver's imports make a semaphore), and the tracker then warns of "leaked semaphore objects" as the
service exits. So the service asks first: the pool is told to shut down (each idle worker reads its
end and returns), then each worker gets SIGTERM, which ends a check under way (`SystemExit` in the
worker, reported back as the check's failure) or an idle wait; only a worker still there after
`wait_s` (a frozen one) is killed.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from concurrent.futures import ProcessPoolExecutor
from types import FrameType

WORKER_EXIT_WAIT_S = 5.0  # how long a worker asked to end may take before it is killed


def _exit_now(signum: int, frame: FrameType | None) -> None:
    sys.exit(0)


def exit_cleanly_on_sigterm() -> None:
    """In a worker process: make SIGTERM an ordinary exit (finalizers run), not the default death."""
    signal.signal(signal.SIGTERM, _exit_now)


def end_workers(pool: ProcessPoolExecutor, wait_s: float = WORKER_EXIT_WAIT_S) -> None:
    """End `pool`'s worker processes: asked to end, then SIGTERM, then killed after `wait_s`."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(Exception):
            process.terminate()
    for process in processes:
        with contextlib.suppress(Exception):
            process.join(wait_s)
            if process.is_alive():
                process.kill()
                process.join(1.0)
