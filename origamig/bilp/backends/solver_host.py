"""The helper process that runs solves for `deadline.py`.

Started as `python -m origamig.bilp.backends.solver_host PARENT_PID SOLVER`.

Once it has imported the solver and the standard form's module it says "ready"; then it reads
requests on stdin and writes answers on stdout, both as `multiprocessing.connection`
messages, one solve at a time, until stdin closes. A request is `(backend name, Compiled, hint,
Limits, epoch deadline or inf)`; the answer is the `SolveResult`, or a `HelperFailed` when the
solver raised. The process's own fd 1 is muted first: native solver banners must not reach the protocol
(or the parent's output). If its parent dies, it exits within a second, even in the middle of a solve.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import threading
import time
from multiprocessing.connection import Connection
from typing import Any

from origamig.bilp.backends import base

READY = "ready"  # what the helper says once its solver is imported
SEND_MARGIN_S = 0.1  # a limited solve stops this long before the deadline, to send its answer in time
ORPHAN_CHECK_S = 1.0  # how often the process checks that its parent is still alive


def answer(request: tuple[Any, ...]) -> base.HelperAnswer:
    """The answer to one request: the solve within what is left of the time, or the solver's error."""
    backend_name, compiled, hint, limits, epoch_deadline = request
    if math.isfinite(epoch_deadline):
        remaining = max(0.01, epoch_deadline - time.time() - SEND_MARGIN_S)
        limits = dataclasses.replace(limits, time_limit_s=remaining)
    try:
        return base.get_backend(backend_name).solve_in_process(compiled, hint, limits)
    except Exception as exc:  # reported to the parent as the solver's error
        return base.HelperFailed(f"{exc.__class__.__name__}: {exc}")


def _exit_when_orphaned(parent: int) -> None:
    while True:
        time.sleep(ORPHAN_CHECK_S)
        if os.getppid() != parent:
            os._exit(1)


def serve(parent: int, backend_name: str) -> None:
    """Answer requests from stdin on a private copy of stdout until stdin closes or `parent` dies.
    `backend_name` and the standard form's module are imported first; then "ready" is sent."""
    receive = Connection(os.dup(0), writable=False)
    send = Connection(os.dup(1), readable=False)
    with open(os.devnull, "wb") as null:
        os.dup2(null.fileno(), 0)
        os.dup2(null.fileno(), 1)
    threading.Thread(target=_exit_when_orphaned, args=(parent,), daemon=True).start()
    import origamig.bilp.standard_form  # noqa: F401  (what a request unpickles into)

    base.get_backend(backend_name).available()  # imports the vendor package
    try:
        send.send(READY)
        while True:
            send.send(answer(receive.recv()))
    except (EOFError, BrokenPipeError):  # the caller closed the pipes or exited
        return


if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.argv[2])
