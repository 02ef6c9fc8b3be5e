"""A real `origamig serve` process on 127.0.0.1 and a free port, and an httpx client for it."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from origamig.judge.check import check_placement
from origamig.snapshot.document import Snapshot, parse_snapshot
from tests.paths import ROOT

EXAMPLES = ROOT / "examples"
TOKEN = "test-token-0123456789abcdef"
START_TIMEOUT_S = 60.0


def write_token(path: Path) -> Path:
    """A token file only its owner may read (`serve` refuses a looser one)."""
    path.write_text(TOKEN + "\n")
    path.chmod(0o600)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """`origamig serve` in a child process; `stop()` ends it (SIGTERM), `kill()` with SIGKILL."""

    def __init__(
        self,
        tmp: Path,
        seed: Path | None = None,
        state: Path | None = None,
        options: Sequence[str] = (),
        extra: Sequence[str] = (),
        verify: Any = True,
        preexec: Any = None,
        start_timeout_s: float = START_TIMEOUT_S,
        code: Path = ROOT,
    ) -> None:
        self.tmp = tmp
        self.verify = verify  # for HTTPS (`--tls-cert` among `extra`): the CA to trust (an ssl context)
        self.state = state or tmp / "state.db"
        self.seed = seed
        self.options = list(options)
        self.extra = list(extra)  # more command-line arguments
        self.preexec = preexec  # run in the child before it starts (e.g. to lower its open-file limit)
        self.start_timeout_s = start_timeout_s
        self.code = code  # the checkout whose origamig runs (a benchmark may compare two)
        self.token_file = write_token(tmp / "token")
        self.proc: subprocess.Popen[str] | None = None
        self.port = 0

    @property
    def url(self) -> str:
        scheme = "https" if "--tls-cert" in self.extra else "http"
        return f"{scheme}://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        cmd = [sys.executable, "-c", "from origamig.cli.app import main; main()", "serve"]
        cmd += ["--state", str(self.state), "--token-file", str(self.token_file)]
        cmd += ["--listen", f"127.0.0.1:{self.port}"]
        if self.seed is not None:
            cmd += ["--from", str(self.seed)]
        for opt in self.options:
            cmd += ["-o", opt]
        return cmd + self.extra

    def start(self, port: int | None = None) -> Server:
        """Start the process (on `port`, e.g. the one it had before a restart; else a free one)."""
        self.port = port or free_port()
        env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}  # may hold a huge test id
        env["PYTHONPATH"] = str(self.code)
        self.log = (self.tmp / f"server-{self.port}.log").open("w")
        self.proc = subprocess.Popen(
            self.command(),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            cwd=self.code,  # `python -c` looks in its working directory first
            text=True,
            env=env,
            preexec_fn=self.preexec,
        )
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.log.close()
                raise RuntimeError(f"server exited {self.proc.returncode}: {self.read_log()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1.0, verify=self.verify).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"server did not start: {self.read_log()}")

    def read_log(self) -> str:
        return (self.tmp / f"server-{self.port}.log").read_text()

    def client(self, token: str | None = TOKEN, verify: Any = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        return httpx.Client(
            base_url=self.url, headers=headers, timeout=30.0, verify=self.verify if verify is None else verify
        )

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def read(doc: dict) -> Snapshot:
    """The service's snapshot document as records (every PM switched on, as the service runs them)."""
    pms = [{k: v for k, v in p.items() if k != "powered_off"} for p in doc["pms"]]
    return parse_snapshot({**doc, "pms": pms})


def valid(doc: dict) -> dict:
    """The placement of `doc`, after the reader and the independent checker both accepted it."""
    snap = read(doc)
    assert check_placement(snap.pms, snap.vms, snap.placement) == []
    return dict(snap.placement)


def peer_closed(sock: socket.socket) -> bool:
    """The server has ended the connection (what it sent before is read and dropped); non-blocking."""
    sock.setblocking(False)
    try:
        while sock.recv(1 << 16):
            pass
    except BlockingIOError:
        return False
    except OSError:
        return True
    return True


def tls_server_files(folder: Path) -> tuple[list[str], ssl.SSLContext]:
    """A server certificate for 127.0.0.1 from a new CA, written in `folder`: the `serve` arguments
    that use it, and a client context that trusts it."""
    import trustme

    ca = trustme.CA()
    issued = ca.issue_cert("127.0.0.1")
    cert, key = folder / "server.pem", folder / "server.key"
    issued.cert_chain_pems[0].write_to_path(str(cert))
    issued.private_key_pem.write_to_path(str(key))
    trust = ssl.create_default_context()
    ca.configure_trust(trust)
    return ["--tls-cert", str(cert), "--tls-key", str(key)], trust


class AppClient:
    """The service's application called in this process (no socket, no child), as an httpx client
    calls it: `get`, `post`, `put`, `delete`."""

    def __init__(self, app: Any, token: str = TOKEN) -> None:
        self.app = app
        self.headers = {"Authorization": f"Bearer {token}"}

    def request(self, method: str, url: str, **options: Any) -> httpx.Response:
        async def call() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.app)
            async with httpx.AsyncClient(
                transport=transport, base_url="http://service", headers=self.headers
            ) as c:
                return await c.request(method, url, **options)

        return asyncio.run(call())

    def get(self, url: str, **options: Any) -> httpx.Response:
        return self.request("GET", url, **options)

    def post(self, url: str, **options: Any) -> httpx.Response:
        return self.request("POST", url, **options)

    def put(self, url: str, **options: Any) -> httpx.Response:
        return self.request("PUT", url, **options)

    def delete(self, url: str, **options: Any) -> httpx.Response:
        return self.request("DELETE", url, **options)


def in_process(
    tmp: Path, seed: Path | dict, platform: str | None = None, **options: Any
) -> tuple[Any, AppClient]:
    """A live state seeded from `seed` (a snapshot file or document) in `tmp`, with OrigaMIG `options`
    (default: no check ever due) and `--platform`, and a client of its application (no optimizer)."""
    from origamig.policies.base import make_policy
    from origamig.serve.app import build_app
    from origamig.serve.live import Live
    from origamig.serve.platform import Platform, apply_platform
    from origamig.serve.store import Store
    from origamig.snapshot.document import load_snapshot

    doc = load_snapshot(seed).document if isinstance(seed, Path) else seed
    policy = make_policy("origamig", **({"check_interval_s": 1e9} | options))
    live = Live(Store.create(tmp / "state.db", doc), policy)
    apply_platform(live, Platform(platform) if platform is not None else None)
    return live, AppClient(build_app(live, TOKEN))
