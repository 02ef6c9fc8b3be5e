"""HTTP/1.1 framing, strictly (RFC 9112): a request that says both how long its body is
(`Content-Length`) and that it is chunked (`Transfer-Encoding`) is refused — `400`, and the connection
closed, since where its body ends and the next request begins is then a guess two servers may make
differently (request smuggling). Every request h11 cannot read is answered the service's way: JSON
naming the problem, then the connection is closed.
"""

from __future__ import annotations

import json

import h11

BOTH_LENGTHS = (
    "Content-Length and Transfer-Encoding: a request may not give both (RFC 9112, section 6.1); "
    "the connection is closed"
)


class StrictConnection(h11.Connection):
    """h11's server side, refusing a request with both `Content-Length` and `Transfer-Encoding`;
    `problem` says why the last request could not be read."""

    problem = ""

    def next_event(self) -> h11.Event | type[h11.PAUSED] | type[h11.NEED_DATA]:
        try:
            event = super().next_event()
        except h11.RemoteProtocolError as exc:
            self.problem = f"the request is not valid HTTP/1.1 ({exc}); the connection is closed"
            raise
        if isinstance(event, h11.Request):
            names = {name for name, _ in event.headers}  # h11 gives them in lower case
            if b"content-length" in names and b"transfer-encoding" in names:
                self.problem = BOTH_LENGTHS
                raise h11.RemoteProtocolError(BOTH_LENGTHS, 400)
        return event

    def unread(self) -> int:
        """Bytes received and not read yet (h11's buffer: its public `trailing_data` copies them,
        which is too dear for a look taken at every answer)."""
        buffer = getattr(self, "_receive_buffer", None)
        return len(buffer) if buffer is not None else len(self.trailing_data[0])


def refusal_bytes(conn: h11.Connection, problem: str) -> bytes:
    """The `400` answer to a request `conn` could not read, in the service's JSON, closing the
    connection (b"" when h11 can no longer answer on it)."""
    body = json.dumps({"error": problem, "problems": [problem]}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    try:
        return b"".join(
            conn.send(event) or b""
            for event in (
                h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
                h11.Data(data=body),
                h11.EndOfMessage(),
            )
        )
    except h11.LocalProtocolError:
        return b""
