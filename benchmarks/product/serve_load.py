"""Load on `origamig serve`: concurrent clients on loopback, a read-heavy mix, 1,000 to 10,000 servers.

    python -m benchmarks.product.serve_load [--pms 1000,10000] [--clients 8,32] [--requests 6000]
                                            [--vms-per-pm 3] [--node-names kube|all] [--check-interval 10]
                                            [--max-s 900] [--seed 0] [--freeze-worker]
                                            [--fresh] [--out benchmarks/results/serve_load.json]

Each cell (servers × clients) seeds a cluster of `--pms` PMs (2× A100-40GB, 80 cores, 512 GB) with
`--vms-per-pm` running VMs each, placed by the first-fit arrival rule (one or two GIs of profiles up to
half a GPU, 4 cores and 16 GB per compute slice, docs/simulator.md#workload), starts a real server
(a child process on 127.0.0.1, default policy options but `--check-interval`: the optimizer runs
in the background), and sends `--requests` requests from `--clients` threads, each a random draw of

    POST /v1/vms 20% · DELETE /v1/vms/{id} 10% · POST /k8s/filter 30% · POST /k8s/prioritize 10%
    GET /v1/snapshot 5% · GET /v1/plans 10% · GET /v1/vms/{id} 10% · GET /v1/status 5%

while a probe asks `GET /healthz` every 100 ms (as a kubelet would) and a controller acknowledges
every step of every plan as soon as it sees it (as a VM platform would). Each client, the probe and
the controller is a process of its own: no client's interpreter lock delays another's timings. A
filter or prioritize call names the nodes kube-scheduler would send (`--node-names kube`: its default
sample of feasible nodes, `max(100, n × max(5, 50 − n/125) %)` — 420 of 1,000, 500 of 10,000) or
every node (`all`).

Each cell also records how long the server takes from its start to a healthy `/healthz` (reading
the seed and writing its state) and its peak resident memory with its optimizer worker's. At the end
of a cell: nothing lost (every VM a reply placed is where the reply said, every one it
queued is pending, placed by a plan or rejected by the optimizer, every deleted one is gone; none
else), the state passes the independent checker, and `GET /v1/status` says how many plans ran, were
done or aborted, and why. `--freeze-worker` stops the optimizer's worker process (SIGSTOP) before
the clients start and lets it go on (SIGCONT) after they are done: the service with a frozen
optimizer. Prints p50/p99 latency per route (ms, measured by the client around each
request) and writes every cell to the JSON as soon as it is done; a rerun skips the cells already
there (`--fresh` runs them again). Targets with 8 clients: `/k8s/filter` p99 ≤ 50 ms and `/healthz`
p99 ≤ 20 ms, 0 errors, 0 lost. Bounded: a cell stops at `--max-s` wall seconds whatever is left.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import random
import signal
import statistics
import sys
import tempfile
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

import httpx
from rich.table import Table

from benchmarks import ROOT
from benchmarks.publish import write_json
from origamig.cli.terminal import operator_console
from origamig.cluster.catalog import default_catalog
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import PmSpec, cores_to_m, gb_to_mb
from origamig.serve.fit import ARRIVAL_FITS, fit_on_pm
from origamig.sim.workload import vm_for
from origamig.snapshot.document import placement_json
from tests.serve_helpers import TOKEN, Server, valid

RESULTS = ROOT / "benchmarks" / "results" / "serve_load.json"
TARGETS_MS = {"filter": 50.0, "healthz": 20.0}  # p99, with 8 clients
PROFILES = ("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb")
MIX = (
    ("post", 0.20),
    ("delete", 0.10),
    ("filter", 0.30),
    ("prioritize", 0.10),
    ("snapshot", 0.05),
    ("plans", 0.10),
    ("vm", 0.10),
    ("status", 0.05),
)
ROUTES = (*(kind for kind, _ in MIX), "healthz", "ack")
PROBE_EVERY_S = 0.1
CONTROLLER_EVERY_S = 0.2


def cluster(pms: int, vms: int, rng: random.Random) -> dict[str, Any]:
    """The seed snapshot: PMs, and VMs placed by first fit from the PM where the last one went (a VM
    that fits nowhere further on is left out)."""
    a100 = default_catalog().gpu("A100-40GB")
    specs = [PmSpec(f"pm{j}", cores_to_m(80), gb_to_mb(512), (a100, a100)) for j in range(pms)]
    dc = DataCenter(specs)
    entries, j = [], 0
    for i in range(vms):
        gis = [rng.choice(PROFILES) for _ in range(1 if rng.random() < 0.75 else 2)]
        vm = vm_for(f"seed{i}", [a100.profile(g) for g in gis])
        while j < pms and isinstance(hit := fit_on_pm(dc, j, vm, ARRIVAL_FITS["ff"]), str):
            j += 1
        if j == pms:
            break
        dc.place(vm, hit[1])
        entries.append({"id": vm.id, "cpu": vm.cpu, "ram_gb": vm.ram_gb, "gis": gis})
    where = placement_json(dc.pms, dc.placement)
    for e in entries:
        e["placement"] = where[e["id"]]
    pm_docs = [{"id": p.id, "cpu": 80, "ram_gb": 512, "gpus": ["A100-40GB", "A100-40GB"]} for p in specs]
    return {"version": 1, "pms": pm_docs, "vms": entries}


def peak_rss_mb(pid: int) -> float | None:
    """Peak resident memory (VmHWM) of process `pid` and of its direct children, in MB; None off Linux."""

    def hwm(p: int) -> float:
        for line in Path(f"/proc/{p}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return 0.0

    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return hwm(pid) + sum(hwm(int(c)) for c in children)
    except OSError:
        return None


def kube_sample_size(n: int) -> int:
    """How many feasible nodes kube-scheduler looks for (and so sends an extender) by default."""
    if n < 100:
        return n
    percentage = max(5, 50 - n // 125)
    return min(n, max(100, n * percentage // 100))


def pod(name: str, profile: str) -> dict[str, Any]:
    resources = {"cpu": "4", "memory": "16G", f"nvidia.com/mig-{profile}": "1"}
    return {
        "metadata": {"name": name, "namespace": "bench", "uid": name},
        "spec": {"containers": [{"name": "main", "resources": {"limits": resources, "requests": resources}}]},
    }


def http(url: str, token: str | None = TOKEN) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=url, headers=headers, timeout=30.0)


class Timed(ABC):
    """Work run in a process of its own (so that no client's interpreter lock delays another's
    timings): its requests timed per route, what went wrong; `result()` goes back to the parent."""

    def __init__(self) -> None:
        self.latency: dict[str, list[float]] = {}
        self.errors: list[str] = []

    @abstractmethod
    def run(self) -> None:
        """The worker's requests, until its share is sent or the cell's time is up."""

    def result(self) -> dict[str, Any]:
        return {"latency": self.latency, "errors": self.errors}

    def timed(self, kind: str, send: Any, ok: Any) -> httpx.Response | None:
        t0 = time.perf_counter()
        try:
            r = send()
        except httpx.HTTPError as exc:
            self.errors.append(f"{kind}: {exc!r}")
            return None
        self.latency.setdefault(kind, []).append((time.perf_counter() - t0) * 1000)
        if not ok(r):
            self.errors.append(f"{kind}: {r.status_code} {r.text[:200]}")
        return r


def _work(worker: Timed, results: Any) -> None:
    worker.run()
    results.put((id(worker), worker.result()))


class Client(Timed):
    """One client: its share of the requests; what the replies said about its VMs."""

    def __init__(
        self, n: int, url: str, count: int, names: list[str], sample: int, seed: int, stop_at: float
    ) -> None:
        super().__init__()
        self.n, self.url, self.count, self.names, self.sample = n, url, count, names, sample
        self.stop_at = stop_at  # wall time (`time.time`), shared by the processes
        self.rng = random.Random(seed * 1000 + n)
        self.placed: dict[str, Any] = {}  # VM id → placement (201) or None (202)
        self.deleted: set[str] = set()

    def result(self) -> dict[str, Any]:
        return {**super().result(), "placed": self.placed, "deleted": self.deleted}

    def run(self) -> None:
        kinds, weights = zip(*MIX, strict=True)
        with http(self.url) as c:
            for i in range(self.count):
                if time.time() > self.stop_at:
                    return
                kind = self.rng.choices(kinds, weights)[0]
                if kind in ("delete", "vm") and not self.placed:
                    kind = "post"
                self.one(c, kind, i)

    def one(self, c: httpx.Client, kind: str, i: int) -> None:
        if kind == "post":
            vm = f"c{self.n}-{i}"
            gis = [self.rng.choice(PROFILES)]
            compute = int(gis[0][0])
            body = {"id": vm, "cpu": 4 * compute, "ram_gb": 16 * compute, "gis": gis}
            r = self.timed(kind, lambda: c.post("/v1/vms", json=body), lambda r: r.status_code in (201, 202))
            if r is not None and r.status_code in (201, 202):
                self.placed[vm] = r.json().get("placement")
        elif kind == "delete":
            vm = self.rng.choice(sorted(self.placed))
            gone = self.placed.pop(vm) is None  # a queued VM may have been rejected meanwhile
            self.timed(
                kind,
                lambda: c.delete(f"/v1/vms/{vm}"),
                lambda r: r.status_code == 204 or (gone and r.status_code == 404),
            )
            self.deleted.add(vm)
        elif kind in ("filter", "prioritize"):
            names = self.rng.sample(self.names, self.sample) if self.sample < len(self.names) else self.names
            args = {"Pod": pod(f"p{self.n}-{i}", self.rng.choice(PROFILES)), "NodeNames": names}
            self.timed(kind, lambda: c.post(f"/k8s/{kind}", json=args), lambda r: r.status_code == 200)
        elif kind == "vm":
            vm = self.rng.choice(sorted(self.placed))
            self.timed(kind, lambda: c.get(f"/v1/vms/{vm}"), lambda r: r.status_code == 200)
        else:
            path = {"snapshot": "/v1/snapshot", "plans": "/v1/plans", "status": "/v1/status"}[kind]
            self.timed(kind, lambda: c.get(path), lambda r: r.status_code == 200)


class Probe(Timed):
    """`GET /healthz` at once and then every `PROBE_EVERY_S`, as a kubelet's liveness probe (a run
    shorter than one period still has a probe)."""

    def __init__(self, url: str, stop: Any) -> None:
        super().__init__()
        self.url, self.stop = url, stop

    def run(self) -> None:
        with http(self.url, token=None) as c:
            while True:
                self.timed("healthz", lambda: c.get("/healthz"), lambda r: r.status_code == 200)
                if self.stop.wait(PROBE_EVERY_S):
                    break


class Controller(Timed):
    """A VM platform: acknowledges each step of each running plan as soon as it sees it."""

    def __init__(self, url: str, stop: Any) -> None:
        super().__init__()
        self.url, self.stop = url, stop

    def run(self) -> None:
        with http(self.url) as c:
            while not self.stop.wait(CONTROLLER_EVERY_S):
                try:
                    plans = c.get("/v1/plans").json()["plans"]
                except httpx.HTTPError:
                    continue
                for plan in plans:
                    self.carry_out(c, plan)

    def carry_out(self, c: httpx.Client, plan: dict[str, Any]) -> None:
        while plan["status"] == "running" and plan["next_step"] is not None and not self.stop.is_set():
            url = f"/v1/plans/{plan['id']}/steps/{plan['next_step']}"
            r = self.timed(
                "ack",
                lambda url=url: c.post(url, json={"result": "done"}),
                lambda r: r.status_code in (200, 409),
            )
            if r is None or r.status_code != 200:
                return
            plan = r.json()


def percentile(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    ordered = sorted(xs)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def lost(
    doc: dict[str, Any], clients: list[dict[str, Any]], seeded: set[str], rejected: set[str], moved: set[str]
) -> list[str]:
    """Every way the final state differs from what the replies said (empty: nothing lost); `moved`:
    the VMs acknowledged steps of plans moved."""
    final = {v["id"]: v.get("placement") for v in doc["vms"]}
    said: dict[str, Any] = {}
    deleted: set[str] = set()
    for cl in clients:
        said.update(cl["placed"])
        deleted |= cl["deleted"]
    problems = []
    for vm, where in said.items():
        if where is not None and final.get(vm) != where and not (vm in moved and vm in final):
            problems.append(f"{vm}: placed at {where}, now {final.get(vm, 'missing')}")
        if where is None and vm not in final and vm not in rejected:
            problems.append(f"{vm}: queued, now missing and not rejected")
    problems += [f"{vm}: deleted but present" for vm in deleted if vm in final]
    problems += [f"{vm}: present but never placed" for vm in final if vm not in said and vm not in seeded]
    return problems


def freeze_worker(srv: Server) -> int:
    """Stop the server's optimizer worker (SIGSTOP); its process id."""
    with srv.client() as c:
        deadline = time.monotonic() + 120
        while (pid := c.get("/v1/status").json()["optimizer"]["worker_pid"]) is None:
            if time.monotonic() > deadline:
                raise SystemExit("the optimizer's worker did not start")
            time.sleep(0.1)
    os.kill(pid, signal.SIGSTOP)
    return int(pid)


def run_cell(pms: int, clients_n: int, args: argparse.Namespace) -> dict[str, Any]:
    rng = random.Random(args.seed)
    seed = cluster(pms, args.vms_per_pm * pms, rng)
    names = [p["id"] for p in seed["pms"]]
    sample = kube_sample_size(pms) if args.node_names == "kube" else pms
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "seed.json").write_text(json.dumps(seed))
        options = (f"check_interval_s={args.check_interval}",)
        code = args.code or ROOT
        srv = Server(
            Path(tmp), seed=Path(tmp) / "seed.json", options=options, start_timeout_s=1800, code=code
        )
        t_start = time.monotonic()
        srv.start()
        startup_s = time.monotonic() - t_start
        frozen = freeze_worker(srv) if args.freeze_worker else None
        context = multiprocessing.get_context("fork")
        stop, results = context.Event(), context.Queue()
        try:
            started = time.time()
            share = [args.requests // clients_n + (n < args.requests % clients_n) for n in range(clients_n)]
            clients = [
                Client(n, srv.url, share[n], names, sample, args.seed, started + args.max_s)
                for n in range(clients_n)
            ]
            helpers: list[Timed] = [Probe(srv.url, stop), Controller(srv.url, stop)]
            procs = {id(w): context.Process(target=_work, args=(w, results)) for w in [*helpers, *clients]}
            for proc in procs.values():
                proc.start()
            got: dict[int, dict[str, Any]] = {}
            while len(got) < len(clients):
                key, result = results.get()
                got[key] = result
            wall = time.time() - started
            stop.set()
            while len(got) < len(procs):
                key, result = results.get()
                got[key] = result
            for proc in procs.values():
                proc.join()
            said = [got[id(cl)] for cl in clients]
            with srv.client() as c:
                doc = c.get("/v1/snapshot").json()
                status = c.get("/v1/status").json()
                plans = c.get("/v1/plans").json()["plans"]
                rejected = {
                    vm for cl in said for vm, w in cl["placed"].items()
                    if w is None and c.get(f"/v1/vms/{vm}").json().get("status") == "rejected"
                }  # fmt: skip
            assert srv.proc is not None
            peak_mb = peak_rss_mb(srv.proc.pid)
        finally:
            stop.set()
            if frozen is not None:
                os.kill(frozen, signal.SIGCONT)
            srv.stop()
    valid(doc)  # the independent checker accepts the final state
    moved = {str(st["vm"]) for p in plans for st in p["steps"] if st["status"] == "done" and "vm" in st}
    problems = lost(doc, said, {v["id"] for v in seed["vms"]}, rejected, moved)
    errors = [e for r in got.values() for e in r["errors"]]
    routes = {}
    for kind in ROUTES:
        xs = [x for r in got.values() for x in r["latency"].get(kind, [])]
        routes[kind] = {
            "count": len(xs),
            "p50_ms": percentile(xs, 0.5),
            "p99_ms": percentile(xs, 0.99),
            "mean_ms": statistics.fmean(xs) if xs else None,
        }
    sent = sum(r["count"] for k, r in routes.items() if k not in ("healthz", "ack"))
    return {
        "pms": pms,
        "seed_vms": len(seed["vms"]),
        "clients": clients_n,
        "worker_frozen": frozen is not None,
        "node_names": sample,
        "requests": sent,
        "startup_s": startup_s,  # from the process's start to its first healthy /healthz
        "server_peak_mb": peak_mb,  # the server's and its optimizer worker's peak resident memory
        "wall_s": wall,
        "requests_per_s": sent / wall,
        "routes": routes,
        "errors": len(errors),
        "error_samples": errors[:10],
        "lost": len(problems),
        "lost_samples": problems[:10],
        "rejected_by_optimizer": len(rejected),
        "final_vms": len(doc["vms"]),
        "plans": status["plans"],
        "aborted_causes": status["aborted_causes"],
        "optimizer": {k: status["optimizer"].get(k) for k in ("checks", "failed_checks", "restarts")},
    }


def show(cell: dict[str, Any]) -> None:
    console = operator_console()
    table = Table(
        title=f"origamig serve: {cell['pms']} PMs, {cell['clients']} clients, {cell['requests']} requests"
    )
    for col in ("route", "requests", "p50 ms", "p99 ms", "mean ms"):
        table.add_column(col, justify="left" if col == "route" else "right")
    for kind, r in cell["routes"].items():
        cells = [r["p50_ms"], r["p99_ms"], r["mean_ms"]]
        table.add_row(kind, str(r["count"]), *("-" if x is None else f"{x:.1f}" for x in cells))
    console.print(table)
    verdicts = []
    for kind, target in TARGETS_MS.items():
        p99 = cell["routes"][kind]["p99_ms"] or 0.0
        verdicts.append(f"{kind} p99 {p99:.1f} ms (≤ {target:g}: {'met' if p99 <= target else 'not met'})")
    if "startup_s" in cell:  # cells stored before these were measured have neither
        peak = "-" if cell["server_peak_mb"] is None else f"{cell['server_peak_mb']:.0f} MB"
        console.print(f"server start {cell['startup_s']:.1f} s, peak memory {peak}")
    console.print(
        f"{cell['requests_per_s']:.0f} requests/s; errors {cell['errors']}; lost {cell['lost']}; "
        f"plans {cell['plans']}; aborted because {cell['aborted_causes']}; optimizer {cell['optimizer']}; "
        + "; ".join(verdicts)
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pms", default="1000", help="comma-separated cluster sizes")
    ap.add_argument("--clients", default="8", help="comma-separated client counts")
    ap.add_argument("--requests", type=int, default=6000)
    ap.add_argument("--vms-per-pm", type=int, default=3)
    ap.add_argument("--node-names", choices=("kube", "all"), default="kube")
    ap.add_argument("--check-interval", type=float, default=10.0, help="the optimizer's check_interval_s")
    ap.add_argument("--max-s", type=float, default=900.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fresh", action="store_true", help="run the cells already in --out again")
    ap.add_argument("--freeze-worker", action="store_true", help="stop the optimizer's worker (SIGSTOP)")
    ap.add_argument("--code", type=Path, help="serve with the origamig of this checkout (default: this one)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    doc: dict[str, Any] = {"benchmark": "serve_load", "cells": {}}
    if args.out.exists() and not args.fresh:
        old = json.loads(args.out.read_text())
        if "cells" in old:
            doc = old
    doc.update(
        targets_p99_ms=TARGETS_MS,
        machine={"cpus": os.cpu_count(), "python": platform.python_version()},
        command=" ".join(["python -m benchmarks.product.serve_load", *sys.argv[1:]]),
    )
    failed = []
    for pms in (int(x) for x in args.pms.split(",")):
        for clients_n in (int(x) for x in args.clients.split(",")):
            key = f"{pms} PMs, {clients_n} clients, {args.node_names} nodes, {args.check_interval:g} s checks"
            key += ", worker frozen" if args.freeze_worker else ""
            if key in doc["cells"]:
                print(f"{key}: already in {args.out} (--fresh runs it again)")
                continue
            cell = run_cell(pms, clients_n, args)
            cell["loadavg_end"] = os.getloadavg()
            doc["cells"][key] = cell
            write_json(args.out, doc)  # each finished cell at once
            show(cell)
            if cell["errors"] or cell["lost"]:
                failed.append(f"{key}: {cell['errors']} errors, {cell['lost']} lost")
    if failed:
        raise SystemExit("; ".join(failed) + f" (see {args.out})")


if __name__ == "__main__":
    main()
