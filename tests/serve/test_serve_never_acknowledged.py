"""On the 13-server KubeVirt example fleet (8 × 8x H100-80GB, 4 × 8x A100-80GB, 1 × 8x A100-40GB; 30
running VMs, 8 pending) with a controller that never acknowledges: a 1g pod passes some node at every
poll while checks solve and plans run; small VMs are placed by plans of their own, not queued behind
evacuations; aborted plans back off their servers; a cancel after a `migrate` lists the old GIs it
left, and a step the platform did carry out, acknowledged late, is recorded (docs/service.md#plans)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx

from tests.serve.test_serve_k8s import pod_args
from tests.serve_helpers import EXAMPLES, Server

SEED = EXAMPLES / "kubevirt-fleet.json"
OPTS = ("check_interval_s=2", "deterministic=true", "work_limit=100000")
NODES = [pm["id"] for pm in json.loads(SEED.read_text())["pms"]]


def plans(c: httpx.Client) -> list[dict]:
    return c.get("/v1/plans").json()["plans"]


def test_with_a_controller_that_never_acknowledges_pods_still_pass_and_aborts_back_off(
    tmp_path: Path,
) -> None:
    with Server(tmp_path, seed=SEED, options=OPTS, extra=["--step-timeout", "3"]) as srv, srv.client() as c:
        deadline = time.monotonic() + 90
        first_seen: dict[int, dict] = {}
        backed_off: dict[str, float] = {}  # PM → until when, from the first time it backed off
        polls = 0
        while time.monotonic() < deadline:
            passed = c.post("/k8s/filter", json=pod_args(["1g.10gb"], names=NODES)).json()["NodeNames"]
            assert passed, "a 1g pod must pass some node at every poll"
            polls += 1
            status = c.get("/v1/status").json()
            for b in status["backoff"]:
                backed_off.setdefault(b["pm"], b["until_s"])
            for p in plans(c):
                if p["id"] not in first_seen:
                    first_seen[p["id"]] = p
                    later = [pm for pm in p["pms"] if pm in backed_off and backed_off[pm] > p["created_s"]]
                    assert not later, f"plan {p['id']} uses servers backing off: {later}"
            ended = [p for p in plans(c) if p["status"] == "aborted"]
            if ended and len(first_seen) > len(ended) and backed_off:
                break
            time.sleep(0.3)
        assert polls >= 5 and backed_off
        aborted = [p for p in plans(c) if p["status"] == "aborted"]
        assert aborted and all(p["cause"] == "timeout" for p in aborted)
        # The pending VMs that fit with no move are started by plans of their own, their first step
        # ready at once: none waits behind another VM's evacuation.
        starts_only = [
            p for p in first_seen.values() if all(m["from"] is None for m in p["moves"] if m["vm"])
        ]
        assert starts_only
        for p in starts_only:
            assert p["ready_steps"], p
        assert all(len({m["vm"] for m in p["moves"] if m["vm"]}) <= 3 for p in starts_only)


def test_a_cancel_after_a_migrate_lists_the_old_gis_and_a_late_step_is_recorded(tmp_path: Path) -> None:
    with Server(tmp_path, seed=SEED, options=OPTS) as srv, srv.client() as c:
        deadline = time.monotonic() + 120
        plan = None
        while plan is None and time.monotonic() < deadline:
            for p in plans(c):
                moves = [m for m in p["moves"] if m["vm"] and m["from"] and m["from"]["pm"] != m["to"]["pm"]]
                if p["status"] == "running" and moves:
                    plan = p
                    break
            time.sleep(0.3)
        assert plan is not None, "the fleet must make a plan that migrates a VM between servers"
        move = next(m for m in plan["moves"] if m["vm"] and m["from"] and m["from"]["pm"] != m["to"]["pm"])
        steps = plan["steps"]
        # Carry out the move's steps up to its migrate, in order (waiting for its turn).
        migrate = next(n for n in move["steps"] if steps[n]["op"] == "migrate")
        for n in move["steps"]:
            if n > migrate:
                break
            while n not in c.get(f"/v1/plans/{plan['id']}").json()["ready_steps"]:
                assert time.monotonic() < deadline
                time.sleep(0.1)
            assert c.post(f"/v1/plans/{plan['id']}/steps/{n}", json={"result": "done"}).status_code == 200
        where = c.get(f"/v1/vms/{move['vm']}").json()["placement"]
        assert where["pm"] == move["to"]["pm"]  # the migrate moved it
        cancelled = c.delete(f"/v1/plans/{plan['id']}").json()
        destroys = [n for n in move["steps"] if steps[n]["op"] == "destroy_gi"]
        left = {o["step"] for o in cancelled["orphan_gis"]}
        assert set(destroys) <= left  # the old GIs were never destroyed: listed, their slices held
        assert c.get("/v1/status").json()["held"]["orphan_gis"] >= len(destroys)
        late = c.post(f"/v1/plans/{plan['id']}/steps/{destroys[0]}", json={"result": "done"})
        assert late.status_code == 200 and late.json()["late"] is True  # the platform did destroy it
        assert destroys[0] not in {o["step"] for o in late.json()["orphan_gis"]}
