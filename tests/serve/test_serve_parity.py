"""Parity: a request log replayed through the HTTP API (`--clock replay`, a deterministic optimizer)
gives the same placements, pending queues, calls and plans as the simulator on the same log.

The simulator runs the log through `sim/engine.py` exactly as `origamig simulate --requests LOG
--from SNAPSHOT -o deterministic=true ...` does (the same reader, PMs and policy options). The
replay drives the service with the engine's event order: call ends, departures, arrivals, and the
service's own checks in between (`POST /v1/clock`); each plan is acknowledged step by step at its
call end (`created_s + modeled_s`). Both sides are sampled at the same instants.
"""

from __future__ import annotations

import csv
import heapq
import itertools
import json
import random
from pathlib import Path
from typing import Any

import pytest

from origamig.cluster.catalog import default_catalog
from origamig.policies.base import Work, make_policy
from origamig.sim.engine import Simulation
from origamig.sim.requests_file import read_requests
from origamig.sim.start import start_pms
from origamig.snapshot.document import placement_json
from tests.serve_helpers import Server

# The service's defaults (goal balanced, GIs in GPU order, the fast primal answer), given to both sides.
OPTIONS = {
    "deterministic": True,
    "work_limit": 100000,
    "check_interval_s": 10.0,
    "goal": "balanced",
    "gpu_order": True,
    "primal": True,
}
PMS = 6
PROFILES = ("1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb")
REQUESTS = 200
SAMPLES = [7.3 + 23.0 * k for k in range(90)]  # off the 10-s check grid
END_S = 2100.0
SAMPLE, CALL_END, DEPARTURE, ARRIVAL = -1, 0, 1, 2  # same-time order of sim/events.py (samples first)


def write_inputs(tmp: Path, seed: int) -> tuple[Path, Path]:
    rng = random.Random(seed)
    snapshot = {
        "version": 1,
        "pms": [
            {"id": f"pm{j}", "cpu": 80, "ram_gb": 512, "gpus": ["A100-40GB", "A100-40GB"]} for j in range(PMS)
        ],
        "vms": [],
    }
    snap_path = tmp / "cluster.json"
    snap_path.write_text(json.dumps(snapshot))
    log = tmp / "requests.csv"
    with log.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "arrival_s", "lifetime_s", "gpu_model", "gis", "cpu", "ram_gb"])
        t = 0.0
        for i in range(REQUESTS):
            t += rng.uniform(0.5, 9.5)
            gis = ";".join(
                rng.choice(["1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"])
                for _ in range(rng.choice([1, 1, 2]))
            )
            w.writerow([f"r{i}", f"{t:.3f}", f"{rng.uniform(40, 400):.3f}", "A100-40GB", gis, "", ""])
    return snap_path, log


class Recording:
    """The policy, with the applied calls' plans recorded as the simulator ends them."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.plans: list[tuple[str, list[dict]]] = []

    def arrive(self, *a: Any) -> Any:
        return self.inner.arrive(*a)

    def depart(self, *a: Any) -> None:
        self.inner.depart(*a)

    def next_check(self, now: float) -> float | None:
        return self.inner.next_check(now)

    def work(self, *a: Any) -> Work | None:
        return self.inner.work(*a)

    def finished(self, dc: Any, work: Work, now: float) -> None:
        if work.applied and work.plan is not None and work.plan.steps:
            self.plans.append((work.kind, [s.to_dict() for s in work.plan.steps]))
        self.inner.finished(dc, work, now)

    def counters(self) -> dict[str, float]:
        return self.inner.counters()


def simulated(snap: Path, log: Path) -> tuple[dict[float, Any], list]:
    pms = start_pms(str(snap))
    requests = read_requests(log, default_catalog())
    policy = Recording(make_policy("origamig", **OPTIONS))
    seen: dict[float, Any] = {}

    def sample(t: float, dc: Any) -> None:
        seen[t] = (placement_json(dc.pms, dc.placement), list(dc.pending))

    Simulation(pms, requests, policy, 0.0, END_S, deterministic=True, samples=SAMPLES, on_sample=sample).run()
    return seen, policy.plans


def replayed(srv: Server, log: Path) -> tuple[dict[float, Any], list]:
    requests = {r.id: r for r in read_requests(log, default_catalog())}
    counter = itertools.count()
    heap: list[tuple[float, int, int, Any]] = []
    for r in requests.values():
        heapq.heappush(heap, (r.arrival_s, ARRIVAL, next(counter), r.id))
    for s in SAMPLES:
        heapq.heappush(heap, (s, SAMPLE, next(counter), s))
    seen: dict[float, Any] = {}
    with srv.client() as c:
        while heap:
            t, kind, _, payload = heap[0]
            moved = c.post("/v1/clock", json={"now": t}).json()
            for plan in moved["plans"]:  # a check before t made a plan: its call end may come first
                heapq.heappush(heap, (plan["created_s"] + plan["modeled_s"], CALL_END, next(counter), plan))
            if moved["plans"]:
                continue
            heapq.heappop(heap)
            if kind == SAMPLE:
                doc = c.get("/v1/snapshot").json()
                placed = {v["id"]: v["placement"] for v in doc["vms"] if "placement" in v}
                seen[payload] = (
                    dict(sorted(placed.items())),
                    [v["id"] for v in doc["vms"] if "placement" not in v],
                )
            elif kind == ARRIVAL:
                vm = requests[payload].vm
                entry = {"id": vm.id, "cpu": vm.cpu, "ram_gb": vm.ram_gb, "gis": [p.name for p in vm.gis]}
                r = c.post("/v1/vms", json={**entry, "gpu_model": "A100-40GB"})
                assert r.status_code in (201, 202), r.text
                if r.status_code == 201:
                    heapq.heappush(
                        heap, (t + requests[payload].lifetime_s, DEPARTURE, next(counter), payload)
                    )
            elif kind == DEPARTURE:
                assert c.delete(f"/v1/vms/{payload}").status_code == 204
            else:
                for n in range(len(payload["steps"])):
                    r = c.post(f"/v1/plans/{payload['id']}/steps/{n}", json={"result": "done"})
                    assert r.status_code == 200, r.text
                for v in payload["admitted"]:
                    heapq.heappush(heap, (t + requests[v].lifetime_s, DEPARTURE, next(counter), v))
        plans = c.get("/v1/plans").json()["plans"]
    assert all(p["status"] == "done" for p in plans)
    strip = ("n", "status")
    return seen, [
        (p["kind"], [{k: v for k, v in s.items() if k not in strip} for s in p["steps"]]) for p in plans
    ]


@pytest.mark.slow
def test_a_replayed_log_matches_the_simulator(tmp_path: Path) -> None:
    snap, log = write_inputs(tmp_path, 7)
    sim_seen, sim_plans = simulated(snap, log)
    options = [f"{k}={json.dumps(v)}" for k, v in OPTIONS.items()]
    with Server(tmp_path, seed=snap, options=options, extra=["--clock", "replay"]) as srv:
        api_seen, api_plans = replayed(srv, log)
    assert sim_plans, "the log must make the optimizer act"
    for t in SAMPLES:
        assert api_seen[t] == sim_seen[t], t
    assert api_plans == sim_plans
