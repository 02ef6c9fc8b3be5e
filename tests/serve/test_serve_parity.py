"""Parity: a request log replayed through the HTTP API (`--clock replay`, a deterministic optimizer,
`--controller simulated`) gives the same placements, pending queues, calls and plans as the simulator
on the same log — one runtime drives both (docs/design.md#runtime).

The simulator runs the log through `sim/engine.py` exactly as `origamig simulate --requests LOG
--from SNAPSHOT -o deterministic=true ...` does (the same reader, PMs and policy options). The
replay drives the service with the engine's event order: departures and arrivals at their times
(`POST /v1/clock` first: the service runs its own call ends, move ends and checks up to then, its
simulated controller carrying out each move at its modeled end); a VM a plan starts leaves a lifetime
after its start, as the clock's answer tells. Both sides are sampled at the same instants.
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
from origamig.policies.base import make_policy
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
SAMPLE, DEPARTURE, ARRIVAL = -1, 2, 3  # same-time order of runtime/events.py (samples first)


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


def simulated(snap: Path, log: Path) -> tuple[dict[float, Any], list]:
    pms = start_pms(str(snap))
    requests = read_requests(log, default_catalog())
    policy = make_policy("origamig", **OPTIONS)
    seen: dict[float, Any] = {}

    def sample(t: float, dc: Any) -> None:
        seen[t] = (placement_json(dc.pms, dc.placement), pending(dc, sim))

    sim = Simulation(pms, requests, policy, 0.0, END_S, deterministic=True, samples=SAMPLES, on_sample=sample)
    sim.run()
    plans = [(p.kind, [s.to_dict() for s in p.steps], p.created_s) for p in sim.runtime.plans.plans.values()]
    return seen, plans


def pending(dc: Any, sim: Simulation) -> list[str]:
    """The VMs that wait, in arrival order: in the queue, or in a plan that is to start them."""
    reserved = {v for p in sim.runtime.plans.running() for v in p.reserved}
    return [v for v in sim.pending if v in dc.pending or v in reserved]


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
            t, kind, _, payload = heapq.heappop(heap)
            moved = c.post("/v1/clock", json={"now": t}).json()
            assert moved["now"] == t
            for started in moved["started"]:  # a VM a plan started lives from its start
                v = started["vm"]
                heapq.heappush(heap, (started["t"] + requests[v].lifetime_s, DEPARTURE, next(counter), v))
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
            else:
                assert c.delete(f"/v1/vms/{payload}").status_code == 204
        plans = c.get("/v1/plans").json()["plans"]
    strip = ("n", "status")
    return seen, [
        (p["kind"], [{k: v for k, v in s.items() if k not in strip} for s in p["steps"]], p["created_s"])
        for p in plans
    ]


@pytest.mark.slow
def test_a_replayed_log_matches_the_simulator(tmp_path: Path) -> None:
    snap, log = write_inputs(tmp_path, 7)
    sim_seen, sim_plans = simulated(snap, log)
    options = [f"{k}={json.dumps(v)}" for k, v in OPTIONS.items()]
    extra = ["--clock", "replay", "--controller", "simulated"]
    with Server(tmp_path, seed=snap, options=options, extra=extra) as srv:
        api_seen, api_plans = replayed(srv, log)
    assert sim_plans, "the log must make the optimizer act"
    for t in SAMPLES:
        assert api_seen[t] == sim_seen[t], t
    made = [p for p in sim_plans if p[2] <= SAMPLES[-1]]  # the replay's clock stops at its last sample
    assert api_plans == made
