"""Arrival decision time of the baselines (FF, MFI, TC) on the paper's 128-PM data center (target:
< 1 ms per decision), and the time of one TC compaction.

    python -m benchmarks.product.policies [--quick | --full] [--seed N]

The data center is the simulator's default (docs/simulator.md#data-center: 96 PMs with 2× A100-40GB,
32 with 2× A30-24GB, 80 cores, 512 GB). It is filled by first-fit arrivals of workload-like VMs (1 or 2 GIs
with probability 0.5, one GPU model, profiles uniform, 4 cores / 16 GB per compute slice) to a share of the
memory slices, then a fixed stream of probe VMs is *decided* (not applied) by each policy on the same state,
interleaved policy by policy so the ratios are measured side by side. Figures are medians (and 95th
percentiles) over the probes. The compaction row fills to 95%, removes 40% of the VMs at random (a fragmented
state), and times `TurkkanCompaction.work` (compaction + executor plan), median over the repeats.
Prints a table and writes `benchmarks/results/policies.json`.
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import time

from rich.table import Table

from benchmarks import ROOT
from benchmarks.publish import write_json
from origamig.cli.terminal import operator_console
from origamig.cluster.catalog import default_catalog
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import PmSpec, VmSpec, cores_to_m, gb_to_mb
from origamig.policies.arrival_rule import first_fit
from origamig.policies.base import Rejection, make_policy

TARGET_MS = 1.0
POLICIES = ("ff", "mfi", "tc")
FILLS = (0.5, 0.9)
RESULTS = ROOT / "benchmarks" / "results" / "policies.json"


def default_pms() -> list[PmSpec]:
    cat = default_catalog()
    a100, a30 = cat.gpu("A100-40GB"), cat.gpu("A30-24GB")
    specs = [(a100, a100)] * 96 + [(a30, a30)] * 32
    return [PmSpec(f"pm{j}", cores_to_m(80), gb_to_mb(512), gpus) for j, gpus in enumerate(specs)]


def random_vm(rng: random.Random, vm_id: str) -> VmSpec:
    cat = default_catalog()
    model = cat.gpu(rng.choice(("A100-40GB", "A100-40GB", "A100-40GB", "A30-24GB")))  # 192 vs 64 GPUs
    gis = tuple(rng.choice(model.profiles) for _ in range(rng.choice((1, 2))))
    compute = sum(p.compute_slices for p in gis)
    return VmSpec(vm_id, cores_to_m(4 * compute), gb_to_mb(16 * compute), gis)


def filled(fill: float, rng: random.Random) -> DataCenter:
    """First-fit arrivals until `fill` of all memory slices are used (or 200 rejections in a row)."""
    dc = DataCenter(default_pms())
    total = sum(g.memory_slices for p in dc.pms for g in p.gpus)
    misses, n = 0, 0
    while sum(dc.placed_slices.values()) < fill * total and misses < 200:
        n += 1
        vm = random_vm(rng, f"f{n}")
        pl = first_fit(dc, vm)
        if isinstance(pl, Rejection):
            misses += 1
            continue
        misses = 0
        dc.place(vm, pl)
    return dc


def time_arrivals(dc: DataCenter, probes: list[VmSpec]) -> dict[str, dict[str, float]]:
    policies = {name: make_policy(name) for name in POLICIES}
    times: dict[str, list[float]] = {name: [] for name in POLICIES}
    for vm in probes:
        for name, policy in policies.items():
            t0 = time.perf_counter()
            policy.arrive(dc, vm, 0.0, frozenset())
            times[name].append(time.perf_counter() - t0)
    out = {}
    for name, ts in times.items():
        ts.sort()
        out[name] = {
            "median_ms": 1e3 * statistics.median(ts),
            "p95_ms": 1e3 * ts[int(0.95 * (len(ts) - 1))],
            "admitted": policies[name].counters()["admitted"],
            "probes": len(ts),
        }
    return out


def time_compaction(rng: random.Random, repeats: int) -> dict[str, float]:
    dc = filled(0.95, rng)
    for v in sorted(dc.placement):
        if rng.random() < 0.4:
            dc.remove(v)
    tc = make_policy("tc")
    tc.work(dc, 0.0)  # warm-up: tables, networkx import
    times, moves = [], 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        work = tc.work(dc, 0.0)
        times.append(time.perf_counter() - t0)
        moves = len(work.target) if work is not None else 0
    active = sum(dc.active_gpus.values())
    return {"median_ms": 1e3 * statistics.median(times), "moves": moves, "active_gpus_before": active}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="300 probes, 3 compaction repeats (default)")
    size.add_argument("--full", action="store_true", help="3000 probes, 15 compaction repeats")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    n_probes, repeats = (3000, 15) if args.full else (300, 3)
    rng = random.Random(args.seed)
    for name in POLICIES:  # build the per-geometry tables outside the timing
        make_policy(name).arrive(DataCenter(default_pms()), random_vm(rng, "warm"), 0.0, frozenset())
    results: dict[str, object] = {"target_ms": TARGET_MS, "pms": 128, "probes": n_probes, "seed": args.seed}
    arrivals = {}
    for fill in FILLS:
        dc = filled(fill, rng)
        probes = [random_vm(rng, f"p{i}") for i in range(n_probes)]
        arrivals[str(fill)] = time_arrivals(dc, probes)
    results["arrival"] = arrivals
    results["compaction"] = time_compaction(rng, repeats)
    results["machine"] = {"python": platform.python_version(), "processor": platform.processor()}
    table = Table(title="Arrival decision time on 128 PMs (median / p95, ms)")
    table.add_column("fill")
    for name in POLICIES:
        table.add_column(name.upper(), justify="right")
    for fill, row in arrivals.items():
        cells = [f"{row[n]['median_ms']:.3f} / {row[n]['p95_ms']:.3f}" for n in POLICIES]
        table.add_row(f"{float(fill):.0%}", *cells)
    console = operator_console()
    console.print(table)
    comp = results["compaction"]
    console.print(
        f"TC compaction (fragmented state, {comp['active_gpus_before']} active GPUs): "
        f"{comp['median_ms']:.1f} ms median, {comp['moves']} moves"
    )
    worst = max(row[n]["median_ms"] for row in arrivals.values() for n in POLICIES)
    console.print(
        f"worst median {worst:.3f} ms — target < {TARGET_MS} ms: {'met' if worst < TARGET_MS else 'MISSED'}"
    )
    write_json(RESULTS, results)  # makes the folder
    console.print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
