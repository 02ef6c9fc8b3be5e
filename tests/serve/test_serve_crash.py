"""Crash safety: `kill -9` at random moments of a bounded run (arrivals, departures, step
acknowledgements), then a restart on the same state file.

The client keeps, from the successful replies alone, what the state must be: a 201 says where a VM
runs, a 204 that it is gone, an acknowledged `migrate` or `start` step where its VM runs now (the
GIs the plan created for it). After each restart the service's snapshot must be exactly that — or
that plus the one request in flight when the process died, which may or may not have been committed —
and valid under the independent checker.
"""

from __future__ import annotations

import itertools
import json
import random
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.serve.test_serve_plans import wait_plan
from tests.serve_helpers import Server, valid

PMS = [f"pm{j}" for j in range(6)]
SEED_DOC = {
    "version": 1,
    "pms": [{"id": p, "cpu": 80, "ram_gb": 512, "gpus": ["A100-40GB", "A100-40GB"]} for p in PMS],
    "vms": [
        {"id": f"s{j}", "cpu": 4, "ram_gb": 16, "gis": ["1g.5gb"],
         "placement": {"pm": p, "gis": [{"gpu": 0, "start": 0}]}}
        for j, p in enumerate(PMS)
    ],
}  # fmt: skip
# Without admission calls nothing waits: a request that fits nowhere (while a plan holds every PM) is
# refused (422) and changes nothing, so every change of the state is one reply the client saw.
OPTIONS = ("check_interval_s=0.3", "deterministic=true", "work_limit=100000", "admission_calls=false")
ROUNDS = 5
MAX_VMS = 16  # far from full: a request is refused only while a plan holds every PM


def placements(doc: dict) -> dict[str, Any]:
    return {v["id"]: v.get("placement") for v in doc["vms"]}


def moved_to(plan: dict, n: int, current: dict[str, Any]) -> tuple[str, Any] | None:
    """Where step n (a migrate or start) puts its VM: the GIs the plan created for it since its last move."""
    step = plan["steps"][n]
    if step["op"] not in ("migrate", "start"):
        return None
    vm = step["vm"]
    pm = step["to"] if step["op"] == "migrate" else step["pm"]
    gis = {}
    for s in plan["steps"][:n]:
        if s.get("vm") == vm and s["op"] == "create_gi":
            gis[s["gi"]] = {"gpu": s["gpu"], "start": s["start"]}
        if s.get("vm") == vm and s["op"] in ("migrate", "start"):
            gis = {}
    old = (current.get(vm) or {}).get("gis", [])
    count = max([len(old), *(g + 1 for g in gis)])
    return vm, {"pm": pm, "gis": [gis.get(g, old[g] if g < len(old) else None) for g in range(count)]}


def acceptable(found: dict[str, Any], said: dict[str, Any], inflight: tuple | None) -> bool:
    if found == said:
        return True
    if inflight is None:
        return False
    kind, what = inflight
    if kind == "post":
        return what in found and {k: v for k, v in found.items() if k != what} == said
    if kind == "delete":
        return found == {k: v for k, v in said.items() if k != what}
    vm, where = what
    return found == {**said, vm: where}


@pytest.mark.slow
def test_kill_9_at_random_moments_then_restart(tmp_path: Path) -> None:
    rng = random.Random(20261205)
    seed = tmp_path / "seed.json"
    seed.write_text(json.dumps(SEED_DOC))
    srv = Server(tmp_path, seed=seed, options=OPTIONS)
    try:
        run_rounds(srv, rng)
    finally:
        srv.kill()


def run_rounds(srv: Server, rng: random.Random) -> None:
    said: dict[str, Any] | None = None
    inflight: tuple | None = None
    names = itertools.count()
    acks = moves = 0
    for _ in range(ROUNDS):
        srv.start()
        with srv.client() as c:
            doc = c.get("/v1/snapshot").json()
            valid(doc)
            found = placements(doc)
            if said is None:  # the first plan, made before any request can make it stale
                wait_plan(c, 1)
            else:
                assert acceptable(found, said, inflight), (found, said, inflight)
            said, inflight = found, None
            killer = threading.Timer(rng.uniform(1.0, 5.0), srv.proc.kill)  # SIGKILL
            killer.start()
            try:
                while True:
                    inflight = None
                    running = [p for p in c.get("/v1/plans").json()["plans"] if p["status"] == "running"]
                    plan = running[0] if running and running[0]["next_step"] is not None else None
                    held = {s["vm"] for s in plan["steps"] if "vm" in s} if plan else set()
                    op = rng.random()
                    if plan is not None and op < 0.6:
                        n = plan["next_step"]
                        result = "failed" if moves and rng.random() < 0.1 else "done"
                        move = moved_to(plan, n, said) if result == "done" else None
                        inflight = ("ack", move) if move is not None else None
                        r = c.post(f"/v1/plans/{plan['id']}/steps/{n}", json={"result": result})
                        assert r.status_code == 200, r.text
                        acks += 1
                        if move is not None:
                            said[move[0]] = move[1]
                            moves += 1
                    elif (op < 0.8 or len(said) <= len(held) + 2) and len(said) < MAX_VMS:
                        vm = f"r{next(names)}"
                        gis = [rng.choice(["1g.5gb", "2g.10gb"])]
                        inflight = ("post", vm)
                        r = c.post("/v1/vms", json={"id": vm, "cpu": 4, "ram_gb": 16, "gis": gis})
                        assert r.status_code in (201, 422), r.text
                        if r.status_code == 201:
                            said[vm] = r.json()["placement"]
                    elif set(said) - held:
                        vm = rng.choice(sorted(set(said) - held))  # leave the plan's VMs alone
                        inflight = ("delete", vm)
                        assert c.delete(f"/v1/vms/{vm}").status_code == 204
                        del said[vm]
            except httpx.TransportError:
                pass  # the process died under the request in flight
            finally:
                killer.cancel()
        srv.kill()
    srv.start()
    with srv.client() as c:
        doc = c.get("/v1/snapshot").json()
        valid(doc)
        assert acceptable(placements(doc), said, inflight)
    srv.stop()
    assert acks > 0 and moves > 0  # the run acknowledged steps, some of which moved a VM
