"""TLS for `origamig serve` (docs/service.md#tls): the server's certificate and, with a client CA,
client certificates as credentials — kube-scheduler's `enableHTTPS` with `tlsConfig` can send one,
but no bearer token.

With `--client-ca`, the TLS handshake asks for a client certificate without requiring one
(`CERT_OPTIONAL`): a certificate that does not verify against the CA ends the handshake; a verified
one is put in the request's ASGI scope (`extensions.tls.client_cert`), where the route guard takes it
in place of the token. A client without a certificate still needs the token.

The handshake is the service's own (`TlsDoor`, with asyncio's `start_tls`), not uvicorn's: it counts
in the connection table from the moment the client connects (`conn_table.py`), so a crowd of
handshakes that never finish cannot take every open file, and it has a short deadline of its own
(`HANDSHAKE_TIMEOUT_S`, at most the request deadline; asyncio's default is 60 s).
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from origamig.errors import UserError
from origamig.serve.conn_table import ConnectionTable, Standing

HANDSHAKE_TIMEOUT_S = 5.0


def tls_options(cert: Path | None, key: Path | None, client_ca: Path | None) -> dict[str, Any]:
    """uvicorn's TLS settings, each file checked first (one `UserError` line naming the option)."""
    if cert is None and key is None:
        if client_ca is not None:
            raise UserError("--client-ca: needs --tls-cert and --tls-key (client certificates come over TLS)")
        return {}
    if cert is None or key is None:
        raise UserError("--tls-cert and --tls-key: give both")
    options: dict[str, Any] = {"ssl_certfile": str(cert), "ssl_keyfile": str(key)}
    if client_ca is not None:
        options |= {"ssl_ca_certs": str(client_ca), "ssl_cert_reqs": ssl.CERT_OPTIONAL}
    probe = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        probe.load_cert_chain(str(cert), str(key))
    except (OSError, ssl.SSLError) as exc:
        raise UserError(f"--tls-cert/--tls-key: {cert}, {key}: cannot be loaded ({_why(exc)})") from None
    if client_ca is not None:
        try:
            probe.load_verify_locations(str(client_ca))
        except (OSError, ssl.SSLError) as exc:
            raise UserError(f"--client-ca: {client_ca}: cannot be loaded ({_why(exc)})") from None
    return options


def _why(exc: Exception) -> str:
    return getattr(exc, "strerror", None) or getattr(exc, "reason", None) or str(exc)


class ClientCertProtocol(H11Protocol):
    """uvicorn's h11 protocol, telling the application the client certificate the TLS handshake
    verified (none when the client sent none)."""

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        ssl_object = transport.get_extra_info("ssl_object")
        cert = ssl_object.getpeercert() if ssl_object is not None else None
        if cert:
            inner = self.app

            async def app(scope: Any, receive: Any, send: Any) -> None:
                scope["extensions"] = {**scope.get("extensions", {}), "tls": {"client_cert": cert}}
                await inner(scope, receive, send)

            self.app = app


def client_subject(scope: Any) -> str | None:
    """The common name (or the whole subject) of the verified client certificate of a request, or
    None when the client sent none."""
    cert = (scope.get("extensions") or {}).get("tls", {}).get("client_cert")
    if not cert:
        return None
    names = [value for rdn in cert.get("subject", ()) for key, value in rdn if key == "commonName"]
    return names[0] if names else str(cert.get("subject"))


def server_context(options: dict[str, Any]) -> ssl.SSLContext:
    """The TLS context of `tls_options`' settings (the server's certificate, the client CA)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(options["ssl_certfile"], options["ssl_keyfile"])
    if "ssl_ca_certs" in options:
        context.load_verify_locations(options["ssl_ca_certs"])
        context.verify_mode = options["ssl_cert_reqs"]
    return context


class _Holding(asyncio.Protocol):
    """What the TLS layer talks to between the handshake's end and the HTTP protocol's start: it keeps
    the bytes that came with the handshake's last flight."""

    def __init__(self) -> None:
        self.held = bytearray()
        self.lost = False

    def data_received(self, data: bytes) -> None:
        self.held += data

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True


class TlsDoor(asyncio.Protocol):
    """A client's TCP connection while its TLS handshake runs: a member of the connection table, cut
    at its deadline or to make room; once the handshake is done, the HTTP protocol `make_http()`
    takes the connection over."""

    def __init__(
        self,
        make_http: Callable[[], asyncio.Protocol],
        context: ssl.SSLContext,
        table: ConnectionTable,
        timeout_s: float,
    ) -> None:
        self.make_http = make_http
        self.context = context
        self.table = table
        self.timeout_s = timeout_s
        self.transport: Any = None
        self.task: asyncio.Task[None] | None = None
        self.address = ""
        self.idle_since = time.monotonic()

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        transport.pause_reading()  # the handshake reads, once it starts
        peer = transport.get_extra_info("peername")
        self.address = str(peer[0]) if peer else ""
        if self.table.join(self):
            self.task = asyncio.get_running_loop().create_task(self._handshake())

    async def _handshake(self) -> None:
        holding = _Holding()
        loop = asyncio.get_running_loop()
        try:
            tls: Any = await loop.start_tls(
                self.transport, holding, self.context, server_side=True, ssl_handshake_timeout=self.timeout_s
            )
        except (OSError, asyncio.CancelledError):  # ssl.SSLError and TimeoutError are OSErrors
            self.transport.abort()  # a failed, late or cut handshake: nothing more to say
            return
        finally:
            self.table.leave(self)
        http = self.make_http()
        tls.set_protocol(http)
        http.connection_made(tls)
        if holding.held:
            http.data_received(bytes(holding.held))
        if holding.lost:
            http.connection_lost(None)

    def connection_lost(self, exc: Exception | None) -> None:
        self.table.leave(self)  # before the handshake took the connection over

    def standing(self) -> Standing:
        return Standing.IDLE  # its age says how long it has waited for its client

    def evict(self) -> None:
        if self.task is not None:
            self.task.cancel()
        self.transport.abort()
