"""A full disk (docs/service.md#faults-and-limits): `/readyz` says writes are refused and why, while
reads and the extender keep answering; a service started on a full disk serves read-only and says
so, and takes changes again once there is room — without a client having to try first."""

from __future__ import annotations

import asyncio
import functools
import sqlite3
import time
from pathlib import Path

import httpx
import pytest

from origamig.policies.base import make_policy
from origamig.serve.app import build_app
from origamig.serve.live import Live
from origamig.serve.state_watch import StateWatch
from origamig.serve.store import Store
from origamig.snapshot.document import load_snapshot
from tests.disk_faults import FULL_FLAG, FillingDisk
from tests.serve.test_serve_faults import QUIET, SEED, SMALL, a_state
from tests.serve.test_serve_k8s import pod_args
from tests.serve_helpers import TOKEN, Server

AUTH = {"Authorization": f"Bearer {TOKEN}"}


def wait_ready(url: str, limit_s: float = 30.0) -> httpx.Response:
    deadline = time.monotonic() + limit_s
    while True:
        r = httpx.get(f"{url}/readyz", timeout=5)
        if r.status_code == 200 or time.monotonic() > deadline:
            return r
        time.sleep(0.2)


def test_a_full_disk_refuses_changes_but_reads_and_the_extender_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flag = tmp_path / "full"
    monkeypatch.setattr(FillingDisk, "flag", flag)
    monkeypatch.setattr(sqlite3, "connect", functools.partial(sqlite3.connect, factory=FillingDisk))
    store = Store.create(tmp_path / "state.db", load_snapshot(SEED).document)
    live = Live(store, make_policy("origamig", check_interval_s=1e9))
    app = build_app(live, TOKEN)
    watch = StateWatch(store, on_lost=pytest.fail, pid=0)

    async def run() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t", headers=AUTH) as c:
            assert (await c.get("/readyz")).json()["writes"] == "ok"
            before = (await c.get("/v1/snapshot")).json()
            flag.touch()  # the disk fills up
            r = await c.post("/v1/vms", json={"id": "late", **SMALL})
            assert r.status_code == 503 and "database or disk is full" in r.json()["error"]
            ready = await c.get("/readyz")
            assert ready.status_code == 503 and ready.json()["writes"] == "refused"
            assert "database or disk is full" in ready.json()["error"]
            assert (await c.get("/v1/snapshot")).json() == before  # reads go on, nothing changed
            filtered = await c.post("/k8s/filter", json=pod_args(["1g.5gb"], names=["pm0", "pm1"]))
            assert filtered.status_code == 200 and filtered.json()["NodeNames"]
            watch.check()  # still full: still refused
            assert (await c.get("/readyz")).status_code == 503
            flag.unlink()  # room again: the watch stores a change, no client had to try
            watch.check()
            again = await c.get("/readyz")
            assert again.status_code == 200 and again.json()["writes"] == "ok"
            assert (await c.post("/v1/vms", json={"id": "late", **SMALL})).status_code == 201

    asyncio.run(run())
    store.close()


class FillingDiskServer(Server):
    """`origamig serve` whose state's disk is full while the flag file exists."""

    def command(self) -> list[str]:
        cmd = super().command()
        cmd[2] = "import tests.disk_faults as d; d.install(); from origamig.cli.app import main; main()"
        return cmd


def test_a_service_started_on_a_full_disk_serves_reads_and_takes_changes_once_there_is_room(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flag = tmp_path / "full"
    flag.touch()
    monkeypatch.setenv(FULL_FLAG, str(flag))
    state = a_state(tmp_path / "state.db")
    srv = FillingDiskServer(tmp_path, state=state, options=QUIET).start()  # it starts, read-only
    try:
        assert "serving reads and the extender only" in srv.read_log()
        ready = httpx.get(f"{srv.url}/readyz", timeout=5)
        assert ready.status_code == 503 and ready.json()["writes"] == "refused"
        assert "database or disk is full" in ready.json()["error"]
        with srv.client() as c:
            assert c.get("/v1/snapshot").status_code == 200
            filtered = c.post("/k8s/filter", json=pod_args(["1g.5gb"], names=["pm0", "pm1"]))
            assert filtered.status_code == 200 and filtered.json()["NodeNames"]
            assert c.post("/v1/vms", json={"id": "later", **SMALL}).status_code == 503
            flag.unlink()  # space is freed
            assert wait_ready(srv.url).status_code == 200
            assert c.post("/v1/vms", json={"id": "later", **SMALL}).status_code == 201
    finally:
        srv.stop()
    assert srv.proc is not None and srv.proc.returncode == 0
    with Server(tmp_path, state=state, options=QUIET) as again, again.client() as c:
        assert "later" in {v["id"] for v in c.get("/v1/snapshot").json()["vms"]}
