"""Connections no client can pin (docs/service.md#faults-and-limits): the service's protocol on a
stand-in transport — one request at a time, a deadline to write each answer, bounded unread bytes,
strict framing — the connection table's caps as invariants, and a real server under a pipelined
flood and stalled TLS handshakes with a small open-file limit."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from uvicorn.config import Config
from uvicorn.server import ServerState

from origamig.serve.conn_table import ConnectionTable, Standing
from origamig.serve.connections import MAX_PIPELINED, MAX_UNREAD, BoundedProtocol, bounded_protocol
from tests.profiles import examples
from tests.serve.test_serve_faults import QUIET, SEED, lowered_open_files
from tests.serve_helpers import Server, peer_closed, tls_server_files

GET = b"GET /%d HTTP/1.1\r\nHost: x\r\n\r\n"


class StandInTransport:
    """What asyncio's socket transport tells a protocol, with a write buffer the test empties."""

    def __init__(self) -> None:
        self.written = bytearray()
        self.held = 0  # bytes not yet taken by the client
        self.stuck = False  # the client does not read: writes stay in the buffer
        self.reading = True
        self.closing = self.aborted = False
        self.protocol: Any = None

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"peername": ("10.0.0.1", 4242), "sockname": ("127.0.0.1", 8787)}.get(name, default)

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self.high = high

    def get_write_buffer_size(self) -> int:
        return self.held

    def write(self, data: bytes) -> None:
        self.written += data
        if self.stuck:
            self.held += len(data)
            self.protocol.pause_writing()

    def flush(self) -> None:
        """The client reads everything: the buffer empties."""
        self.stuck, self.held = False, 0
        self.protocol.resume_writing()

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def abort(self) -> None:
        self.closing = self.aborted = True


async def connected(timeout_s: float = 10.0) -> tuple[BoundedProtocol, StandInTransport, list[str]]:
    """The service's protocol over a stand-in transport, serving an app that records each path."""
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    cls = bounded_protocol(64, timeout_s)
    config = Config(app=app, http=cls, lifespan="off", log_level="critical")
    config.load()
    protocol = cls(config=config, server_state=ServerState(), app_state={}, _loop=asyncio.get_running_loop())
    transport = StandInTransport()
    transport.protocol = protocol
    protocol.connection_made(transport)
    return protocol, transport, seen


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0.005)


def test_no_pipelined_request_is_read_before_the_answer_before_it_is_out() -> None:
    async def run() -> None:
        protocol, transport, seen = await connected()
        transport.stuck = True
        protocol.data_received(GET % 1 + GET % 2 + GET % 3)
        await settle()
        assert seen == ["/1"]  # its answer waits in the buffer: /2 is not read
        transport.flush()
        await settle()
        assert seen == ["/1", "/2", "/3"]
        assert transport.written.count(b"HTTP/1.1 200") == 3 and not transport.closing

    asyncio.run(run())


def test_an_answer_the_client_does_not_take_in_time_ends_the_connection() -> None:
    async def run() -> None:
        protocol, transport, seen = await connected(timeout_s=0.2)
        transport.stuck = True
        protocol.data_received(GET % 1 + GET % 2)
        await asyncio.sleep(0.5)
        assert transport.aborted and seen == ["/1"]  # abort: close() would wait for the client

    asyncio.run(run())


def test_unread_pipelined_bytes_are_bounded() -> None:
    pad = b"x" * 12_000  # requests of 12 kB (h11 takes headers up to 16 kB): a few pass the bound
    big = [b"GET /%d HTTP/1.1\r\nHost: x\r\nX-Pad: %s\r\n\r\n" % (n, pad) for n in range(12)]

    assert len(b"".join(big)) > 2 * MAX_UNREAD

    async def run() -> None:
        protocol, transport, seen = await connected()
        transport.stuck = True
        protocol.data_received(b"".join(big))
        await settle()
        assert not transport.reading  # beyond MAX_UNREAD nothing more is read ...
        protocol.flow.resume_reading()
        assert not transport.reading  # ... not even when uvicorn asks
        transport.flush()
        await settle()
        assert len(seen) == len(big) and transport.reading  # all answered: reading again

    asyncio.run(run())


def test_a_client_that_only_pipelines_is_answered_a_while_then_closed() -> None:
    async def run() -> None:
        protocol, transport, seen = await connected()
        protocol.data_received(b"".join(GET % n for n in range(3 * MAX_PIPELINED)))
        await settle()
        answers = bytes(transport.written).split(b"HTTP/1.1 200")[1:]
        assert len(seen) == len(answers) == MAX_PIPELINED + 1  # the requests in a row, and one more
        assert b"connection: close" in answers[-1].lower() and transport.closing
        assert not any(b"connection: close" in a.lower() for a in answers[:-1])

    asyncio.run(run())


def test_a_client_that_waits_for_each_answer_is_never_closed() -> None:
    async def run() -> None:
        protocol, transport, seen = await connected()
        for n in range(MAX_PIPELINED + 8):
            protocol.data_received(GET % n)
            await asyncio.sleep(0.01)
        assert len(seen) == MAX_PIPELINED + 8 and not transport.closing

    asyncio.run(run())


@pytest.mark.parametrize(
    "lengths",
    [b"Content-Length: 4\r\nTransfer-Encoding: chunked", b"Transfer-Encoding: chunked\r\nContent-Length: 40"],
)
def test_a_request_with_both_lengths_is_400_in_json_and_closed(lengths: bytes) -> None:
    request_bytes = b"POST /v1/vms HTTP/1.1\r\nHost: x\r\n" + lengths + b"\r\n\r\n0\r\n\r\n"

    async def run() -> None:
        protocol, transport, seen = await connected()
        protocol.data_received(request_bytes + GET % 2)
        await settle()
        head, _, body = bytes(transport.written).partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400") and b"connection: close" in head.lower()
        assert "Content-Length and Transfer-Encoding" in json.loads(body)["error"]
        assert transport.closing and seen == []  # neither it nor what follows reached the app

    asyncio.run(run())


# --- the connection table ------------------------------------------------------------------------
class Member:
    def __init__(self, address: str, t: float, standing: Standing) -> None:
        self.address, self.idle_since, self.stand, self.evicted = address, t, standing, False

    def standing(self) -> Standing:
        return self.stand

    def evict(self) -> None:
        self.evicted = True


@settings(max_examples=examples(200), deadline=None)
@given(
    total=st.integers(2, 12),
    per_address=st.integers(1, 8),
    arrivals=st.lists(st.tuples(st.sampled_from("abcd"), st.sampled_from(Standing)), max_size=60),
)
def test_the_table_keeps_its_caps_and_spares_busy_members_of_poorer_addresses(
    total: int, per_address: int, arrivals: list[tuple[str, Standing]]
) -> None:
    table = ConnectionTable(total, per_address)
    for t, (address, standing) in enumerate(arrivals):
        before = {m.address: sum(o.address == m.address for o in table.members) for m in table.members}
        inside = set(table.members)
        newcomer = Member(address, float(t), standing)
        table.join(newcomer)
        assert len(table) <= total
        assert all(len(g) <= per_address for g in table.by_address.values())
        assert all(not m.evicted for m in table.members) and newcomer.evicted != (newcomer in table.members)
        gone = inside - set(table.members)
        for member in gone:
            # a busy member goes only for its own address's cap, or from the richest address
            own = before.get(address, 0) + 1
            busy = member.stand == Standing.BUSY
            assert not busy or member.address == address or before[member.address] > own
        kept_lower = [m for m in table.members if m is not newcomer and m.address == address]
        for member in gone:  # within an address, whoever went stood no better than whoever stayed
            if member.address == address:
                assert all((member.stand, member.idle_since) <= (m.stand, m.idle_since) for m in kept_lower)


# --- a real server under attack ---------------------------------------------------------------------
def wait_all_closed(socks: list[socket.socket], limit_s: float = 90.0) -> bool:
    deadline = time.monotonic() + limit_s
    left = list(socks)
    while left and time.monotonic() < deadline:
        left = [s for s in left if not peer_closed(s)]
        time.sleep(0.2)
    return not left


@pytest.mark.slow
def test_a_pipelined_flood_that_never_reads_cannot_pin_connections(tmp_path: Path) -> None:
    extra = ["--request-timeout", "2"]
    with Server(tmp_path, seed=SEED, options=QUIET, extra=extra, preexec=lowered_open_files(256)) as srv:
        flood, pipelined = [], b"".join(GET % n for n in range(1500))
        try:
            for _ in range(300):  # more than the 256 files the service may open
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # its answers back up soon
                s.settimeout(5)
                s.connect(("127.0.0.1", srv.port))
                s.setblocking(False)
                with contextlib.suppress(OSError):  # the server stopped reading it, or closed it
                    s.send(pipelined)
                flood.append(s)
            for _ in range(5):  # a new connection each: a probe, kube-scheduler
                assert httpx.get(f"{srv.url}/healthz", timeout=10).status_code == 200
            assert wait_all_closed(flood)  # cut at their deadlines, or to make room
            assert httpx.get(f"{srv.url}/healthz", timeout=10).status_code == 200
        finally:
            for s in flood:
                s.close()
    assert len(srv.read_log()) < 5000


@pytest.mark.slow
def test_stalled_tls_handshakes_are_counted_and_cut(tmp_path: Path) -> None:
    tls, trust = tls_server_files(tmp_path)
    extra = [*tls, "--request-timeout", "2"]
    with Server(
        tmp_path, seed=SEED, options=QUIET, extra=extra, verify=trust, preexec=lowered_open_files(256)
    ) as srv:
        stalled = []
        try:
            for _ in range(300):  # connect, never say hello
                stalled.append(socket.create_connection(("127.0.0.1", srv.port), timeout=5))
            for _ in range(5):
                assert httpx.get(f"{srv.url}/healthz", timeout=10, verify=trust).status_code == 200
            assert wait_all_closed(stalled, 30.0)  # the handshake's own deadline (2 s here)
        finally:
            for s in stalled:
                s.close()
