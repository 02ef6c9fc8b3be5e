"""Planning cost of the migration executor, and a nightly-size run of its random-case property test.

    python -m benchmarks.product.executor [--quick | --full] [--vms 64] [--pms 16] [--cases N]

Planning cost (target: a plan for 64 VMs on 16 PMs in well under 50 ms). A neighborhood of
`--pms` PMs (three quarters 2× A100-40GB, one quarter 2× A30-24GB; 80 cores, 512 GB) and `--vms`
VMs sized as in docs/simulator.md#workload (4 cores and 16 GB per compute slice), but with one GI, or two with
probability 1/4, of profiles up to half a GPU, so that 64 VMs fill about 70% of the slices of 16
PMs (with the workload's full profile mix, 64 VMs do not fit on 16 PMs); a VM is an A100 one with
probability 0.8, in proportion to the slices. Two scenarios per seed:

- compaction: 1.5 × `--vms` VMs arrive first-fit, random ones leave until `--vms` remain (holes);
  the target repacks the survivors first-fit in arrival order, as a consolidation call would.
- vacate: from the same current state, the VMs of the least-loaded quarter of the active PMs move
  first-fit into the free slices of the others (the typical consolidation call; few cycles).
- scatter (stress): the target packs first-fit; the current state scatters the same VMs at random
  free slots of all PMs (a VM that fits nowhere waits as pending and is started by the plan).
  Nearly every VM moves onto slices others hold and the remaining steps reserve most free space,
  so most seeds end Infeasible (no parking place) — it measures the worst-case planning time.

The table reports the median planning wall time over the repeats per seed, the median over seeds
per scenario, and the time of the independent replay of the plan.

`--cases N` runs the property test `tests/plan/test_executor.py::test_random_plans_are_valid_at_every_step`
with N hypothesis examples (CI runs 2,000) and reports whether it passed.

Prints a table and writes `benchmarks/results/executor.json`.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Iterable

from rich.console import Console
from rich.table import Table

from benchmarks import ROOT
from benchmarks.publish import write_json
from origamig.cluster.catalog import default_catalog
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import GiSlot, Placement, PmSpec, VmSpec, cores_to_m, gb_to_mb
from origamig.judge.replay import replay_plan
from origamig.plan.executor import Infeasible, plan_migrations

TARGET_MS = 50.0  # well under 50 ms for 64 VMs on 16 PMs
RESULTS = ROOT / "benchmarks" / "results" / "executor.json"


def neighborhood_pms(n: int) -> list[PmSpec]:
    cat = default_catalog()
    a100, a30 = cat.gpu("A100-40GB"), cat.gpu("A30-24GB")
    return [
        PmSpec(f"pm{j}", cores_to_m(80), gb_to_mb(512), (a100, a100) if j < n - n // 4 else (a30, a30))
        for j in range(n)
    ]


def random_vm(rng: random.Random, vm_id: str) -> VmSpec:
    """One GI, or two with probability 1/4, of a profile up to half a GPU; 4 cores/16 GB per slice."""
    cat = default_catalog()
    model = cat.gpu("A100-40GB" if rng.random() < 0.8 else "A30-24GB")  # in proportion to the slices
    small = [p for p in model.profiles if 2 * p.memory_slices <= model.memory_slices]
    profiles = tuple(rng.choice(small) for _ in range(1 + (rng.random() < 0.25)))
    compute = sum(p.compute_slices for p in profiles)
    return VmSpec(vm_id, cores_to_m(4 * compute), gb_to_mb(16 * compute), profiles)


def first_fit(dc: DataCenter, vm: VmSpec) -> Placement | None:
    """First PM, lowest GPU and start, largest GI first (the target's packing)."""
    order = sorted(range(len(vm.gis)), key=lambda n: -vm.gis[n].memory_slices)
    for j in range(len(dc.pms)):
        pl = _slots(dc, vm, j, order, None)
        if pl is not None:
            return pl
    return None


def scatter(dc: DataCenter, vm: VmSpec, rng: random.Random) -> Placement | None:
    """A random PM and random free starts (the current state's clutter)."""
    pms = list(range(len(dc.pms)))
    rng.shuffle(pms)
    for j in pms:
        pl = _slots(dc, vm, j, range(len(vm.gis)), rng)
        if pl is not None:
            return pl
    return None


def _slots(
    dc: DataCenter, vm: VmSpec, j: int, order: Iterable[int], rng: random.Random | None
) -> Placement | None:
    if not dc.fits_resources(vm, j):
        return None
    taken: dict[int, int] = {}
    slots: dict[int, GiSlot] = {}
    for n in order:
        prof = vm.gis[n]
        options = [
            (k, z)
            for k in range(dc.gpu_count(j))
            if dc.gpu_model(j, k).gpu_class == prof.gpu_class
            for z in prof.starts
            if not (dc.occupancy(j, k) | taken.get(k, 0)) & prof.mask(z)
        ]
        if not options:
            return None
        k, z = rng.choice(options) if rng else options[0]
        taken[k] = taken.get(k, 0) | prof.mask(z)
        slots[n] = GiSlot(k, z)
    return Placement(j, tuple(slots[n] for n in range(len(vm.gis))))


def scatter_case(seed: int, n_vms: int, n_pms: int) -> tuple[DataCenter, dict[str, Placement]]:
    """Stress: the target packs first-fit; the current state scatters the same VMs at random."""
    rng = random.Random(seed)
    pms = neighborhood_pms(n_pms)
    then, now = DataCenter(pms), DataCenter(pms)
    target: dict[str, Placement] = {}
    attempts = 0
    while len(target) < n_vms and attempts < 50 * n_vms:
        attempts += 1
        vm = random_vm(rng, f"vm{len(target)}")
        pl = first_fit(then, vm)
        if pl is not None:
            then.place(vm, pl)
            target[vm.id] = pl
    for v in target:
        vm = then.vms[v]
        pl = scatter(now, vm, rng)
        if pl is None:
            now.add_pending(vm)
        else:
            now.place(vm, pl)
    return now, target


def compaction_case(seed: int, n_vms: int, n_pms: int) -> tuple[DataCenter, dict[str, Placement]]:
    """Consolidation: first-fit arrivals, then departures leave holes; the target repacks first-fit."""
    rng = random.Random(seed)
    pms = neighborhood_pms(n_pms)
    now = DataCenter(pms)
    arrived = 0
    for _ in range(50 * n_vms):
        if arrived == n_vms * 3 // 2:
            break
        vm = random_vm(rng, f"vm{arrived}")
        pl = first_fit(now, vm)
        if pl is not None:
            now.place(vm, pl)
            arrived += 1
    for v in rng.sample(sorted(now.vms), max(0, len(now.vms) - n_vms)):
        now.remove(v)
    then = DataCenter(pms)
    target: dict[str, Placement] = {}
    for v in now.vms:  # arrival order
        pl = first_fit(then, now.vms[v])
        if pl is None:  # first-fit of the survivors can fail on an unlucky order: keep it in place
            pl = now.placement[v]
        then.place(now.vms[v], pl)
        target[v] = pl
    return now, target


def vacate_case(seed: int, n_vms: int, n_pms: int) -> tuple[DataCenter, dict[str, Placement]]:
    """Typical consolidation: the VMs of the least-loaded quarter of the active PMs move first-fit
    into the free slices of the other PMs (same current state as `compaction`)."""
    now, _ = compaction_case(seed, n_vms, n_pms)
    then = now.copy()
    active = sorted((j for j in range(n_pms) if now.is_active(j)), key=lambda j: (now.vm_count(j), j))
    sources = set(active[: max(1, len(active) // 4)])
    leaving = [v for j in sorted(sources) for v in now.vms_on(j)]
    for v in leaving:
        then.remove(v)
    target: dict[str, Placement] = {}
    for v in leaving:
        vm = now.vms[v]
        pl = next(
            (p for j in range(n_pms) if j not in sources for p in [_slots(then, vm, j, _big(vm), None)] if p),
            None,
        )
        pl = pl or now.placement[v]  # no room elsewhere: it stays
        then.place(vm, pl)
        target[v] = pl
    return now, target


def _big(vm: VmSpec) -> list[int]:
    return sorted(range(len(vm.gis)), key=lambda n: -vm.gis[n].memory_slices)


SCENARIOS = {"vacate": vacate_case, "compaction": compaction_case, "scatter": scatter_case}


def measure(scenario: str, seed: int, n_vms: int, n_pms: int, repeats: int) -> dict[str, float | int | str]:
    dc, target = SCENARIOS[scenario](seed, n_vms, n_pms)
    times, plan = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        plan = plan_migrations(dc, target)
        times.append(time.perf_counter() - start)
    row: dict[str, float | int | str] = {
        "scenario": scenario,
        "seed": seed,
        "vms": len(dc.vms) + len(dc.pending),
        "pending": len(dc.pending),
        "moved": sum(1 for v, pl in target.items() if dc.placement.get(v) != pl),
        "plan_ms_median": 1e3 * statistics.median(times),
        "plan_ms_max": 1e3 * max(times),
    }
    if isinstance(plan, Infeasible):
        row["result"] = "infeasible"
        row["reason"] = plan.reason
        return row
    assert plan is not None
    start = time.perf_counter()
    ok = replay_plan(dc.pms, dc.vms, dc.placement, dc.pending, plan.to_json(), target=target).ok
    row.update(
        result="plan" if ok else "INVALID",
        replay_ms=1e3 * (time.perf_counter() - start),
        parking=plan.cost.parking,
        vm_steps=plan.vm_steps,
        ops=len(plan.steps),
        migrated_gb=plan.cost.migrated_gb,
    )
    return row


def run_cases(n: int) -> dict[str, object]:
    env = {**os.environ, "ORIGAMIG_EXECUTOR_CASES": str(n)}
    test = "tests/plan/test_executor.py::test_random_plans_are_valid_at_every_step"
    start = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            test,
            "-q",
            "-p",
            "no:cacheprovider",
            "--hypothesis-show-statistics",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    return {
        "cases": n,
        "passed": proc.returncode == 0,
        "wall_s": time.perf_counter() - start,
        "tail": proc.stdout[-2000:],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="5 seeds × 11 repeats (default)")
    mode.add_argument("--full", action="store_true", help="20 seeds × 31 repeats")
    parser.add_argument("--vms", type=int, default=64)
    parser.add_argument("--pms", type=int, default=16)
    parser.add_argument("--cases", type=int, default=0, help="also run the property test with N examples")
    args = parser.parse_args()
    seeds, repeats = (20, 31) if args.full else (5, 11)

    rows = [measure(sc, s, args.vms, args.pms, repeats) for sc in SCENARIOS for s in range(1, seeds + 1)]
    table = Table(title=f"executor planning cost: {args.vms} VMs on {args.pms} PMs (median of {repeats})")
    cols = (
        "scenario",
        "seed",
        "vms",
        "pending",
        "moved",
        "parking",
        "vm_steps",
        "ops",
        "plan_ms_median",
        "replay_ms",
        "result",
    )
    for col in cols:
        table.add_column(col, justify="left" if col in ("scenario", "result") else "right")
    for r in rows:
        table.add_row(*(f"{r[c]:.2f}" if isinstance(r.get(c), float) else str(r.get(c, "-")) for c in cols))
    console = Console(width=160)
    console.print(table)
    medians = {}
    for sc in SCENARIOS:
        ms = [float(r["plan_ms_median"]) for r in rows if r["scenario"] == sc]
        plans = sum(1 for r in rows if r["scenario"] == sc and r["result"] == "plan")
        medians[sc] = statistics.median(ms)
        console.print(
            f"{sc}: median planning time {medians[sc]:.2f} ms over {len(ms)} seeds, {plans} plans, "
            f"{len(ms) - plans} infeasible (target: well under {TARGET_MS:.0f} ms)"
        )
    doc: dict[str, object] = {
        "benchmark": "executor",
        "python": platform.python_version(),
        "machine": platform.machine(),
        "vms": args.vms,
        "pms": args.pms,
        "repeats": repeats,
        "median_plan_ms": medians,
        "target_ms": TARGET_MS,
        "rows": rows,
    }
    if args.cases:
        res = run_cases(args.cases)
        console.print(f"property test with {args.cases} cases: {'passed' if res['passed'] else 'FAILED'}")
        if not res["passed"]:
            console.print(res["tail"])
        doc["property_run"] = {k: v for k, v in res.items() if k != "tail"}
    write_json(RESULTS, doc)  # makes the folder
    console.print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
