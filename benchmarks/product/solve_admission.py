"""Does the default `solve` admit every pending VM that fits, with a plan valid at every step, fast?

    python -m benchmarks.product.solve_admission [--servers 12,40,100,1000] [--seeds 3] [--solver highs]

Held-out clusters, generated here and used nowhere else: two thirds of the servers carry 8x
H100-80GB (192 cores, 2 TB), one third 4x A100-80GB (128 cores, 1 TB). Running VMs, 3 cores and 32 GB
per compute slice with one GI (two with probability 1/4) of a uniformly drawn profile, fill about half
of the servers first-fit at each profile's default start, so the cluster has fragmented GPUs and
dozens of empty ones; 8 VMs of the same kind are pending.

For each cluster size and seed the default `solve` (successive calls, docs/solving.md#the-call-loop,
deterministic HiGHS) runs in process, as the CLI runs it; the table reports the admitted count, the
number of calls, the plan's length, whether the independent replay (`judge/replay.py`) finds every
step valid and the final state equal to the reported placement, and the median wall time over the
seeds (snapshot parsing excluded, everything else included) with the CPU time of the process and its
solver children (the load-independent figure on a shared machine). Side by side, the admitted count
of the paper's single call (`--calls 1`) on the same clusters. Prints a table and writes
`benchmarks/results/solve_admission.json`.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import resource
import statistics
import time
from typing import Any

from rich.table import Table

from benchmarks import ROOT
from origamig.bilp.backends.base import make_limits
from origamig.call.solve import solve_snapshot
from origamig.cli.terminal import operator_console
from origamig.cluster.catalog import default_catalog
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.mig import geometry
from origamig.cluster.records import GiSlot, Placement, PmSpec, VmSpec, cores_to_m, gb_to_mb
from origamig.judge.replay import replay_plan
from origamig.snapshot.document import parse_snapshot

RESULTS = ROOT / "benchmarks" / "results" / "solve_admission.json"
KINDS = (("H100-80GB", 8, 192, 2048), ("H100-80GB", 8, 192, 2048), ("A100-80GB", 4, 128, 1024))
CORES_PER_COMPUTE, GB_PER_COMPUTE = 3, 32
PENDING = 8
SEED_BASE = 7001  # held out: no other benchmark or test draws clusters from these seeds


def server_fleet(servers: int) -> tuple[list[dict[str, Any]], list[PmSpec]]:
    """`servers` servers of `KINDS` in turn: their snapshot entries and their records."""
    catalog = default_catalog()
    pms_doc, pms = [], []
    for j in range(servers):
        model, n, cpu, ram = KINDS[j % len(KINDS)]
        pms_doc.append({"id": f"srv-{j:04d}", "cpu": cpu, "ram_gb": ram, "gpus": [model] * n})
        pms.append(PmSpec(f"srv-{j:04d}", cores_to_m(cpu), gb_to_mb(ram), (catalog.gpu(model),) * n))
    return pms_doc, pms


def held_out_cluster(servers: int, seed: int, pending: int = PENDING) -> dict[str, Any]:
    """A snapshot document (docs/formats.md#snapshot) of `servers` servers, about half of them in use."""
    rng = random.Random(SEED_BASE + 1000 * servers + seed)
    pms_doc, pms = server_fleet(servers)
    dc = DataCenter(pms)
    vms_doc: list[dict[str, Any]] = []
    in_use = rng.sample(range(servers), servers // 2)
    for j in in_use:
        for _ in range(rng.randint(2, 3 * len(pms[j].gpus))):
            vm, doc = draw_vm(rng, pms[j].gpus[0].name, f"vm-{len(vms_doc):05d}")
            slots = first_fit_slots(dc, j, vm)
            if slots is not None:
                dc.place(vm, Placement(j, slots))
                doc["placement"] = {"pm": pms[j].id, "gis": [{"gpu": s.gpu, "start": s.start} for s in slots]}
                vms_doc.append(doc)
    for n in range(pending):
        model = KINDS[rng.randrange(len(KINDS))][0]
        vms_doc.append(draw_vm(rng, model, f"new-{n}")[1])
    return {
        "version": 1,
        "description": f"held-out cluster, {servers} servers, seed {seed}",
        "pms": pms_doc,
        "vms": vms_doc,
    }


def draw_vm(rng: random.Random, model_name: str, vm_id: str) -> tuple[VmSpec, dict[str, Any]]:
    model = default_catalog().gpu(model_name)
    profiles = [rng.choice(model.profiles) for _ in range(2 if rng.random() < 0.25 else 1)]
    compute = sum(p.compute_slices for p in profiles)
    cpu, ram = CORES_PER_COMPUTE * compute, GB_PER_COMPUTE * compute
    vm = VmSpec(vm_id, cores_to_m(cpu), gb_to_mb(ram), tuple(profiles))
    doc = {"id": vm_id, "cpu": cpu, "ram_gb": ram, "gis": [p.name for p in profiles], "gpu_model": model_name}
    return vm, doc


def first_fit_slots(dc: DataCenter, j: int, vm: VmSpec) -> tuple[GiSlot, ...] | None:
    """The VM's GIs, in order, each at its profile's default start on the first GPU of PM j with one
    (None when CPU/RAM or some GI do not fit)."""
    if not dc.fits_resources(vm, j):
        return None
    taken: dict[int, int] = {}
    slots = []
    for prof in vm.gis:
        for k in range(dc.gpu_count(j)):
            occ = dc.occupancy(j, k) | taken.get(k, 0)
            z = geometry(dc.gpu_model(j, k)).default_start(occ, prof)
            if z is not None:
                taken[k] = taken.get(k, 0) | prof.mask(z)
                slots.append(GiSlot(k, z))
                break
        else:
            return None
    return tuple(slots)


def _cpu_s() -> float:
    """CPU seconds of this process and of its finished children (the solver runs in a child)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def run_one(servers: int, seed: int, solver: str, time_limit: float) -> dict[str, Any]:
    """Solve one held-out cluster with the default options and replay its plan independently; also
    count what the paper's single call (`--calls 1`) admits on it."""
    snap = parse_snapshot(held_out_cluster(servers, seed))
    limits = make_limits(solver, time_limit, None, True)
    single = solve_snapshot(snap, solver=solver, limits=limits, calls=1)
    t0, c0 = time.perf_counter(), _cpu_s()
    out = solve_snapshot(snap, solver=solver, limits=limits)
    wall, cpu = time.perf_counter() - t0, _cpu_s() - c0
    running = {v: snap.vms[v] for v in snap.placement}
    pending = {v: snap.vms[v] for v in snap.pending}
    steps = out.plan.to_json() if out.plan else []
    replay = replay_plan(snap.pms, running, snap.placement, pending, steps)
    return {
        "servers": servers,
        "seed": seed,
        "pending": len(snap.pending),
        "admitted": len(out.admitted),
        "admitted_one_call": len(single.admitted),
        "status": str(out.status),
        "calls": len(out.calls) or 1,
        "steps": len(steps),
        "replay_ok": replay.ok and dict(replay.final_placement) == dict(out.placement),
        "replay_reason": replay.reason,
        "wall_s": wall,
        "cpu_s": cpu,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--servers", default="12,40,100,1000")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--solver", default="highs")
    ap.add_argument("--time-limit", type=float, default=10.0)
    args = ap.parse_args()
    sizes = [int(s) for s in args.servers.split(",")]
    runs = [run_one(n, seed, args.solver, args.time_limit) for n in sizes for seed in range(args.seeds)]
    table = Table(title=f"default solve on held-out clusters ({args.solver}, deterministic)")
    for col in (
        "servers",
        "admitted, --calls 1",
        "admitted (default)",
        "calls",
        "plan steps",
        "replay valid",
        "median wall s",
        "max wall s",
        "median CPU s",
    ):
        table.add_column(col, justify="right")
    summary = []
    for n in sizes:
        rs = [r for r in runs if r["servers"] == n]
        row = {
            "servers": n,
            "admitted": sum(r["admitted"] for r in rs),
            "admitted_one_call": sum(r["admitted_one_call"] for r in rs),
            "pending": sum(r["pending"] for r in rs),
            "median_calls": statistics.median(r["calls"] for r in rs),
            "median_steps": statistics.median(r["steps"] for r in rs),
            "replay_valid": sum(r["replay_ok"] for r in rs),
            "runs": len(rs),
            "median_wall_s": statistics.median(r["wall_s"] for r in rs),
            "max_wall_s": max(r["wall_s"] for r in rs),
            "median_cpu_s": statistics.median(r["cpu_s"] for r in rs),
        }
        summary.append(row)
        table.add_row(
            str(n),
            f"{row['admitted_one_call']} of {row['pending']}",
            f"{row['admitted']} of {row['pending']}",
            f"{row['median_calls']:g}",
            f"{row['median_steps']:g}",
            f"{row['replay_valid']} of {row['runs']}",
            f"{row['median_wall_s']:.2f}",
            f"{row['max_wall_s']:.2f}",
            f"{row['median_cpu_s']:.2f}",
        )
    operator_console().print(table)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "solver": args.solver,
        "time_limit_s": args.time_limit,
        "seeds": args.seeds,
        "machine": platform.platform(),
        "python": platform.python_version(),
        "summary": summary,
        "runs": runs,
    }
    RESULTS.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
