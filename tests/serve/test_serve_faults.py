"""`origamig serve` under faults and hostile clients (docs/service.md#faults-and-limits): two servers on
one state, a killed worker, idle and slow sockets under a lowered open-file limit, poisoned bodies and
path parameters, files that are not a state, read-only file systems, a loose token file, a write the
disk refuses, and a backup taken while the service runs."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from origamig.policies.base import make_policy
from origamig.serve.app import build_app
from origamig.serve.live import Live
from origamig.serve.optimizer import Optimizer
from origamig.serve.run import bind
from origamig.serve.store import Store
from origamig.snapshot.document import load_snapshot
from tests.serve.test_serve_plans import FAST, wait_plan
from tests.serve_helpers import EXAMPLES, ROOT, TOKEN, Server, free_port, valid, write_token

SEED = EXAMPLES / "fragmented-a100.json"  # vm5 (3g.20gb) waits: it fits only after a GI moves
QUIET = ("check_interval_s=1e9",)
SMALL = {"cpu": 2, "ram_gb": 8, "gis": ["1g.5gb"]}


def serve_once(
    tmp: Path, state: Path, *extra: str, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess:
    """`origamig serve` run to its end (a start that is refused)."""
    token = tmp / "token" if (tmp / "token").exists() else write_token(tmp / "token")
    cmd = [*prefix, sys.executable, "-c", "from origamig.cli.app import main; main()", "serve"]
    cmd += ["--state", str(state), "--token-file", str(token), *extra]
    if "--listen" not in extra:
        cmd += ["--listen", f"127.0.0.1:{free_port()}"]
    return subprocess.run(
        cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120
    )


def one_error(done: subprocess.CompletedProcess) -> str:
    """The one `error:` line of a refused start (exit 2, no traceback)."""
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


def a_state(path: Path) -> Path:
    Store.create(path, load_snapshot(SEED).document).close()
    return path


# --- one server per state ----------------------------------------------------------------------------
def test_a_second_server_on_one_state_is_refused_naming_the_first(tmp_path: Path) -> None:
    with Server(tmp_path, seed=SEED, options=QUIET) as first, first.client() as c:
        assert first.proc is not None
        line = one_error(serve_once(tmp_path, first.state))
        assert (
            f"pid {first.proc.pid}, http://127.0.0.1:{first.port}" in line and "one server per state" in line
        )
        assert c.post("/v1/vms", json={"id": "after", **SMALL}).status_code == 201  # the first goes on
    with Server(tmp_path, options=QUIET) as again, again.client() as c:  # its lock ended with it
        assert "after" in {v["id"] for v in c.get("/v1/snapshot").json()["vms"]}


# --- a supervised optimizer --------------------------------------------------------------------------
def test_a_killed_worker_is_replaced_and_the_waiting_vm_still_gets_its_plan(tmp_path: Path) -> None:
    doc = json.loads(SEED.read_text())
    vm5 = next(v for v in doc["vms"] if v["id"] == "vm5")
    doc["vms"].remove(vm5)
    (tmp_path / "seed.json").write_text(json.dumps(doc))
    with Server(tmp_path, seed=tmp_path / "seed.json", options=FAST) as srv, srv.client() as c:
        assert httpx.get(f"{srv.url}/readyz").json()["status"] == "ready"  # no token needed
        first = c.get("/v1/status").json()["optimizer"]
        while first["worker_pid"] is None:  # the worker starts in the background
            time.sleep(0.1)
            first = c.get("/v1/status").json()["optimizer"]
        assert first["state"] in ("idle", "solving") and first["restarts"] == 0
        os.kill(first["worker_pid"], signal.SIGKILL)
        assert c.post("/v1/vms", json=vm5).status_code == 202
        plan = wait_plan(c, 1)
        assert plan["admitted"] == ["vm5"]
        status = c.get("/v1/status").json()
        assert (
            status["optimizer"]["restarts"] >= 1 and status["optimizer"]["worker_pid"] != first["worker_pid"]
        )
        assert status["optimizer"]["checks"] > first["checks"] and status["optimizer"]["last_check_s"]
        assert status["plans"]["running"] == 1 and status["vms"]["pending"] == 1
        assert httpx.get(f"{srv.url}/readyz").status_code == 200
    assert srv.read_log().count("worker died") <= 2  # said once (or twice), not per check


# --- bounded connections -----------------------------------------------------------------------------
def test_the_listening_socket_says_it_is_tcp_so_answers_are_not_delayed() -> None:
    # asyncio sets TCP_NODELAY only on sockets whose protocol is IPPROTO_TCP; without it every answer
    # after the first on a keep-alive connection waits ~40 ms for a delayed ACK.
    sock = bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
    finally:
        sock.close()


def lowered_open_files(limit: int) -> Any:
    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    return lower


def closed(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


@pytest.mark.slow
def test_idle_and_slow_connections_cannot_starve_the_service(tmp_path: Path) -> None:
    extra = ["--request-timeout", "2"]
    with Server(tmp_path, seed=SEED, options=QUIET, extra=extra, preexec=lowered_open_files(256)) as srv:
        crowd = []
        try:
            for _ in range(600):  # far more than the 256 files the service may open
                crowd.append(socket.create_connection(("127.0.0.1", srv.port), timeout=5))
            started = time.monotonic()
            for _ in range(5):  # a new connection each: a probe, kube-scheduler
                assert httpx.get(f"{srv.url}/healthz", timeout=5).status_code == 200
            with srv.client() as c:
                assert c.post("/k8s/filter", json={"Pod": {}, "NodeNames": ["pm0"]}).status_code == 200
            assert time.monotonic() - started < 10
            slow = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
            crowd.append(slow)
            slow.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            cut = False
            for _ in range(20):  # a header byte every 0.3 s: still cut off at the 2 s deadline
                time.sleep(0.3)
                try:
                    slow.sendall(b"X")
                except OSError:
                    cut = True
                    break
                if closed(slow):
                    cut = True
                    break
                slow.setblocking(True)
            assert cut
            time.sleep(2.5)
            assert all(closed(s) for s in crowd)  # idle ones closed at their deadline, or to make room
        finally:
            for s in crowd:
                s.close()
    assert len(srv.read_log()) < 5000  # no line per refused or closed connection


# --- strict input ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    with Server(tmp_path_factory.mktemp("faults"), seed=SEED, options=QUIET) as srv:
        yield srv


POISONS = [
    ('{"id": "p1", "cpu": 1e309, "ram_gb": 8, "gis": ["1g.5gb"]}', "body.cpu: inf is out of range"),
    ('{"id": "p2", "cpu": 2, "ram_gb": 8, "gis": ["1g.5gb"], "note": 1e309}', "body.note: inf"),
    ('{"id": "p3", "cpu": 2, "ram_gb": 8, "gis": ["1g.5gb"], "note": "x"}', "note: not a field"),
    (
        '{"id": "\\ud800", "cpu": 2, "ram_gb": 8, "gis": ["1g.5gb"]}',
        "body.id: '\\ud800' holds a lone surrogate",
    ),
    ('{"id": "p4", "cpu": 2, "ram_gb": 8, "gis": ["\\udfff"]}', "body.gis[0]"),
    ('{"id": "p5", "cpu": 2, "ram_gb": 8e20, "gis": ["1g.5gb"]}', "body.ram_gb: 8e+20 is out of range"),
    (json.dumps({"id": "x" * 254, **SMALL}), "id: 254 characters is too long"),
    (json.dumps({"id": "x" * 500_000, **SMALL}), "id: 500000 characters is too long"),
]


@pytest.mark.parametrize(("body", "says"), POISONS)
def test_a_poisoned_body_is_refused_at_the_door_and_reads_go_on(server: Server, body: str, says: str) -> None:
    with server.client() as c:
        before = c.get("/v1/snapshot").json()
        r = c.post("/v1/vms", content=body.encode(), headers={"Content-Type": "application/json"})
        assert r.status_code == 400 and says in r.json()["error"], r.text
        after = c.get("/v1/snapshot")
        assert after.status_code == 200 and after.json() == before


def test_long_ids_in_the_form_of_a_pod_are_kubernetes_names(server: Server) -> None:
    with server.client() as c:
        name = "ns/" + "n" * 253  # namespace/name: each within Kubernetes' limit
        assert c.post("/v1/vms", json={"id": name, **SMALL}).status_code == 201
        assert c.get(f"/v1/vms/{name}").json()["status"] == "running"
        assert c.delete(f"/v1/vms/{name}").status_code == 204


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/plans/²"),
        ("GET", "/v1/plans/" + "9" * 4400),
        ("DELETE", "/v1/plans/٣"),
        ("GET", "/v1/plans/¹/kubevirt"),
        ("GET", "/v1/no-such-route"),
        ("POST", "/v1/plans/1/steps/²"),
        ("GET", "/v1/vms/" + "v" * 400),
        ("DELETE", "/v1/vms/" + "v" * 400),
    ],
)
def test_path_parameters_that_are_not_plain_ids_are_not_found(server: Server, method: str, path: str) -> None:
    with server.client() as c:
        r = c.request(method, path, json={"result": "done"})
    assert r.status_code == 404 and r.json()["error"], r.text


def test_a_pod_asking_for_millions_of_gis_is_refused_before_any_work(server: Server) -> None:
    pod = {"metadata": {"name": "huge"}, "spec": {"containers": [
        {"resources": {"limits": {"nvidia.com/mig-1g.5gb": "3000000"}}}]}}  # fmt: skip
    with server.client() as c:
        started = time.monotonic()
        r = c.post("/k8s/filter", json={"Pod": pod, "NodeNames": ["pm0", "pm1"]})
        assert time.monotonic() - started < 2.0
    assert r.status_code == 200 and "more than any PM holds" in r.json()["Error"]


# --- state you can trust -----------------------------------------------------------------------------
def _empty(state: Path) -> None:
    state.write_bytes(b"")


def _text(state: Path) -> None:
    state.write_text('{"version": 1, "pms": []}')


def _truncated(state: Path) -> None:
    data = a_state(state.with_name("whole.db")).read_bytes()
    state.write_bytes(data[: len(data) // 2])


def _no_table(state: Path) -> None:
    with contextlib.closing(sqlite3.connect(a_state(state))) as db:
        db.execute("DROP TABLE rejected")
        db.commit()


def _other_format(state: Path) -> None:
    with contextlib.closing(sqlite3.connect(a_state(state))) as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'format'")
        db.commit()


BROKEN = {
    "empty": (_empty, "an empty file is not an origamig state"),
    "not sqlite": (_text, "not an origamig state"),
    "truncated": (_truncated, "--state:"),
    "a table missing": (_no_table, "no table rejected"),
    "another format": (_other_format, "state format 99"),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_file_that_is_not_a_whole_state_is_refused_never_seeded_anew(tmp_path: Path, kind: str) -> None:
    make, says = BROKEN[kind]
    state = tmp_path / "state.db"
    make(state)
    before = state.read_bytes()
    line = one_error(serve_once(tmp_path, state, "--from", str(SEED)))
    assert says in line and str(state) in line
    assert state.read_bytes() == before  # untouched: not seeded from --from


def test_a_plain_copy_of_a_running_state_is_told_from_a_backup(tmp_path: Path) -> None:
    with Server(tmp_path, seed=SEED, options=QUIET) as srv, srv.client() as c:
        for n in range(3):
            assert c.post("/v1/vms", json={"id": f"new{n}", **SMALL}).status_code == 201
        running = c.get("/v1/snapshot").json()
        shutil.copy(srv.state, tmp_path / "copy.db")  # the main file only: its -wal holds the VMs
        backup = serve_once(tmp_path, srv.state, "--backup", str(tmp_path / "backup.db"))
        assert backup.returncode == 0 and "backup.db" in backup.stdout, backup.stderr
    line = one_error(serve_once(tmp_path, tmp_path / "copy.db"))
    assert "without its -wal file" in line and "--backup" in line
    with Server(tmp_path, state=tmp_path / "backup.db", options=QUIET) as srv, srv.client() as c:
        restored = c.get("/v1/snapshot").json()
    assert valid(restored) == valid(running) and restored["vms"] == running["vms"]


def test_a_token_file_others_may_read_is_refused(tmp_path: Path) -> None:
    token = write_token(tmp_path / "token")
    token.chmod(0o644)
    line = one_error(serve_once(tmp_path, tmp_path / "state.db", "--from", str(SEED)))
    assert "--token-file" in line and "0644" in line and "chmod 600" in line
    assert not (tmp_path / "state.db").exists()


def _read_only(folder: Path) -> tuple[str, ...]:
    """A command prefix that runs the rest with `folder` mounted read-only (a private mount namespace)."""
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if shutil.which("unshare") is None or probe.returncode != 0:
        pytest.skip("needs unshare -m (a private mount namespace) to make a read-only file system")
    script = f'mount --bind {folder} {folder} && mount -o remount,ro,bind {folder} && exec "$@"'
    return ("unshare", "-m", "sh", "-c", script, "sh")


def test_a_read_only_file_system_is_refused_at_start(tmp_path: Path) -> None:
    state = a_state(tmp_path / "state.db")
    write_token(tmp_path / "token")
    ro = _read_only(tmp_path)
    before = state.read_bytes()
    assert "cannot be written" in one_error(serve_once(tmp_path, state, prefix=ro))
    line = one_error(serve_once(tmp_path, tmp_path / "new.db", "--from", str(SEED), prefix=ro))
    assert "Read-only file system" in line and not (tmp_path / "new.db").exists()
    assert state.read_bytes() == before


def test_a_write_the_disk_refuses_is_503_in_json_and_changes_nothing(tmp_path: Path) -> None:
    store = Store.create(tmp_path / "state.db", load_snapshot(SEED).document)
    live = Live(store, make_policy("origamig", check_interval_s=1e9))
    app = build_app(live, TOKEN)

    async def run() -> None:
        transport = httpx.ASGITransport(app=app)
        auth = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx.AsyncClient(transport=transport, base_url="http://test", headers=auth) as c:
            before = (await c.get("/v1/snapshot")).json()
            store._db.execute("PRAGMA query_only = ON")  # every write now fails, as on a full disk
            r = await c.post("/v1/vms", json={"id": "late", **SMALL})
            assert r.status_code == 503 and "cannot be stored" in r.json()["error"]
            assert (await c.delete("/v1/vms/vm1")).status_code == 503
            assert (await c.get("/v1/snapshot")).json() == before
            store._db.execute("PRAGMA query_only = OFF")
            assert (await c.post("/v1/vms", json={"id": "late", **SMALL})).status_code == 201

    asyncio.run(run())
    store.close()


def test_readyz_tells_a_stuck_or_dead_optimizer(tmp_path: Path) -> None:
    store = Store.create(tmp_path / "state.db", load_snapshot(SEED).document)
    live = Live(store, make_policy("origamig", check_interval_s=1e9))
    opt = Optimizer(live, stuck_after_s=60)
    app = build_app(live, TOKEN, optimizer=opt)

    async def readyz() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
            return await c.get("/readyz")

    assert asyncio.run(readyz()).status_code == 200  # the loop was never started: nothing to watch
    opt.status.solving_since_s = time.time() - 121  # a check past twice the limit: the supervisor failed
    r = asyncio.run(readyz())
    assert r.status_code == 503 and "a check has run since" in r.json()["error"]
    opt.status.solving_since_s = None
    opt.looping = True  # started, but its thread is not running: the loop has ended
    r = asyncio.run(readyz())
    assert r.status_code == 503 and "its loop has ended" in r.json()["error"]
    store.close()
