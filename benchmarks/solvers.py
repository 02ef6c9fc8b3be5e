"""Benchmark of the BILP pipeline: model size, build / compile time, HiGHS and CP-SAT solves.

Instances (docs/model.md#solvers): fragmented neighborhoods of 16 PMs × 2 A100 (FF-filled until it
rejects, a random third departed, 4–8 pending; 40–64 VMs) and whole data centers of 8/16/32 PMs
(OPT: every PM, every pending VM). Each instance is solved by every solver setting with a 10 s limit.
On a shared machine wall times grow with the load; each solve's CPU time and the solvers'
deterministic work are recorded next to them.
Prints a table of medians and writes benchmarks/results/solvers.json.

    python benchmarks/solvers.py            # --quick: 5 neighborhoods, one data center per size
    python benchmarks/solvers.py --full     # 20 neighborhoods, three data centers per size
    python benchmarks/solvers.py --symmetry # also the model with symmetry-breaking rows
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from pathlib import Path

from origamig.bilp import Limits, build_model, compile_model, decode, restrict
from origamig.bilp.backends.base import get_backend
from origamig.catalog import default_catalog
from origamig.check import check_placement
from origamig.datacenter import DataCenter
from origamig.objective import evaluate
from origamig.policies.arrival_rule import first_fit as shared_first_fit
from origamig.policies.base import Rejection
from origamig.records import MILLI, Placement, PmSpec, VmSpec, Weights
from origamig.solver_registry import backend_names

TIME_LIMIT_S = 10.0
SETTINGS = tuple((solver, threads) for solver in backend_names() for threads in (1, 2))
RESULTS = Path(__file__).parent / "results" / "solvers.json"
A100 = default_catalog().gpu("A100-40GB")


def _first_fit(dc: DataCenter, vm: VmSpec) -> Placement | None:
    """The shared arrival rule (`origamig.policies.arrival_rule`), None where the VM fits nowhere."""
    hit = shared_first_fit(dc, vm)
    return None if isinstance(hit, Rejection) else hit


def _vm(rng: random.Random, vm_id: str) -> VmSpec:
    gis = tuple(rng.choice(A100.profiles) for _ in range(rng.choice((1, 2))))
    compute = sum(p.compute_slices for p in gis)
    return VmSpec(vm_id, 4 * compute * MILLI, 16 * compute * MILLI, gis)


def fragmented(rng: random.Random, n_pms: int) -> DataCenter:
    """FF-fill until 20 consecutive rejections, a random third departs, 4–8 VMs pending."""
    dc = DataCenter([PmSpec(f"pm{j}", 80 * MILLI, 512 * MILLI, (A100, A100)) for j in range(n_pms)])
    misses, n = 0, 0
    while misses < 20:
        vm = _vm(rng, f"vm{n}")
        n += 1
        pl = _first_fit(dc, vm)
        if pl is None:
            misses += 1
        else:
            dc.place(vm, pl)
    for v in sorted(dc.vms):
        if rng.random() < 1 / 3:
            dc.remove(v)
    for p in range(rng.randint(4, 8)):
        dc.add_pending(_vm(rng, f"p{p}"))
    return dc


def neighborhoods(seed: int, count: int) -> list[DataCenter]:
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        dc = fragmented(rng, 16)
        if 40 <= len(dc.vms) + len(dc.pending) <= 64:
            out.append(dc)
    return out


def run_instance(dc: DataCenter, label: str, symmetry: bool) -> dict:
    w = Weights()
    t0 = time.perf_counter()
    region = restrict(dc, range(len(dc.pms)), list(dc.pending))
    model = build_model(region, w, symmetry=symmetry)
    t1 = time.perf_counter()
    compiled = compile_model(model)
    t2 = time.perf_counter()
    row = {
        "instance": label,
        "pms": len(dc.pms),
        "vms": len(region.vms),
        "pending": len(region.pending),
        "symmetry": symmetry,
        **compiled.size,
        "build_s": t1 - t0,
        "compile_s": t2 - t1,
        "start_objective": compiled.objective_of(compiled.hint),
        "solves": {},
    }
    everything = {**dc.vms, **dc.pending}
    for name, threads in SETTINGS:
        cpu0 = time.process_time()
        res = get_backend(name).solve(
            compiled, compiled.hint, Limits(time_limit_s=TIME_LIMIT_S, threads=threads)
        )
        cpu = time.process_time() - cpu0
        target = decode(model, compiled, res.x)
        combined = {v: pl for v, pl in dc.placement.items() if v not in target} | target
        value = evaluate(dc.pms, everything, target, dc.placement, w).value
        row["solves"][f"{name}-{threads}t"] = {
            **res.as_dict(),
            "overrun_s": max(0.0, res.wall_s - TIME_LIMIT_S),
            "cpu_s": cpu,  # process CPU time of the solve, all threads: its cost on idle cores
            "checker_violations": len(check_placement(dc.pms, everything, combined)),
            "evaluate": value,
        }
    return row


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def summarize(rows: list[dict]) -> list[dict]:
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(f"{r['instance'].split('#')[0]}{' +sym' if r['symmetry'] else ''}", []).append(r)
    out = []
    for g, rs in groups.items():
        for s in rs[0]["solves"]:
            solves = [r["solves"][s] for r in rs]
            out.append(
                {
                    "group": g,
                    "n": len(rs),
                    "solver": s,
                    "columns": _median([r["columns"] for r in rs]),
                    "rows": _median([r["rows"] for r in rs]),
                    "nonzeros": _median([r["nonzeros"] for r in rs]),
                    "build_s": _median([r["build_s"] for r in rs]),
                    "compile_s": _median([r["compile_s"] for r in rs]),
                    "solve_s": _median([x["wall_s"] for x in solves]),
                    "cpu_s": _median([x["cpu_s"] for x in solves]),
                    "work": _median([x["work"] for x in solves]),
                    "proved": sum(x["proved_optimal"] for x in solves),
                    "gain": _median(
                        [x["objective"] - r["start_objective"] for x, r in zip(solves, rs, strict=True)]
                    ),
                    "max_overrun_s": max(x["overrun_s"] for x in solves),
                    "bad": sum(
                        x["checker_violations"] > 0 or x["evaluate"] < x["objective"] - 1e-6 for x in solves
                    ),
                }
            )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="20 neighborhoods, three data centers per size")
    ap.add_argument(
        "--quick", action="store_true", help="(default) 5 neighborhoods, one data center per size"
    )
    ap.add_argument("--symmetry", action="store_true", help="also run with symmetry-breaking rows")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", choices=("neighborhoods", "datacenters"), help="run one family only")
    args = ap.parse_args()
    n_hood, n_dc = (20, 3) if args.full else (5, 1)
    warm = neighborhoods(args.seed + 99, 1)[0]  # pay Pyomo's lazy imports outside the timings
    compile_model(build_model(restrict(warm, range(16), list(warm.pending)), Weights()))
    instances: list[tuple[str, DataCenter]] = []
    if args.only != "datacenters":
        instances += [(f"hood16#{n}", dc) for n, dc in enumerate(neighborhoods(args.seed, n_hood))]
    if args.only != "neighborhoods":
        rng = random.Random(args.seed + 7)
        instances += [(f"dc{size}#{n}", fragmented(rng, size)) for size in (8, 16, 32) for n in range(n_dc)]
    rows = []
    load = os.getloadavg()
    for label, dc in instances:
        for sym in (False, True) if args.symmetry else (False,):
            rows.append(run_instance(dc, label, sym))
            r = rows[-1]
            print(
                f"{label:9} {'sym' if sym else '   '} vms={r['vms']:3} cols={r['columns']:5} "
                + " ".join(
                    f"{s}={x['wall_s']:.2f}{'*' if x['proved_optimal'] else ''}"
                    for s, x in r["solves"].items()
                ),
                flush=True,
            )
    summary = summarize(rows)
    head = (
        f"{'group':12} {'solver':9} {'n':>2} {'cols':>6} {'rows':>6} {'nnz':>7} {'build':>6} {'compile':>7}"
    )
    head += f" {'solve':>6} {'cpu':>6} {'work':>6} {'proved':>6} {'gain':>6} {'overrun':>7} {'bad':>3}"
    print(head)
    for s in summary:
        print(
            f"{s['group']:12} {s['solver']:9} {s['n']:2} "
            f"{s['columns']:6.0f} {s['rows']:6.0f} {s['nonzeros']:7.0f} "
            f"{s['build_s']:6.3f} {s['compile_s']:7.3f} {s['solve_s']:6.2f} {s['cpu_s']:6.2f} "
            f"{s['work']:6.1f} {s['proved']:3}/{s['n']:<2} "
            f"{s['gain']:6.0f} {s['max_overrun_s']:7.2f} {s['bad']:3}"
        )
    meta = {
        "time_limit_s": TIME_LIMIT_S,
        "loadavg_start": load,
        "loadavg_end": os.getloadavg(),
        "cpus": os.cpu_count(),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"meta": meta, "summary": summary, "instances": rows}, indent=1))
    print(f"loadavg start {load}, end {meta['loadavg_end']}; wrote {RESULTS}")


if __name__ == "__main__":
    main()
