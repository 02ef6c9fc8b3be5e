"""Benchmark of the BILP pipeline: model size, build / compile time, HiGHS and CP-SAT solves.

Instances come from one generator, `fragmented(rng, n_pms)` (the recipe of the solver study behind
the production form, docs/model.md#solvers):
  - PMs of 80 cores, 512 GB and two A100 40GB (16 memory slices a PM);
  - a VM has 1 or 2 GIs (equally likely), each profile uniform over the A100's six, and 4 cores and
    16 GB per compute slice;
  - first fit places such VMs until 20 in a row are rejected (the PMs are then ~96% full by memory
    slices), each placed VM departs with probability 1/3, and 4–8 new VMs are pending.
Families (seed `--seed`, instances in generation order, so a smaller count is a prefix):
  hood16     16-PM neighborhoods with 40–64 VMs: one OrigaMIG call over all 16 PMs and the pending VMs
  dc8/16/32  whole data centers, every pending VM (OPT)
  dc48       48 PMs thinned to 100 VMs (a random 100 of the first-fit fill stay), 4–8 pending
Each instance is solved by every setting with a 10 s limit (`--limit`). On a shared machine wall
times grow with the load; each solve's CPU time and the solvers' deterministic work (HiGHS
thousands of simplex iterations, CP-SAT deterministic seconds) are recorded next to them, and so is
the root gap: the LP bound (docs/model.md#no-change-proof) minus the best objective found.
Prints a line per instance, a table of medians and maxima per family and setting next to the
reference figures (a prototype of the same form; `--baseline` adds an earlier run, e.g. made at an
older commit on the same instances), and writes benchmarks/results/solvers.json (or `--out`).

    python -m benchmarks.solver.solvers             # 10 neighborhoods, one data center of 8/16/32 PMs
    python -m benchmarks.solver.solvers --full      # 20 neighborhoods, three data centers per size, dc48
    python -m benchmarks.solver.solvers --only neighborhoods --baseline OLD.json
    python -m benchmarks.solver.solvers --symmetry  # also the model with symmetry-breaking rows
    python -m benchmarks.solver.solvers --settings highs-1,cpsat-2 --limit 60   # some settings, longer limit
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from pathlib import Path

from benchmarks import ROOT
from benchmarks.publish import results_file, write_json
from origamig.bilp import Limits, build_model, compile_model, decode, no_change_proof, restrict
from origamig.bilp.backends.base import get_backend
from origamig.bilp.backends.cpu_time import cpu_seconds
from origamig.cluster.catalog import default_catalog
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import MILLI, Placement, PmSpec, VmSpec, Weights
from origamig.judge.check import check_placement
from origamig.judge.objective import evaluate
from origamig.policies.arrival_rule import first_fit as shared_first_fit
from origamig.policies.base import Rejection
from origamig.solver_registry import backend_names

TIME_LIMIT_S = 10.0
# Every solver on 1 and 2 threads; the portfolio races two solvers, so it runs on 2 (at least one each).
SETTINGS = tuple(
    (solver, threads)
    for solver in backend_names()
    for threads in (1, 2)
    if solver != "portfolio" or threads > 1
)
RESULTS = ROOT / "benchmarks" / "results" / "solvers.json"
A100 = default_catalog().gpu("A100-40GB")
# A throw-away prototype of the same configuration form on instances of the same recipe (5 of them,
# 47–55 VMs), HiGHS with the current placement as MIP start, 2-core machine: median / max to proof.
PROTOTYPE = {"hood16": {"solver": "highs", "median_s": 1.54, "max_s": 3.3, "proved": "5/5"}}
DC48_VMS = 100


def _first_fit(dc: DataCenter, vm: VmSpec) -> Placement | None:
    """The shared arrival rule (`origamig.policies.arrival_rule`), None where the VM fits nowhere."""
    hit = shared_first_fit(dc, vm)
    return None if isinstance(hit, Rejection) else hit


def _vm(rng: random.Random, vm_id: str) -> VmSpec:
    gis = tuple(rng.choice(A100.profiles) for _ in range(rng.choice((1, 2))))
    compute = sum(p.compute_slices for p in gis)
    return VmSpec(vm_id, 4 * compute * MILLI, 16 * compute * MILLI, gis)


def fragmented(rng: random.Random, n_pms: int, keep_vms: int | None = None) -> DataCenter:
    """FF-fill until 20 consecutive rejections, a random third departs (or all but `keep_vms` random
    ones), 4–8 VMs pending."""
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
    if keep_vms is None:
        for v in sorted(dc.vms):
            if rng.random() < 1 / 3:
                dc.remove(v)
    else:
        for v in rng.sample(sorted(dc.vms), max(0, len(dc.vms) - keep_vms)):
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


def memory_fill(dc: DataCenter) -> float:
    """Memory slices of the running VMs over those of all GPUs."""
    used = sum(p.memory_slices for vm in dc.vms.values() for p in vm.gis)
    return used / sum(g.memory_slices for pm in dc.pms for g in pm.gpus)


def run_instance(
    dc: DataCenter, label: str, symmetry: bool, limit: float, settings: tuple[tuple[str, int], ...] = SETTINGS
) -> dict:
    w = Weights()
    t0 = time.perf_counter()
    region = restrict(dc, range(len(dc.pms)), list(dc.pending))
    model = build_model(region, w, symmetry=symmetry)
    t1 = time.perf_counter()
    compiled = compile_model(model)
    t2 = time.perf_counter()
    proof = no_change_proof(
        compiled, Limits(time_limit_s=None)
    )  # the LP bound (docs/model.md#no-change-proof)
    row = {
        "instance": label,
        "pms": len(dc.pms),
        "vms": len(region.vms),
        "pending": len(region.pending),
        "memory_fill": memory_fill(dc),
        "symmetry": symmetry,
        **compiled.size,
        "build_s": t1 - t0,
        "compile_s": t2 - t1,
        "start_objective": compiled.objective_of(compiled.hint),
        "lp_bound": proof.bound,
        "lp_s": proof.wall_s,
        "solves": {},
    }
    everything = {**dc.vms, **dc.pending}
    for name, threads in settings:
        cpu0 = cpu_seconds()
        res = get_backend(name).solve(compiled, compiled.hint, Limits(time_limit_s=limit, threads=threads))
        cpu = cpu_seconds() - cpu0
        target = decode(model, compiled, res.x)
        combined = {v: pl for v, pl in dc.placement.items() if v not in target} | target
        value = evaluate(dc.pms, everything, target, dc.placement, w).value
        row["solves"][f"{name}-{threads}t"] = {
            **res.as_dict(),
            "overrun_s": max(0.0, res.wall_s - limit),
            "cpu_s": cpu,  # CPU time of the solve (its helper process included), all threads
            "checker_violations": len(check_placement(dc.pms, everything, combined)),
            "evaluate": value,
        }
    best = max(x["objective"] for x in row["solves"].values() if x["objective"] is not None)
    row["root_gap"] = proof.bound - best  # LP bound − best objective found (the optimum when proved)
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
                    "vms": _median([r["vms"] for r in rs]),
                    "columns": _median([r["columns"] for r in rs]),
                    "rows": _median([r["rows"] for r in rs]),
                    "nonzeros": _median([r["nonzeros"] for r in rs]),
                    "build_s": _median([r["build_s"] for r in rs]),
                    "compile_s": _median([r["compile_s"] for r in rs]),
                    "solve_s": _median([x["wall_s"] for x in solves]),
                    "max_solve_s": max(x["wall_s"] for x in solves),
                    "cpu_s": _median([x["cpu_s"] for x in solves]),
                    "max_cpu_s": max(x["cpu_s"] for x in solves),
                    "work": _median([x["work"] for x in solves]),
                    "proved": sum(x["proved_optimal"] for x in solves),
                    "gap": _median([x["gap"] or 0.0 for x in solves]),
                    "gain": _median(
                        [x["objective"] - r["start_objective"] for x, r in zip(solves, rs, strict=True)]
                    ),
                    "max_overrun_s": max(x["overrun_s"] for x in solves),
                    "root_gap": _median([r["root_gap"] for r in rs]),
                    "max_root_gap": max(r["root_gap"] for r in rs),
                    "bad": sum(
                        x["checker_violations"] > 0 or x["evaluate"] < x["objective"] - 1e-6 for x in solves
                    ),
                }
            )
    return out


def print_summary(summary: list[dict], title: str) -> None:
    print(title)
    head = f"{'group':11} {'solver':9} {'n':>2} {'vms':>4} {'cols':>6} {'nnz':>7} {'build':>6} {'compile':>7}"
    head += (
        f" {'solve':>6} {'max':>6} {'cpu':>6} {'maxcpu':>6} {'work':>6} {'proved':>6} {'gap%':>5} {'bad':>3}"
        f" {'rootgap':>7} {'max':>5}"
    )
    print(head)
    for s in summary:
        print(
            f"{s['group']:11} {s['solver']:9} {s['n']:2} {s['vms']:4.0f} "
            f"{s['columns']:6.0f} {s['nonzeros']:7.0f} "
            f"{s['build_s']:6.3f} {s['compile_s']:7.3f} {s['solve_s']:6.2f} {s['max_solve_s']:6.2f} "
            f"{s['cpu_s']:6.2f} {s['max_cpu_s']:6.2f} {s['work']:6.1f} {s['proved']:3}/{s['n']:<2} "
            f"{100 * s['gap']:5.2f} {s['bad']:3} {s.get('root_gap', float('nan')):7.1f} "
            f"{s.get('max_root_gap', float('nan')):5.1f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="20 neighborhoods, three data centers per size, dc48")
    ap.add_argument(
        "--quick", action="store_true", help="(default) 10 neighborhoods, one data center per size"
    )
    ap.add_argument("--neighborhoods", type=int, help="number of 16-PM neighborhoods (default 10, --full 20)")
    ap.add_argument("--symmetry", action="store_true", help="also run with symmetry-breaking rows")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--limit", type=float, default=TIME_LIMIT_S, help="time limit per solve (s)")
    ap.add_argument("--only", choices=("neighborhoods", "datacenters"), help="run one family only")
    ap.add_argument(
        "--settings",
        default=",".join(f"{n}-{t}" for n, t in SETTINGS),
        help="solver-threads pairs to run (default: %(default)s)",
    )
    ap.add_argument("--baseline", type=Path, help="an earlier results file to print side by side")
    ap.add_argument("--label", default="", help="a name for this run (stored in the results)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    args.out = results_file(args.out, RESULTS)
    settings = tuple((n, int(t)) for n, t in (x.rsplit("-", 1) for x in args.settings.split(",")))
    n_hood, n_dc = (20, 3) if args.full else (10, 1)
    n_hood = args.neighborhoods if args.neighborhoods is not None else n_hood
    warm = neighborhoods(args.seed + 99, 1)[0]  # pay Pyomo's lazy imports outside the timings
    compile_model(build_model(restrict(warm, range(16), list(warm.pending)), Weights()))
    instances: list[tuple[str, DataCenter]] = []
    if args.only != "datacenters":
        instances += [(f"hood16#{n}", dc) for n, dc in enumerate(neighborhoods(args.seed, n_hood))]
    if args.only != "neighborhoods":
        rng = random.Random(args.seed + 7)
        instances += [(f"dc{size}#{n}", fragmented(rng, size)) for size in (8, 16, 32) for n in range(n_dc)]
        if args.full:
            rng48 = random.Random(args.seed + 48)
            instances += [(f"dc48#{n}", fragmented(rng48, 48, DC48_VMS)) for n in range(n_dc)]
    rows = []
    load = os.getloadavg()
    started = time.perf_counter()
    for label, dc in instances:
        for sym in (False, True) if args.symmetry else (False,):
            rows.append(run_instance(dc, label, sym, args.limit, settings))
            r = rows[-1]
            print(
                f"{label:9} {'sym' if sym else '   '} vms={r['vms']:3} fill={r['memory_fill']:.2f} "
                f"cols={r['columns']:5} "
                + " ".join(
                    f"{s}={x['wall_s']:.2f}{'*' if x['proved_optimal'] else ''}"
                    for s, x in r["solves"].items()
                ),
                flush=True,
            )
    summary = summarize(rows)
    print_summary(summary, f"this run {args.label}".strip())
    if args.baseline:
        base = json.loads(args.baseline.read_text())
        print_summary(base["summary"], f"baseline {base.get('meta', {}).get('label', args.baseline)}")
    for group, ref in PROTOTYPE.items():
        print(
            f"reference {group}: prototype of the same form, {ref['solver']}: median {ref['median_s']} s, "
            f"max {ref['max_s']} s, proved {ref['proved']}"
        )
    meta = {
        "label": args.label,
        "time_limit_s": args.limit,
        "seed": args.seed,
        "wall_s": time.perf_counter() - started,
        "loadavg_start": load,
        "loadavg_end": os.getloadavg(),
        "cpus": os.cpu_count(),
        "prototype": PROTOTYPE,
    }
    write_json(args.out, {"meta": meta, "summary": summary, "instances": rows})
    print(f"loadavg start {load}, end {meta['loadavg_end']}; wrote {args.out}")


if __name__ == "__main__":
    main()
