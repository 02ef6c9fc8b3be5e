"""Speed of the MIG slice algebra on one core: default-placement decisions per second (target ≥ 200k/s
on an A100) and the configuration-space enumeration time (docs/model.md#configuration-space).

    python -m benchmarks.product.mig_speed [--quick | --full] [--gpu A100-40GB]

Prints a table and writes `benchmarks/results/mig_speed.json`. Every figure is the median of the
repeats. A decision is "where does the default GI placement put profile p on a GPU with occupancy
occ" (`Geometry.default_start`), over a fixed random stream of (occupancy, profile) pairs drawn from
the model's reachable configurations; the `GpuConfig.default_place` row adds building the new
immutable configuration, and the `DataCenter` row places and removes a one-GI VM with validation.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import time
from collections.abc import Callable

from rich.table import Table

from benchmarks import ROOT
from benchmarks.publish import write_json
from origamig.cli.terminal import operator_console
from origamig.cluster.catalog import default_catalog
from origamig.cluster.configspace import analyze, enumerate_space
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.mig import geometry
from origamig.cluster.records import GiSlot, Placement, PmSpec, VmSpec

TARGET_DECISIONS_PER_S = 200_000
RESULTS = ROOT / "benchmarks" / "results" / "mig_speed.json"


def median_rate(run: Callable[[], int], repeats: int) -> float:
    """Median operations per second of `run` (which returns how many operations it did)."""
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        ops = run()
        rates.append(ops / (time.perf_counter() - start))
    return statistics.median(rates)


def median_seconds(run: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(gpu: str, n: int, repeats: int) -> dict[str, float]:
    model = default_catalog().gpu(gpu)
    geo = geometry(model)
    space = enumerate_space(model)
    rng = random.Random(1)
    keys = list(space.occupancy)
    stream = [(space.occupancy[rng.choice(keys)], rng.choice(model.profiles)) for _ in range(n)]
    configs = [(space.gpu_config(rng.choice(keys)), rng.choice(model.profiles)) for _ in range(n // 10)]

    def raw() -> int:
        best = geo.default_start
        for occ, p in stream:
            best(occ, p)
        return len(stream)

    def immutable() -> int:
        for cfg, p in configs:
            cfg.default_place(p)
        return len(configs)

    pm = PmSpec("pm0", 80_000, 512_000, (model,))
    dc = DataCenter([pm])
    vms = [VmSpec(f"v{n}", 4000, 16_000, (p,)) for n, p in enumerate(model.profiles)]

    def datacenter() -> int:
        done = 0
        for spec in vms * (n // (10 * len(vms))):
            z = geo.default_start(dc.occupancy(0, 0), spec.gis[0])
            if z is not None:
                dc.place(spec, Placement(0, (GiSlot(0, z),)))
                dc.remove(spec.id)
            done += 1
        return done

    return {
        "decisions_per_s": median_rate(raw, repeats),
        "gpuconfig_default_place_per_s": median_rate(immutable, repeats),
        "datacenter_place_remove_per_s": median_rate(datacenter, repeats),
        "enumeration_s": median_seconds(lambda: enumerate_space(model), repeats),
        "analysis_s": median_seconds(lambda: analyze(model), repeats),
        "configurations": len(space),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="fewer decisions and repeats (seconds)")
    size.add_argument("--full", action="store_true", help="more decisions and repeats")
    parser.add_argument("--gpu", default="A100-40GB")
    args = parser.parse_args()
    n, repeats = (50_000, 3) if args.quick else (1_000_000, 9) if args.full else (200_000, 5)
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    result = measure(args.gpu, n, repeats)
    table = Table(title=f"MIG slice algebra on one core ({args.gpu}, median of {repeats})")
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_row("default-placement decisions / s", f"{result['decisions_per_s']:,.0f}")
    table.add_row("  target", f"≥ {TARGET_DECISIONS_PER_S:,}")
    table.add_row("GpuConfig.default_place / s", f"{result['gpuconfig_default_place_per_s']:,.0f}")
    table.add_row("DataCenter place+remove / s", f"{result['datacenter_place_remove_per_s']:,.0f}")
    table.add_row("configurations", f"{result['configurations']:,}")
    table.add_row("enumeration (DFS)", f"{result['enumeration_s'] * 1000:.2f} ms")
    table.add_row("full §3 analysis", f"{result['analysis_s'] * 1000:.1f} ms")
    operator_console().print(table)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "gpu": args.gpu,
        "decisions": n,
        "repeats": repeats,
        "python": platform.python_version(),
        "target_decisions_per_s": TARGET_DECISIONS_PER_S,
        "meets_target": result["decisions_per_s"] >= TARGET_DECISIONS_PER_S,
        **result,
    }
    write_json(RESULTS, doc)
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
