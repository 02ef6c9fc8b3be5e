"""OrigaMIG speed: Algorithm 1 neighborhood selection on large data centers, and one call by phase.

Builds data centers of the paper's shape (3/4 of PMs with 2x A100-40GB, 1/4 with 2x A30, 80 cores,
512 GB), fills them first-fit with the paper's request mix to ~90% of memory slices, removes a third
(fragmentation) and queues a few pending VMs. Then it times `select_admission` and
`select_consolidation` (target: < 5 ms on 1,024 PMs) and a full call: select + build + compile +
solve + decode + plan (medians).

    python -m benchmarks.product.origamig_calls --quick      # 256 and 1,024 PMs, 3 calls
    python -m benchmarks.product.origamig_calls --full       # up to 4,096 PMs, 9 calls
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time

from rich.table import Table

from benchmarks import RESULTS
from origamig.bilp import Limits
from origamig.call.admission_neighborhood import select_admission
from origamig.call.consolidation_neighborhood import select_consolidation
from origamig.call.neighborhood_bounds import Bounds
from origamig.cli.terminal import operator_console
from origamig.cluster.catalog import default_catalog
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import PmSpec, VmSpec, Weights, cores_to_m, gb_to_mb
from origamig.policies.arrival_rule import first_fit
from origamig.policies.base import Rejection
from origamig.policies.optimizer.call_work import PHASES, run_call
from origamig.solver_registry import backend_names


def build(n_pms: int, seed: int) -> DataCenter:
    cat = default_catalog()
    a100, a30 = cat.gpu("A100-40GB"), cat.gpu("A30-24GB")
    n_a30 = n_pms // 4
    pms = [
        PmSpec(f"pm{j}", cores_to_m(80), gb_to_mb(512), (a30, a30) if j >= n_pms - n_a30 else (a100, a100))
        for j in range(n_pms)
    ]
    dc = DataCenter(pms)
    rng = random.Random(seed)
    target = 0.9 * sum(g.memory_slices for p in pms for g in p.gpus)
    used, n = 0, 0
    failures = 0
    while used < target and failures < 200:
        model = a100 if rng.random() < 0.75 else a30
        profs = tuple(rng.choice(model.profiles) for _ in range(1 if rng.random() < 0.5 else 2))
        c = sum(p.compute_slices for p in profs)
        v = VmSpec(f"v{n}", cores_to_m(4 * c), gb_to_mb(16 * c), profs)
        n += 1
        fit = first_fit(dc, v, frozenset())
        if isinstance(fit, Rejection):
            failures += 1
            continue
        dc.place(v, fit)
        used += v.memory_slices
    for v in rng.sample(sorted(dc.placement), len(dc.placement) // 3):
        dc.remove(v)
    for k in range(6):
        profs = (a100.profile("3g.20gb"), a100.profile("4g.20gb")) if k % 2 else (a100.profile("7g.40gb"),)
        dc.add_pending(VmSpec(f"p{k}", cores_to_m(28), gb_to_mb(112), profs))
    return dc


def time_it(fn, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="CI-sized (default)")
    ap.add_argument("--full", action="store_true", help="up to 4,096 PMs and more calls")
    ap.add_argument("--solver", default="highs", choices=backend_names())
    ap.add_argument("--time-limit", type=float, default=10.0)
    args = ap.parse_args(argv)
    sizes = [256, 1024, 2048, 4096] if args.full else [256, 1024]
    calls = 9 if args.full else 3
    console = operator_console()
    rows = []
    for n_pms in sizes:
        dc = build(n_pms, seed=n_pms)
        queue = list(dc.pending)
        adm = time_it(lambda dc=dc, queue=queue: select_admission(dc, queue, Bounds()), 21)
        con = time_it(lambda dc=dc: select_consolidation(dc, "100", Weights(), Bounds()), 21)
        rows.append(
            {
                "pms": n_pms,
                "vms": len(dc.placement),
                "select_admission_ms": adm * 1e3,
                "select_consolidation_ms": con * 1e3,
                "gamma_100": dc.gamma("100"),
            }
        )
    table = Table(title="Algorithm 1 neighborhood selection (median of 21)")
    for col in ("PMs", "running VMs", "Γ_100", "admission (ms)", "consolidation (ms)"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(
            str(r["pms"]),
            str(r["vms"]),
            str(r["gamma_100"]),
            f"{r['select_admission_ms']:.2f}",
            f"{r['select_consolidation_ms']:.2f}",
        )
    console.print(table)

    phases = list(PHASES)
    per_call = []
    limits = Limits(time_limit_s=args.time_limit, threads=None)
    for seed in range(calls):
        dc = build(128, seed=seed)
        t = time.perf_counter()
        nb = select_admission(dc, list(dc.pending), Bounds())
        sel = time.perf_counter() - t
        work = run_call(dc, nb, Weights(), args.solver, limits, sel)
        rec = {p: float(work.phases_s.get(p, 0.0)) for p in phases}
        rec.update(
            wall_s=work.wall_s,
            pms=len(nb.pms),
            vms=work.call.vms if work.call else None,
            proved_optimal=bool(work.call and work.call.proved_optimal),
            applied=work.applied,
        )
        per_call.append(rec)
    table = Table(title=f"OrigaMIG admission call on 128 PMs, {args.solver}, median of {calls}")
    for col in ["phase", "median (s)"]:
        table.add_column(col, justify="right")
    for p in [*phases, "wall_s"]:
        table.add_row(p, f"{statistics.median(r[p] for r in per_call):.4f}")
    console.print(table)
    console.print(
        f"proved optimal: {sum(r['proved_optimal'] for r in per_call)}/{calls}; "
        f"applied: {sum(r['applied'] for r in per_call)}/{calls}"
    )
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "origamig_calls.json"
    out.write_text(
        json.dumps(
            {
                "mode": "full" if args.full else "quick",
                "selection": rows,
                "calls": per_call,
                "solver": args.solver,
            },
            indent=2,
        )
    )
    console.print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
