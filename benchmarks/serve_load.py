"""Load on `origamig serve`: concurrent clients on loopback, mixed requests, a 1000-server cluster.

    python -m benchmarks.serve_load [--pms 1000] [--vms 3000] [--clients 8] [--requests 6000]
                                    [--max-s 900] [--seed 0] [--out benchmarks/results/serve_load.json]

A snapshot of `--pms` PMs (2× A100-40GB, 80 cores, 512 GB) with `--vms` running VMs placed by the
first-fit arrival rule (one or two GIs of profiles up to half a GPU, 4 cores and 16 GB per compute
slice, docs/simulator.md#workload) seeds a real server (a child process on 127.0.0.1, default policy
options: the optimizer runs in the background). `--clients` threads then send `--requests` requests
in all, each a random draw: 40% `POST /v1/vms` (a new VM like those above), 20% `DELETE /v1/vms/{id}`
(of a VM the client created), 30% `POST /k8s/filter` and 10% `POST /k8s/prioritize` (a pod with one
GI and every PM as `NodeNames`, as kube-scheduler sends them with `nodeCacheCapable`). Bounded: the
run stops at `--max-s` wall seconds whatever is left.

At the end: nothing lost (every VM a reply placed is where the reply said, every one it queued is
pending or was rejected by the optimizer, every deleted one is gone; none else), and the state passes
the independent checker. Prints p50/p99 latency (ms, measured by the client around each request) per
route and writes them as JSON (target: p99 of /k8s/filter ≤ 50 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from rich.table import Table

from benchmarks.publish import write_json
from origamig.cli.terminal import operator_console
from origamig.cluster.catalog import default_catalog
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import PmSpec, cores_to_m, gb_to_mb
from origamig.policies.arrival_rule import first_fit
from origamig.policies.base import Rejection
from origamig.sim.workload import vm_for
from origamig.snapshot.document import placement_json
from tests.serve_helpers import Server, valid

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "serve_load.json"
TARGET_FILTER_P99_MS = 50.0
PROFILES = ("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb")
MIX = (("post", 0.4), ("delete", 0.2), ("filter", 0.3), ("prioritize", 0.1))


def cluster(pms: int, vms: int, rng: random.Random) -> dict[str, Any]:
    """The seed snapshot: PMs and VMs placed first fit (a VM that fits nowhere is left out)."""
    a100 = default_catalog().gpu("A100-40GB")
    specs = [PmSpec(f"pm{j}", cores_to_m(80), gb_to_mb(512), (a100, a100)) for j in range(pms)]
    dc = DataCenter(specs)
    entries = []
    for i in range(vms):
        gis = [rng.choice(PROFILES) for _ in range(1 if rng.random() < 0.75 else 2)]
        vm = vm_for(f"seed{i}", [a100.profile(g) for g in gis])
        pl = first_fit(dc, vm)
        if isinstance(pl, Rejection):
            continue
        dc.place(vm, pl)
        entries.append({"id": vm.id, "cpu": vm.cpu, "ram_gb": vm.ram_gb, "gis": gis})
    where = placement_json(dc.pms, dc.placement)
    for e in entries:
        e["placement"] = where[e["id"]]
    pm_docs = [{"id": p.id, "cpu": 80, "ram_gb": 512, "gpus": ["A100-40GB", "A100-40GB"]} for p in specs]
    return {"version": 1, "pms": pm_docs, "vms": entries}


def pod(name: str, profile: str) -> dict[str, Any]:
    resources = {"cpu": "4", "memory": "16G", f"nvidia.com/mig-{profile}": "1"}
    return {
        "metadata": {"name": name, "namespace": "bench", "uid": name},
        "spec": {"containers": [{"name": "main", "resources": {"limits": resources, "requests": resources}}]},
    }


class Client(threading.Thread):
    """One client: its share of the requests, each timed; what the replies said about its VMs."""

    def __init__(self, n: int, srv: Server, count: int, names: list[str], seed: int, stop_at: float) -> None:
        super().__init__(name=f"client-{n}")
        self.n, self.srv, self.count, self.names, self.stop_at = n, srv, count, names, stop_at
        self.rng = random.Random(seed * 1000 + n)
        self.latency: dict[str, list[float]] = {kind: [] for kind, _ in MIX}
        self.placed: dict[str, Any] = {}  # VM id → placement (201) or None (202)
        self.deleted: set[str] = set()
        self.errors: list[str] = []

    def run(self) -> None:
        kinds, weights = zip(*MIX, strict=True)
        with self.srv.client() as c:
            for i in range(self.count):
                if time.monotonic() > self.stop_at:
                    return
                kind = self.rng.choices(kinds, weights)[0]
                if kind == "delete" and not self.placed:
                    kind = "post"
                t0 = time.perf_counter()
                if kind == "post":
                    vm = f"c{self.n}-{i}"
                    gis = [self.rng.choice(PROFILES)]
                    compute = int(gis[0][0])
                    body = {"id": vm, "cpu": 4 * compute, "ram_gb": 16 * compute, "gis": gis}
                    r = c.post("/v1/vms", json=body)
                    ok = r.status_code in (201, 202)
                    if ok:
                        self.placed[vm] = r.json().get("placement")
                elif kind == "delete":
                    vm = self.rng.choice(sorted(self.placed))
                    r = c.delete(f"/v1/vms/{vm}")
                    ok = r.status_code == 204 or (r.status_code == 404 and self.placed[vm] is None)
                    del self.placed[vm]
                    self.deleted.add(vm)
                else:
                    args = {"Pod": pod(f"p{self.n}-{i}", self.rng.choice(PROFILES)), "NodeNames": self.names}
                    r = c.post(f"/k8s/{kind}", json=args)
                    ok = r.status_code == 200
                self.latency[kind].append((time.perf_counter() - t0) * 1000)
                if not ok:
                    self.errors.append(f"{kind}: {r.status_code} {r.text[:200]}")


def percentile(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    ordered = sorted(xs)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def lost(doc: dict[str, Any], clients: list[Client], seeded: set[str], rejected: set[str]) -> list[str]:
    """Every way the final state differs from what the replies said (empty: nothing lost)."""
    final = {v["id"]: v.get("placement") for v in doc["vms"]}
    said: dict[str, Any] = {}
    deleted: set[str] = set()
    for cl in clients:
        said.update(cl.placed)
        deleted |= cl.deleted
    problems = []
    for vm, where in said.items():
        if where is not None and final.get(vm) != where:
            problems.append(f"{vm}: placed at {where}, now {final.get(vm, 'missing')}")
        if where is None and not (vm in final and final[vm] is None) and vm not in rejected:
            problems.append(f"{vm}: queued, now {final.get(vm, 'missing')} and not rejected")
    problems += [f"{vm}: deleted but present" for vm in deleted if vm in final]
    problems += [f"{vm}: present but never placed" for vm in final if vm not in said and vm not in seeded]
    return problems


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pms", type=int, default=1000)
    ap.add_argument("--vms", type=int, default=3000)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=6000)
    ap.add_argument("--max-s", type=float, default=900.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    seed = cluster(args.pms, args.vms, rng)
    names = [p["id"] for p in seed["pms"]]
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "seed.json").write_text(json.dumps(seed))
        srv = Server(Path(tmp), seed=Path(tmp) / "seed.json").start()
        try:
            started = time.monotonic()
            share = [
                args.requests // args.clients + (n < args.requests % args.clients)
                for n in range(args.clients)
            ]
            clients = [
                Client(n, srv, share[n], names, args.seed, started + args.max_s) for n in range(args.clients)
            ]
            for cl in clients:
                cl.start()
            for cl in clients:
                cl.join()
            wall = time.monotonic() - started
            with srv.client() as c:
                doc = c.get("/v1/snapshot").json()
                rejected = [
                    vm for cl in clients for vm, w in cl.placed.items()
                    if w is None and c.get(f"/v1/vms/{vm}").json()["status"] == "rejected"
                ]  # fmt: skip
        finally:
            srv.stop()
    valid(doc)  # the independent checker accepts the final state
    problems = lost(doc, clients, {v["id"] for v in seed["vms"]}, set(rejected))
    errors = [e for cl in clients for e in cl.errors]
    routes = {
        kind: {
            "count": len(xs),
            "p50_ms": percentile(xs, 0.5),
            "p99_ms": percentile(xs, 0.99),
            "mean_ms": statistics.fmean(xs) if xs else None,
        }
        for kind, _ in MIX
        for xs in [[x for cl in clients for x in cl.latency[kind]]]
    }
    sent = sum(r["count"] for r in routes.values())
    table = Table(title=f"origamig serve under load: {args.pms} PMs, {args.clients} clients, {sent} requests")
    for col in ("route", "requests", "p50 ms", "p99 ms", "mean ms"):
        table.add_column(col, justify="left" if col == "route" else "right")
    for kind, r in routes.items():
        cells = [r["p50_ms"], r["p99_ms"], r["mean_ms"]]
        table.add_row(kind, str(r["count"]), *("-" if x is None else f"{x:.1f}" for x in cells))
    console = operator_console()
    console.print(table)
    filter_p99 = routes["filter"]["p99_ms"] or 0.0
    verdict = "met" if filter_p99 <= TARGET_FILTER_P99_MS else "not met"
    console.print(
        f"wall {wall:.1f} s, {sent / wall:.0f} requests/s; errors {len(errors)}; lost {len(problems)}; "
        f"rejected by the optimizer {len(rejected)}; filter p99 {filter_p99:.1f} ms "
        f"(target ≤ {TARGET_FILTER_P99_MS:g} ms: {verdict})"
    )
    result = {
        "benchmark": "serve_load",
        "pms": args.pms,
        "seed_vms": len(seed["vms"]),
        "clients": args.clients,
        "requests": sent,
        "wall_s": wall,
        "routes": routes,
        "errors": errors[:20],
        "lost": problems[:20],
        "rejected_by_optimizer": len(rejected),
        "final_vms": len(doc["vms"]),
        "target_filter_p99_ms": TARGET_FILTER_P99_MS,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
    }
    write_json(args.out, result)  # makes the folder
    if errors or problems:
        raise SystemExit(f"{len(errors)} errors, {len(problems)} lost: see {args.out}")


if __name__ == "__main__":
    main()
