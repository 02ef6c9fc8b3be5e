"""Every way `origamig serve` stops, and what it leaves for the next start (docs/service.md#after-a-stop):
SIGTERM and SIGINT run one clean shutdown (exit 0, the log folded in, the state marked stopped, the
worker ended, no leaked semaphore); `--backup` and `--print-k8s-config` change neither the state nor
its -wal, whether the server stopped, crashed or runs; one server per state by the file's own inode,
through links too; a state deleted under its server; a plain copy told from the state itself."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.serve.test_serve_faults import QUIET, SEED, SMALL, one_error, serve_once
from tests.serve.test_serve_plans import FAST
from tests.serve_helpers import TOKEN, Server, valid


def meta(state: Path, key: str) -> str | None:
    """A value of the state's meta table, read without changing the file (immutable)."""
    with contextlib.closing(sqlite3.connect(f"file:{state}?mode=ro&immutable=1", uri=True)) as db:
        row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else row[0]


def files(folder: Path, state: Path) -> dict[str, bytes]:
    """The state and its -wal, byte for byte (absent ones left out)."""
    out = {}
    for path in (state, state.with_name(state.name + "-wal")):
        if path.exists():
            out[path.name] = path.read_bytes()
    return out


@contextlib.contextmanager
def running(srv: Server) -> Iterator[Server]:
    """`srv` started, and killed on the way out if it is still running (a test that fails midway)."""
    srv.start()
    try:
        yield srv
    finally:
        srv.kill()


def worker_pid(srv: Server) -> int:
    with srv.client() as c:
        for _ in range(300):
            pid = c.get("/v1/status").json()["optimizer"]["worker_pid"]
            if pid is not None:
                return int(pid)
            time.sleep(0.1)
    raise AssertionError("the optimizer's worker never started")


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_by_signal_is_clean_and_then_backup_and_restart_work(tmp_path: Path, sig: int) -> None:
    with running(Server(tmp_path, seed=SEED, options=FAST)) as srv, srv.client() as c:
        assert c.post("/v1/vms", json={"id": "kept", **SMALL}).status_code == 201
        before = c.get("/v1/snapshot").json()
        worker = worker_pid(srv)
        time.sleep(1.0)  # checks every 0.2 s: the stop may come while one runs
        assert srv.proc is not None
        srv.proc.send_signal(sig)
        assert srv.proc.wait(60) == 0
    log = srv.read_log()
    assert "stopped (" in log and "leaked" not in log and "Traceback" not in log, log
    assert gone(worker)
    state = srv.state
    assert not state.with_name("state.db-wal").exists()  # the log was folded into the file
    assert meta(state, "server") == "stopped"
    kept = files(tmp_path, state)
    backup = serve_once(tmp_path, state, "--backup", str(tmp_path / "copy.db"))
    assert backup.returncode == 0 and backup.stderr == "", backup.stderr
    config = serve_once(tmp_path, state, "--print-k8s-config")
    assert config.returncode == 0 and "managedResources" in config.stdout, config.stderr
    assert files(tmp_path, state) == kept  # neither changed the state, nor made a -wal
    for again in (
        Server(tmp_path, options=QUIET),
        Server(tmp_path, state=tmp_path / "copy.db", options=QUIET),
    ):
        with again, again.client() as c:
            assert c.get("/v1/snapshot").json()["vms"] == before["vms"]


def test_a_request_under_way_when_the_stop_comes_is_answered_and_kept(tmp_path: Path) -> None:
    body = json.dumps({"id": "in-flight", **SMALL}).encode()
    head = (
        f"POST /v1/vms HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    with running(Server(tmp_path, seed=SEED, options=QUIET)) as srv:
        assert srv.proc is not None
        with socket.create_connection(("127.0.0.1", srv.port), timeout=30) as sock:
            sock.sendall(head + body[:10])  # the request is under way ...
            time.sleep(0.5)
            srv.proc.send_signal(signal.SIGTERM)  # ... when the stop comes
            time.sleep(0.5)
            sock.sendall(body[10:])
            answer = b""
            while chunk := sock.recv(65536):  # answered, then the connection is closed
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 201"), answer
        assert srv.proc.wait(60) == 0
    with Server(tmp_path, options=QUIET) as again, again.client() as c:
        assert c.get("/v1/vms/in-flight").json()["status"] == "running"


def test_a_backup_after_a_crash_leaves_the_log_and_the_restart_has_every_change(tmp_path: Path) -> None:
    with running(Server(tmp_path, seed=SEED, options=QUIET)) as srv, srv.client() as c:
        for n in range(3):
            assert c.post("/v1/vms", json={"id": f"late{n}", **SMALL}).status_code == 201
        before = c.get("/v1/snapshot").json()
    # killed (SIGKILL) on the way out: the changes are in the -wal, the state is marked running
    kept = files(tmp_path, srv.state)
    assert "state.db-wal" in kept and meta(srv.state, "server") == "running"
    backup = serve_once(tmp_path, srv.state, "--backup", str(tmp_path / "copy.db"))
    assert backup.returncode == 0 and backup.stderr == "", backup.stderr
    assert serve_once(tmp_path, srv.state, "--print-k8s-config").returncode == 0
    assert files(tmp_path, srv.state) == kept
    for state in (srv.state, tmp_path / "copy.db"):
        with Server(tmp_path, state=state, options=QUIET) as again, again.client() as c:
            assert c.get("/v1/snapshot").json()["vms"] == before["vms"]


def test_a_backup_while_the_server_runs_changes_nothing_it_holds(tmp_path: Path) -> None:
    with Server(tmp_path, seed=SEED, options=QUIET) as srv, srv.client() as c:
        assert c.post("/v1/vms", json={"id": "during", **SMALL}).status_code == 201
        assert serve_once(tmp_path, srv.state, "--backup", str(tmp_path / "copy.db")).returncode == 0
        assert serve_once(tmp_path, srv.state, "--print-k8s-config").returncode == 0
        assert c.post("/v1/vms", json={"id": "after", **SMALL}).status_code == 201
        now = c.get("/v1/snapshot").json()
    with Server(tmp_path, options=QUIET) as again, again.client() as c:
        assert c.get("/v1/snapshot").json()["vms"] == now["vms"]
    with Server(tmp_path, state=tmp_path / "copy.db", options=QUIET) as copy, copy.client() as c:
        ids = {v["id"] for v in c.get("/v1/snapshot").json()["vms"]}
    assert "during" in ids and "after" not in ids


# --- one owner per state --------------------------------------------------------------------------
def test_no_second_server_through_a_deleted_side_file_or_another_name(tmp_path: Path) -> None:
    (tmp_path / "links").mkdir()
    with Server(tmp_path, seed=SEED, options=QUIET) as first, first.client() as c:
        assert first.proc is not None
        for side in tmp_path.glob("state.db.*"):  # no side file holds the lock
            side.unlink()
        (tmp_path / "links" / "sym.db").symlink_to(first.state)
        os.link(first.state, tmp_path / "links" / "hard.db")
        for name in (first.state, tmp_path / "links" / "sym.db", tmp_path / "links" / "hard.db"):
            line = one_error(serve_once(tmp_path, name))
            assert f"pid {first.proc.pid}" in line and "one server per state" in line, line
        assert c.post("/v1/vms", json={"id": "only", **SMALL}).status_code == 201


def test_a_symlinked_state_restarts_after_every_kind_of_stop(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    link = tmp_path / "state-link.db"
    link.symlink_to(tmp_path / "data" / "state.db")
    ids: set[str] = set()
    for n, end in enumerate(("stop", "kill", "stop")):
        with running(Server(tmp_path, seed=SEED if n == 0 else None, state=link, options=QUIET)) as srv:
            with srv.client() as c:
                assert c.post("/v1/vms", json={"id": f"v{n}", **SMALL}).status_code == 201
                ids |= {f"v{n}"}
                assert ids <= {v["id"] for v in c.get("/v1/snapshot").json()["vms"]}
            if end == "stop":
                srv.stop()
        assert not (tmp_path / "state-link.db-wal").exists()  # the log is beside the target only
    with Server(tmp_path, state=link, options=QUIET) as srv, srv.client() as c:
        assert ids <= {v["id"] for v in c.get("/v1/snapshot").json()["vms"]}


def test_a_state_deleted_under_its_server_is_saved_and_the_server_stops(tmp_path: Path) -> None:
    with running(Server(tmp_path, seed=SEED, options=QUIET)) as srv, srv.client() as c:
        assert c.post("/v1/vms", json={"id": "held", **SMALL}).status_code == 201
        held = c.get("/v1/snapshot").json()
        for path in tmp_path.glob("state.db*"):
            path.unlink()
        assert srv.proc is not None
        assert srv.proc.wait(30) == 1  # it noticed, saved what it held, and stopped
    saved = sorted(tmp_path.glob("state.db.saved-*"))
    assert len(saved) == 1 and "was deleted while the server ran" in srv.read_log()
    with Server(tmp_path, state=saved[0], options=QUIET) as again, again.client() as c:
        assert c.get("/v1/snapshot").json()["vms"] == held["vms"]


def test_a_plain_copy_is_refused_but_the_state_whose_log_was_folded_is_not(tmp_path: Path) -> None:
    with running(Server(tmp_path, seed=SEED, options=QUIET)) as srv, srv.client() as c:
        assert c.post("/v1/vms", json={"id": "one", **SMALL}).status_code == 201
        shutil.copy(srv.state, tmp_path / "copy.db")  # the main file only
        before = c.get("/v1/snapshot").json()
    # killed on the way out
    # Another program opens the crashed state and, as the last connection, folds its log in.
    with contextlib.closing(sqlite3.connect(srv.state)) as db:
        db.execute("SELECT count(*) FROM vms").fetchone()
    assert not srv.state.with_name("state.db-wal").exists() and meta(srv.state, "server") == "running"
    with Server(tmp_path, options=QUIET) as again, again.client() as c:  # the state itself: nothing lost
        assert c.get("/v1/snapshot").json()["vms"] == before["vms"]
    line = one_error(serve_once(tmp_path, tmp_path / "copy.db"))
    assert "copied from a running server without its -wal file" in line and "--backup NEW" in line
    made = serve_once(tmp_path, tmp_path / "copy.db", "--backup", str(tmp_path / "new.db"))
    assert made.returncode == 0 and "may miss the latest changes" in made.stderr
    with Server(tmp_path, state=tmp_path / "new.db", options=QUIET) as copy, copy.client() as c:
        assert valid(c.get("/v1/snapshot").json())


def test_a_hard_link_of_a_crashed_state_names_the_one_whose_log_holds_the_changes(tmp_path: Path) -> None:
    with running(Server(tmp_path, seed=SEED, options=QUIET)) as srv, srv.client() as c:
        assert c.post("/v1/vms", json={"id": "in-log", **SMALL}).status_code == 201
    # killed on the way out: a crash
    (tmp_path / "other").mkdir()
    os.link(srv.state, tmp_path / "other" / "state.db")
    line = one_error(serve_once(tmp_path, tmp_path / "other" / "state.db"))
    assert f"a hard link) of {srv.state}" in line and f"--state {srv.state}" in line
