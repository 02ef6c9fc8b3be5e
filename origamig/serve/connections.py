"""Bounded connections (docs/service.md#faults-and-limits): the service's HTTP protocol closes a
connection that takes longer than `request_timeout_s` to deliver a whole request (from the moment it
connected or its last answer was sent: an idle keep-alive connection, a client that trickles its
headers or its body), and keeps at most `max_connections` open — a new connection beyond that
closes the longest-idle ones, so an idle crowd cannot keep a health probe or kube-scheduler out. The
process's open-file limit is raised to the hard limit at start, and the cap is set below it.
"""

from __future__ import annotations

import logging
import resource
import time
from typing import Any

from origamig.serve.tls import ClientCertProtocol

RESERVED_FILES = 64  # open files kept for the state, the worker, the log
ACCEPT_BACKLOG = 64  # connections the kernel queues (and asyncio accepts in one go)
MAX_CONNECTIONS = 4096


def raise_open_file_limit() -> int:
    """Raise this process's open-file limit to its hard limit; the limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= soft:
        return soft
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError):
        return soft  # the kernel refused: the limit in force stays
    return target


def connection_cap(open_files: int) -> int:
    """The most connections kept open under an open-file limit (room left for the rest)."""
    return max(8, min(MAX_CONNECTIONS, open_files - RESERVED_FILES - ACCEPT_BACKLOG))


class BoundedProtocol(ClientCertProtocol):
    """uvicorn's h11 protocol with a deadline for each request and a cap on open connections."""

    max_connections = MAX_CONNECTIONS
    request_timeout_s: float  # set by `bounded_protocol`

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._deadline: Any = None
        self._arm()
        if len(self.connections) > self.max_connections:
            self._make_room()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request has its own deadline

    def _arm(self) -> None:
        self._disarm()
        self.idle_since = time.monotonic()
        self._deadline = self.loop.call_later(self.request_timeout_s, self._on_deadline)

    def _disarm(self) -> None:
        if getattr(self, "_deadline", None) is not None:
            self._deadline.cancel()
            self._deadline = None

    def busy(self) -> bool:
        """A whole request was read and its answer is being made."""
        cycle = self.cycle
        return cycle is not None and not cycle.more_body and not cycle.response_complete

    def _on_deadline(self) -> None:
        self._deadline = None
        if not self.busy() and not self.transport.is_closing():
            self.transport.close()

    def _make_room(self) -> None:
        """Close the longest-idle connections until the cap holds (this one, if every other is busy)."""
        idle = sorted(
            (
                c
                for c in self.connections
                if c is not self and isinstance(c, BoundedProtocol) and not c.busy()
            ),
            key=lambda c: c.idle_since,
        )
        excess = len(self.connections) - self.max_connections
        for other in idle[:excess]:
            other.transport.close()
            self.connections.discard(other)
        if len(self.connections) > self.max_connections:
            self.transport.close()
            self.connections.discard(self)


def bounded_protocol(max_connections: int, request_timeout_s: float) -> type[BoundedProtocol]:
    """The protocol class with these bounds."""
    return type(
        "ServiceProtocol",
        (BoundedProtocol,),
        {"max_connections": max_connections, "request_timeout_s": request_timeout_s},
    )


class RepeatFilter(logging.Filter):
    """Let a log message through at most once per `every_s` seconds (asyncio's accept errors, uvicorn's
    warnings about bad requests: a hostile client cannot flood the log)."""

    def __init__(self, every_s: float = 60.0) -> None:
        super().__init__()
        self.every_s = every_s
        self.last: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = f"{record.name}:{record.msg}"[:200]
        now = time.monotonic()
        if now - self.last.get(key, -self.every_s) < self.every_s:
            return False
        self.last[key] = now
        return True


def quiet_repeats() -> None:
    """Rate-limit the loggers a hostile client can make talk."""
    for name in ("asyncio", "uvicorn.error"):
        logging.getLogger(name).addFilter(RepeatFilter())
