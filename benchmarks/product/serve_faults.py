"""`origamig serve` under hostile clients, measured: how long the service stays reachable, how fast it
sheds the attackers, and what they cost it in memory.

    python -m benchmarks.product.serve_faults [--cells flood,flood-256,tls-256,plans]
                                              [--code CHECKOUT] [--fresh]
                                              [--out benchmarks/results/serve_faults.json]

Cells (each a real server on 127.0.0.1, optimizer quiet, `--request-timeout 2`):

- `flood`: 4,096 sockets, each sending 1,500 pipelined `GET /healthz` at once and never reading (a
  4 KiB receive buffer: the answers back up soon), the server at its usual open-file limit;
- `flood-256`: 300 such sockets, the server's open-file limit lowered to 256;
- `tls-256`: 300 sockets that connect to an HTTPS server and never start the TLS handshake, limit 256;
- `plans`: the memory a plan that has ended costs (in the service, rebuilt from the state) and its
  size in the state, for plans of 10 and 40 steps (`tracemalloc`; no server).

For the attack cells a probe opens a new connection for `GET /healthz` every 0.25 s from the start
of the attack until every attacking socket is closed by the server (or 60 s after it was sent): the
probes answered and failed (timeout 5 s, reset), their p50 and slowest time; how long after the
attack was sent every attacking socket was closed (`cut_s`, none when some were still open 60 s
after); the server's peak resident memory and the memory at the end. `--code` runs the server of
another checkout (the benchmark is this one's), so versions are compared side by side. Each cell is
written to the JSON as soon as it is done; a rerun skips the cells already there.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import httpx
from rich.table import Table

from benchmarks import ROOT
from benchmarks.product.serve_load import peak_rss_mb
from benchmarks.publish import write_json
from origamig.cli.terminal import operator_console
from tests.serve_helpers import EXAMPLES, Server, peer_closed, tls_server_files

RESULTS = ROOT / "benchmarks" / "results" / "serve_faults.json"
SEED = EXAMPLES / "fragmented-a100.json"
REQUEST = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
PROBE_EVERY_S = 0.25
LIMIT_S = 60.0
ATTACKS = {  # cell: (sockets, the server's open-file limit or None, TLS)
    "flood": (4096, None, False),
    "flood-256": (300, 256, False),
    "tls-256": (300, 256, True),
}


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def attack(name: str, code: Path) -> dict[str, Any]:
    sockets, files, tls = ATTACKS[name]

    def lower() -> None:
        if files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))

    with tempfile.TemporaryDirectory() as tmp:
        extra, trust = tls_server_files(Path(tmp)) if tls else ([], True)
        srv = Server(
            Path(tmp),
            seed=SEED,
            options=["check_interval_s=1e9"],
            extra=[*extra, "--request-timeout", "2"],
            verify=trust,
            preexec=lower,
            code=code,
        ).start()
        assert srv.proc is not None
        before_mb = _rss_mb(srv.proc.pid)
        probes: list[float | None] = []
        failures: list[str] = []
        done = threading.Event()

        def probe() -> None:
            while not done.is_set():
                t0 = time.perf_counter()
                try:
                    ok = httpx.get(f"{srv.url}/healthz", timeout=5, verify=trust).status_code == 200
                except httpx.HTTPError as exc:
                    ok = False
                    failures.append(f"{time.monotonic() - started:.1f} s: {exc!r}"[:200])
                probes.append((time.perf_counter() - t0) * 1000 if ok else None)
                done.wait(PROBE_EVERY_S)

        prober = threading.Thread(target=probe, daemon=True)
        crowd: list[socket.socket] = []
        started = time.monotonic()
        prober.start()
        pipelined = REQUEST * 1500
        try:
            for _ in range(sockets):
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.settimeout(5)
                try:
                    s.connect(("127.0.0.1", srv.port))
                except OSError:
                    s.close()
                    continue  # the kernel's queue is full: the server is not accepting
                s.setblocking(False)
                if not tls:
                    with contextlib.suppress(OSError):
                        s.send(pipelined)
                crowd.append(s)
            sent_s = time.monotonic() - started
            left = list(crowd)
            while left and time.monotonic() - started < sent_s + LIMIT_S:
                left = [s for s in left if not peer_closed(s)]
                time.sleep(0.2)
            cut_s = None if left else time.monotonic() - started - sent_s
            done.set()
            prober.join()
            peak_mb = peak_rss_mb(srv.proc.pid)
            end_mb = _rss_mb(srv.proc.pid)
        finally:
            done.set()
            for s in crowd:
                s.close()
            srv.stop()
    answered = [p for p in probes if p is not None]
    return {
        "sockets": sockets,
        "connected": len(crowd),
        "open_file_limit": files,
        "tls": tls,
        "sent_s": sent_s,
        "cut_s": cut_s,
        "probes": len(probes),
        "probes_answered": len(answered),
        "probe_p50_ms": statistics.median(answered) if answered else None,
        "probe_max_ms": max(answered) if answered else None,
        "probe_failures": failures[:5],
        "server_mb_before": before_mb,
        "server_peak_mb": peak_mb,
        "server_mb_end": end_mb,
    }


def plan_memory() -> dict[str, Any]:
    """KiB per ended plan in the service's memory and in the state, for plans of 10 and 40 steps."""
    from origamig.serve.plans import from_store, to_store
    from origamig.snapshot.document import load_snapshot

    dc = load_snapshot(EXAMPLES / "mixed-h100-a100.json").datacenter()
    out = {}
    for count in (3, 13):  # 3 steps a move (create a GI, migrate, destroy the old one), and one more
        docs = [json.dumps(to_store(done_plan(i, count, [p.id for p in dc.pms]), dc)) for i in range(1, 1001)]
        tracemalloc.start()
        kept = {i: from_store(json.loads(d), dc, {}) for i, d in enumerate(docs)}
        in_memory, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        out[f"{len(kept[0].steps)} steps"] = {
            "memory_kib_per_plan": in_memory / 1000 / 1024,
            "state_kib_per_plan": sum(map(len, docs)) / 1000 / 1024,
        }
        del kept
    return out


def done_plan(plan_id: int, count: int, pms: list[str]) -> Any:
    """A plan that has ended `done`: `count` VMs each moved to the next PM (a GI created, the VM
    migrated, its old GI destroyed: 70 s, 152 GB), then a PM switched off."""
    from origamig.call.kinds import CallKind
    from origamig.cluster.records import GiSlot, Placement
    from origamig.plan.steps import CreateGi, DestroyGi, Migrate, PowerOff, Step
    from origamig.runtime.migration import Move
    from origamig.runtime.plan_run import MoveState, PlanRun, PlanStatus

    steps: list[Step] = []
    moves: list[Move] = []
    for k in range(count):
        a, b, slot, vm = k % len(pms), (k + 1) % len(pms), GiSlot(k % 8, k % 7), f"vm{k}"
        steps += [
            CreateGi(vm, 0, pms[b], slot.gpu, slot.start),
            Migrate(vm, pms[a], pms[b]),
            DestroyGi(vm, 0, pms[a], slot.gpu, slot.start),
        ]
        where = (Placement(a, (slot,)), Placement(b, (slot,)))
        after = (k - 1,) if k else ()
        span = (3 * k, 3 * k + 1, 3 * k + 2)
        moves.append(Move(k, span, vm, *where, (0,), False, frozenset({a, b}), 70.0, 152 * 10**9, after))
    steps.append(PowerOff(pms[0]))
    moves.append(Move(count, (3 * count,), pms=frozenset({0})))
    n = len(moves)
    return PlanRun(
        plan_id,
        CallKind.CONSOLIDATION,
        float(plan_id),
        steps,
        moves,
        [MoveState.DONE] * n,
        [len(m.steps) for m in moves],
        [float(plan_id)] * n,
        [plan_id + 70.0] * n,
        status=PlanStatus.DONE,
        ended_s=plan_id + 70.0,
    )


def revision(code: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(code), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return done.stdout.strip() or "unknown"


def show(key: str, cell: dict[str, Any]) -> None:
    console = operator_console()
    table = Table(title=f"origamig serve: {key}")
    for col in ("measure", "value"):
        table.add_column(col, justify="left" if col == "measure" else "right")
    for name, value in cell.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v:.1f}" for k, v in value.items())
        elif isinstance(value, float):
            value = f"{value:.1f}"
        table.add_row(name, str(value))
    console.print(table)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", default="flood,flood-256,tls-256,plans")
    ap.add_argument("--code", type=Path, help="serve with the origamig of this checkout (default: this one)")
    ap.add_argument("--fresh", action="store_true", help="run the cells already in --out again")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    code = args.code or ROOT
    doc: dict[str, Any] = {"benchmark": "serve_faults", "cells": {}}
    if args.out.exists() and not args.fresh:
        doc = json.loads(args.out.read_text())
    doc.update(
        machine={"cpus": os.cpu_count(), "python": platform.python_version()},
        command=" ".join(["python -m benchmarks.product.serve_faults", *sys.argv[1:]]),
    )
    for name in args.cells.split(","):
        key = name if name == "plans" else f"{name} @ {revision(code)}"
        if key in doc["cells"]:
            print(f"{key}: already in {args.out} (--fresh runs it again)")
            continue
        cell = plan_memory() if name == "plans" else attack(name, code)
        cell["loadavg_end"] = os.getloadavg()
        doc["cells"][key] = cell
        write_json(args.out, doc)
        show(key, cell)


if __name__ == "__main__":
    main()
