"""TLS for `origamig serve` (docs/service.md#tls): the server's certificate and, with a client CA,
client certificates as credentials — kube-scheduler's `enableHTTPS` with `tlsConfig` can send one,
but no bearer token.

With `--client-ca`, the TLS handshake asks for a client certificate without requiring one
(`CERT_OPTIONAL`): a certificate that does not verify against the CA ends the handshake; a verified
one is put in the request's ASGI scope (`extensions.tls.client_cert`), where the route guard takes it
in place of the token. A client without a certificate still needs the token.
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from origamig.errors import UserError


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
