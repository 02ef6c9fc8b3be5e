"""Bounded connections (docs/service.md#faults-and-limits). The service's HTTP protocol (uvicorn's h11
protocol, configured and extended, not copied):

- **a deadline to read each request**: `request_timeout_s` from connecting or from the last answer to
  deliver a whole request (an idle keep-alive connection, a client that trickles its headers or its
  body, is closed then);
- **a deadline to write each answer**: an answer the client does not take within
  `request_timeout_s` (the socket's buffers full: a client that sends and never reads) closes the
  connection — uvicorn alone would wait for it for ever;
- **one request at a time**: no pipelined request is read before the previous answer is out of the
  process, and at most `MAX_UNREAD` bytes of unread requests are kept (reading stops beyond that:
  the kernel's buffers, then TCP, hold the client back). What one connection holds is then one
  answer and that much of its requests. A client that keeps `MAX_PIPELINED` requests back to back
  (each sent before the answer to the one before: no ordinary client does) gets one more answer,
  with `Connection: close`, and the connection ends (RFC 9112 lets a server close after any
  answer; a pipelining client sends again what was not answered) — so one connection cannot make
  the service work for it without end;
- **caps** on open connections, in all and per client address (`conn_table.py`); a TLS handshake
  counts too (`tls.py`);
- **strict framing** (`framing.py`): both `Content-Length` and `Transfer-Encoding` is `400`, closed.

The process's open-file limit is raised to the hard limit at start, and the cap is set below it.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections.abc import Callable
from typing import Any

from uvicorn.protocols.http.flow_control import CLOSE_HEADER, FlowControl

from origamig.serve.conn_table import ConnectionTable, Standing
from origamig.serve.framing import StrictConnection, refusal_bytes
from origamig.serve.tls import HANDSHAKE_TIMEOUT_S, ClientCertProtocol, TlsDoor, server_context

RESERVED_FILES = 64  # open files kept for the state, the worker, the log
ACCEPT_BACKLOG = 64  # connections the kernel queues (and asyncio accepts in one go)
MAX_CONNECTIONS = 4096
PER_ADDRESS_SHARE = 4  # one client address may hold at most a quarter of the connections ...
MIN_PER_ADDRESS = 8  # ... and at least this many
MAX_UNREAD = 64 * 1024  # bytes of pipelined requests kept unread per connection
MAX_PIPELINED = 32  # requests answered back to back on one connection before it is closed


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


def per_address_cap(total: int) -> int:
    """The most connections one client address may hold when `total` may be open in all."""
    return max(MIN_PER_ADDRESS, total // PER_ADDRESS_SHARE)


class CappedFlow(FlowControl):
    """uvicorn's flow control, but reading is not resumed while `unread()` bytes exceed `MAX_UNREAD`."""

    def __init__(self, transport: Any, unread: Callable[[], int]) -> None:
        super().__init__(transport)
        self.unread = unread

    def resume_reading(self) -> None:
        if self.unread() <= MAX_UNREAD:
            super().resume_reading()


class BoundedProtocol(ClientCertProtocol):
    """uvicorn's h11 protocol with deadlines to read each request and to write each answer, one
    request at a time, bounded buffers and a place in the connection table."""

    table: ConnectionTable  # set by `bounded_protocol`
    request_timeout_s: float

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        size = self.config.h11_max_incomplete_event_size
        limit = {} if size is None else {"max_incomplete_event_size": size}
        self.conn = StrictConnection(self.conn.our_role, **limit)
        self._deadline: Any = None  # to deliver the next request
        self._write_deadline: Any = None  # to take the answer written
        self._after_flush = False  # an answer is complete but not out yet: the next request waits
        self._back_to_back = 0  # requests in a row that came before the answer to the one before
        self.address = ""
        self.idle_since = time.monotonic()

    # --- the connection's life --------------------------------------------------------------------
    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        # Told when anything at all waits in the write buffer, and when it is empty again.
        transport.set_write_buffer_limits(high=1, low=0)
        self.flow = CappedFlow(transport, self._unread)
        self.address = self.client[0] if self.client else ""
        self._arm()
        self.table.join(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._disarm_write()
        self.table.leave(self)
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._unread() > MAX_UNREAD:
            self.flow.pause_reading()

    def _unread(self) -> int:
        return self.conn.unread() if isinstance(self.conn, StrictConnection) else 0

    def send_400_response(self, msg: str) -> None:
        """A request h11 cannot read (or `framing.py` refuses): `400` in JSON, then closed."""
        self.transport.write(refusal_bytes(self.conn, getattr(self.conn, "problem", "") or msg))
        self.transport.close()

    # --- one request at a time ----------------------------------------------------------------------
    def on_response_complete(self) -> None:
        if self.flow.write_paused and not self.transport.is_closing():
            self._after_flush = True  # the next request is read once this answer is out
            return
        self._next_request()

    def _next_request(self) -> None:
        pipelined = self._unread() > 0  # the next request came before this answer
        self._back_to_back = self._back_to_back + 1 if pipelined else 0
        before = self.cycle
        super().on_response_complete()  # reads the next request, when it is here
        if self.transport.is_closing():
            return
        self._arm()  # the next request has its own deadline
        cycle = self.cycle
        if self._back_to_back >= MAX_PIPELINED and cycle is not before and cycle is not None:
            cycle.keep_alive = False  # answered, then closed
            self.headers.append(CLOSE_HEADER)  # ... saying so (`Connection: close`): its scope's list

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._write_deadline is None:
            self._write_deadline = self.loop.call_later(self.request_timeout_s, self._on_write_deadline)

    def resume_writing(self) -> None:
        super().resume_writing()
        self._disarm_write()
        if self._after_flush and not self.transport.is_closing():
            self._after_flush = False
            self._next_request()

    # --- deadlines ---------------------------------------------------------------------------------
    def _arm(self) -> None:
        self._disarm()
        if not self._unread():  # with pipelined requests waiting, it has not been idle since
            self.idle_since = time.monotonic()
        self._deadline = self.loop.call_later(self.request_timeout_s, self._on_deadline)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _disarm_write(self) -> None:
        if self._write_deadline is not None:
            self._write_deadline.cancel()
            self._write_deadline = None

    def _on_deadline(self) -> None:
        self._deadline = None
        if not self.busy() and not self.transport.is_closing():
            self.transport.close()

    def _on_write_deadline(self) -> None:
        """The client has not taken its answer in time: the connection ends, the answer with it."""
        self._write_deadline = None
        self.transport.abort()  # not close(): that would wait for the client to read

    # --- the table's view ----------------------------------------------------------------------------
    def busy(self) -> bool:
        """A whole request was read and its answer is being made (not: waits for the client)."""
        cycle = self.cycle
        making = cycle is not None and not cycle.more_body and not cycle.response_complete
        return making and not self.flow.write_paused

    def standing(self) -> Standing:
        if self.flow.write_paused:
            return Standing.STALLED
        if self._unread():
            return Standing.PIPELINING
        return Standing.BUSY if self.busy() else Standing.IDLE

    def evict(self) -> None:
        if self.flow.write_paused:
            self.transport.abort()  # its client does not read: close() would wait for it
        else:
            self.transport.close()


def bounded_protocol(max_connections: int, request_timeout_s: float) -> type[BoundedProtocol]:
    """The protocol class with these bounds (one connection table per class: per server)."""
    table = ConnectionTable(max_connections, per_address_cap(max_connections))
    return type(
        "ServiceProtocol",
        (BoundedProtocol,),
        {"table": table, "request_timeout_s": request_timeout_s},
    )


def service_protocol(
    max_connections: int, request_timeout_s: float, tls: dict[str, Any]
) -> Callable[..., asyncio.Protocol]:
    """What uvicorn makes for each connection (its `http` setting): the bounded protocol, behind a
    `TlsDoor` that runs the handshake when `tls` (`tls.tls_options`) is given."""
    protocol = bounded_protocol(max_connections, request_timeout_s)
    if not tls:
        return protocol
    context = server_context(tls)
    handshake_s = min(HANDSHAKE_TIMEOUT_S, request_timeout_s)

    def door(**settings: Any) -> asyncio.Protocol:
        return TlsDoor(lambda: protocol(**settings), context, protocol.table, handshake_s)

    return door


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
