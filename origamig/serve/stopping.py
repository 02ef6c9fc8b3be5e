"""How `origamig serve` stops: SIGTERM (systemd, Kubernetes, docker) and SIGINT (Ctrl-C) run one and
the same shutdown, and the process exits 0.

uvicorn handles both signals while it serves (it stops accepting, lets the requests under way
finish, then returns) and, once it has returned, raises the signal again for the handler that was
in place before it: the default SIGTERM handler would end the process right there, before the state
is folded and marked stopped. `StopSignals` is that earlier handler: it only notes the signal (and
tells a server that is starting to stop as soon as it has started), so the service's own cleanup
always runs.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType
from typing import Any

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
DRAIN_S = 20  # the longest a stop waits for the requests under way (their answers' deadlines are shorter)


class StopSignals:
    """SIGINT and SIGTERM noted, not obeyed at once: the server stops and the cleanup runs."""

    def __init__(self) -> None:
        self.server: Any = None
        self.received: int | None = None
        self.fault: str | None = None  # why the service stops of itself (its state file is gone)
        self._before = {sig: signal.signal(sig, self._note) for sig in STOP_SIGNALS}

    def _note(self, signum: int, frame: FrameType | None) -> None:
        if self.received is None:
            self.received = signum
        if self.server is not None:
            self.server.should_exit = True

    def attach(self, server: Any) -> None:
        """The uvicorn server to stop (at once, when a signal came while the service was starting)."""
        self.server = server
        if self.received is not None:
            server.should_exit = True

    def fail(self, reason: str) -> None:
        """Stop the service because of `reason` (the process then exits 1, saying it)."""
        print(f"origamig serve: {reason}: stopping", file=sys.stderr, flush=True)
        self.fault = reason
        if self.server is not None:
            self.server.should_exit = True

    def say_stopped(self) -> None:
        why = signal.Signals(self.received).name if self.received is not None else "its server ended"
        print(
            f"origamig serve: stopped ({why}): requests finished, optimizer worker ended, state folded "
            "and marked stopped",
            file=sys.stderr,
            flush=True,
        )

    def restore(self) -> None:
        for sig, handler in self._before.items():
            signal.signal(sig, handler)
