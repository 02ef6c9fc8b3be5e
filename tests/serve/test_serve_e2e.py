"""An end-to-end deployment: a request log driven through the real server by a stand-in for the
cluster's controllers (tests/deployment_controller.py) — a kube-scheduler that binds pods where the
extender's score plus its own is best, a VM platform that carries out plans late, fails some steps
and stops acknowledging for a while — with the controller killed (SIGKILL) and restarted twice and
the service once. At the end the service's state equals the controller's own view, passes the
independent checker, and nothing acknowledged is lost.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.paths import TESTS
from tests.serve_helpers import TOKEN, Server, read, valid

CONTROLLER = TESTS / "deployment_controller.py"
H, A = "H100-80GB", "A100-80GB"
PROFILES = ("1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")
COMPUTE = {"1g.10gb": 1, "2g.20gb": 2, "3g.40gb": 3, "4g.40gb": 4, "7g.80gb": 7}
OPTIONS = ("check_interval_s=0.3", "deterministic=true", "work_limit=100000")


def fleet() -> dict[str, Any]:
    """Three 8x H100 and two 4x A100-80GB servers, a few VMs running; tight enough that pods wait."""
    pms = [{"id": f"h{n}", "cpu": 64, "ram_gb": 512, "gpus": [H] * 8} for n in range(3)]
    pms += [{"id": f"a{n}", "cpu": 32, "ram_gb": 256, "gpus": [A] * 4} for n in range(2)]
    vms = [
        running("base-0", "2g.20gb", "h0", 0, 2),
        running("base-1", "1g.10gb", "a0", 1, 3),
        {**running("base-2", "3g.40gb", "h1", 3, 4), "migratable": False},
    ]
    return {"version": 1, "pms": pms, "vms": vms}


def running(vm: str, profile: str, pm: str, gpu: int, start: int) -> dict[str, Any]:
    c = COMPUTE[profile]
    return {"id": vm, "cpu": 3 * c, "ram_gb": 32 * c, "gis": [profile],
            "placement": {"pm": pm, "gis": [{"gpu": gpu, "start": start}]}}  # fmt: skip


def request_log(rng: random.Random, count: int = 40) -> dict[str, Any]:
    """Pods arriving (one or two GIs of one profile, no GPU model named) and some leaving again."""
    events: list[dict[str, Any]] = []
    alive: list[str] = []
    for i in range(count):
        if alive and rng.random() < 0.3:
            vm = alive.pop(rng.randrange(len(alive)))
            events.append({"op": "depart", "id": vm})
            continue
        name = rng.choice(PROFILES)
        n = 2 if rng.random() < 0.25 else 1
        cpu, ram = 3 * COMPUTE[name] * n, 32 * COMPUTE[name] * n
        vm = {"id": f"default/pod-{i}", "cpu": cpu, "ram_gb": ram, "gis": [name] * n}
        limits = {"cpu": str(cpu), "memory": f"{ram}G", f"nvidia.com/mig-{name}": str(n)}
        pod = {
            "metadata": {"name": f"pod-{i}", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "resources": {"limits": limits, "requests": limits}}]},
        }
        events.append({"op": "arrive", "vm": vm, "pod": pod})
        alive.append(vm["id"])
    start = {vm["id"]: vm["placement"] for vm in fleet()["vms"]}
    return {"nodes": ["h0", "h1", "h2", "a0", "a1"], "events": events, "running": start}


def controller(srv: Server, log: Path, journal: Path) -> subprocess.Popen[str]:
    cmd = [sys.executable, str(CONTROLLER), srv.url, TOKEN, str(log), str(journal), "7"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


# Whether the optimizer's plans meet the controller's acknowledgements depends on the request log and
# on timing: with small VMs placed without waiting for plans, most logs need no plan a pod waits for, or
# every plan is aborted (stale, or timed out while the controller is down) before its first step —
# 5 of 8 logs measured on a quiet machine had no acknowledged step. Logs 2, 3 and 7 had one in each of
# three trials, so they come first. Every run's invariants are checked; runs are made, one log each,
# until one has an acknowledged step, so that the test always covers one.
REQUEST_LOGS = (2, 3, 7, 0, 1, 4, 5, 6)


@pytest.mark.slow
def test_a_deployment_with_kills_ends_in_the_controllers_view(tmp_path: Path) -> None:
    acked: list[dict[str, Any]] = []
    for log in REQUEST_LOGS:
        acked = run_deployment(tmp_path / f"run{log}", random.Random(20261206 + log))
        if acked:
            return
    assert acked, f"no plan step was acknowledged in {len(REQUEST_LOGS)} runs"


def run_deployment(tmp_path: Path, rng: random.Random) -> list[dict[str, Any]]:
    """One deployment with kills; asserts that it ends in the controller's view, and returns the plan
    steps the controller acknowledged (each checked against the service's record of its plan)."""
    tmp_path.mkdir()
    seed = tmp_path / "fleet.json"
    seed.write_text(json.dumps(fleet()))
    log = tmp_path / "log.json"
    log.write_text(json.dumps(request_log(rng)))
    journal = tmp_path / "journal.jsonl"
    srv = Server(tmp_path, seed=seed, options=OPTIONS, extra=["--step-timeout", "2"])
    srv.start()
    try:
        kills = [rng.uniform(3.0, 6.0), rng.uniform(3.0, 6.0)]
        proc = controller(srv, log, journal)
        for delay in kills:  # the controller dies in the middle of whatever it was doing
            time.sleep(delay)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc = controller(srv, log, journal)
        time.sleep(rng.uniform(1.0, 3.0))
        port = srv.port
        srv.kill()  # the service dies too; the controller retries until it is back
        srv.start(port)
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-2000:]
        view = json.loads(out)
        with srv.client() as c:
            doc = c.get("/v1/snapshot").json()
            plans = c.get("/v1/plans").json()["plans"]
        valid(doc)
        state = read(doc)
        placement = {v: e["placement"] for v, e in ((e["id"], e) for e in doc["vms"]) if "placement" in e}
        assert placement == view["placement"]
        assert sorted(state.pending) == view["pending"]
        assert (
            state.placement["base-2"]
            == read(json.loads(seed.read_text()) | {"vms": fleet()["vms"]}).placement["base-2"]
        )  # the pinned VM never moved
        lines = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
        acked = [e for e in lines if e["kind"] == "acked"]
        for e in acked:  # every acknowledged step is in the service's record of its plan, as reported
            plan = next(p for p in plans if p["id"] == e["plan"])
            assert plan["steps"][e["n"]]["status"] == e["result"], (e, plan["status"])
        return acked
    finally:
        srv.kill()
