"""`solve` on mixed fleets as an operator runs it: the default against `--neighborhood all` and the
previous release, side by side in one run.

    python -m benchmarks.product.solve_mixed [--servers 12,40,100,1000] [--seeds 3] [--previous PATH]
                                             [--all-up-to 40] [--time-limit 10] [--out FILE]

Generated clusters (held out: drawn here only): two thirds of the servers carry 8x H100-80GB
(192 cores, 2 TB), one third 4x A100-80GB (128 cores, 1 TB) — two models that offer the same
profile names. Three quarters of the servers run VMs placed first fit at each profile's default start
(3 cores and 32 GB per compute slice; one GI, two with probability 1/4, and now and then 2-4x
7g.80gb), one in ten of them not migratable. Eight VMs are pending: two in five of them 2x to 8x
7g.80gb, the rest one or two GIs of one profile; two thirds name no GPU model.

Each cluster is solved by a fresh process (`origamig solve FILE --json --deterministic`) of
- `default`: this checkout;
- `all`: this checkout with `--neighborhood all`, on clusters of at most `--all-up-to` servers;
- `previous`: the checkout at `--previous` (a `git worktree` of the previous release), given the same
  cluster with every pending VM's `gpu_model` written out (the first model offering its profiles):
  the previous release refused a pending VM without it on a mixed fleet.

For each run: admitted VMs, live migrations of the plan (parking included), GB copied (between
servers and inside them), Eq. (5) of the output state under the paper's weights (100 / 50 / 20 / 1
/ 10, the same referee for every version), pinned VMs moved, whether the independent replay
(`judge/replay.py`) accepts the plan, and the process's wall time. Prints a table per size and
writes `benchmarks/results/solve_mixed.json`.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import statistics
import tempfile
from pathlib import Path
from typing import Any

from rich.table import Table

from benchmarks import ROOT
from benchmarks.checkouts import revision, run_command
from benchmarks.product.solve_admission import (
    CORES_PER_COMPUTE,
    GB_PER_COMPUTE,
    KINDS,
    first_fit_slots,
    server_fleet,
)
from benchmarks.publish import results_file, write_json
from origamig.cli.terminal import operator_console
from origamig.cluster.catalog import default_catalog
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import GiSlot, Placement, VmSpec, Weights, cores_to_m, gb_to_mb
from origamig.judge.objective import evaluate
from origamig.judge.replay import replay_plan
from origamig.snapshot.document import Snapshot, parse_snapshot

RESULTS = ROOT / "benchmarks" / "results" / "solve_mixed.json"
PENDING = 8
SEED_BASE = 9101  # held out: no other benchmark or test draws clusters from these seeds


def mixed_cluster(servers: int, seed: int) -> dict[str, Any]:
    """A snapshot document of `servers` servers of the two kinds, about half of them in use."""
    rng = random.Random(SEED_BASE + 1000 * servers + seed)
    pms_doc, pms = server_fleet(servers)
    dc = DataCenter(pms)
    vms: list[dict[str, Any]] = []
    for j in rng.sample(range(servers), (3 * servers) // 4):
        model = pms[j].gpus[0]
        for _ in range(rng.randint(2, 3 * len(pms[j].gpus))):
            names = _draw_gis(rng, model.name, big=0.05)
            vm = _vm(f"vm-{len(vms):05d}", model.name, names)
            slots = first_fit_slots(dc, j, vm)
            if slots is None:
                continue
            dc.place(vm, Placement(j, slots))
            doc = _doc(vm, model.name)
            doc["placement"] = {"pm": pms[j].id, "gis": [{"gpu": s.gpu, "start": s.start} for s in slots]}
            if rng.random() < 0.1:
                doc["migratable"] = False
            vms.append(doc)
    for n in range(PENDING):
        model = KINDS[rng.randrange(len(KINDS))][0]
        doc = _doc(_vm(f"new-{n}", model, _draw_gis(rng, model, big=0.4)), model)
        if rng.random() < 2 / 3:
            del doc["gpu_model"]
        vms.append(doc)
    return {
        "version": 1,
        "description": f"mixed fleet, {servers} servers, seed {seed}",
        "pms": pms_doc,
        "vms": vms,
    }


def _draw_gis(rng: random.Random, model_name: str, big: float) -> list[str]:
    """Profile names of a VM: with probability `big` 2x-8x 7g.80gb, else one or two of one profile."""
    if rng.random() < big:
        return ["7g.80gb"] * rng.choice([2, 3, 4, 5, 8])
    model = default_catalog().gpu(model_name)
    return [rng.choice(model.profiles).name] * (2 if rng.random() < 0.25 else 1)


def _vm(vm_id: str, model_name: str, names: list[str]) -> VmSpec:
    model = default_catalog().gpu(model_name)
    profiles = tuple(model.profile(n) for n in names)
    compute = sum(p.compute_slices for p in profiles)
    return VmSpec(
        vm_id, cores_to_m(CORES_PER_COMPUTE * compute), gb_to_mb(GB_PER_COMPUTE * compute), profiles
    )


def _doc(vm: VmSpec, model_name: str) -> dict[str, Any]:
    return {
        "id": vm.id,
        "cpu": vm.cpu,
        "ram_gb": vm.ram_gb,
        "gis": [p.name for p in vm.gis],
        "gpu_model": model_name,
    }


def with_models_written_out(doc: dict[str, Any], snap: Snapshot) -> dict[str, Any]:
    """`doc` with every pending VM's `gpu_model` set to the first model offering its profiles (what
    the previous release needed on a mixed fleet)."""
    out = copy.deepcopy(doc)
    for entry in out["vms"]:
        if "placement" not in entry and "gpu_model" not in entry and entry["gis"]:
            entry["gpu_model"] = snap.vms[entry["id"]].gis[0].gpu_model
    return out


def measure(snap: Snapshot, doc: dict[str, Any], wall_s: float, code: int) -> dict[str, Any]:
    """What one solve did, judged with this checkout's referee and replay."""
    placement = {
        v: Placement(
            snap.pms.index(next(p for p in snap.pms if p.id == pl["pm"])),
            tuple(GiSlot(g["gpu"], g["start"]) for g in pl["gis"]),
        )
        for v, pl in doc["placement"].items()
    }
    cost = doc.get("plan_cost") or {}
    running = {v: snap.vms[v] for v in snap.placement}
    pending = {v: snap.vms[v] for v in snap.pending}
    pinned = [
        v for v, spec in snap.vms.items() if not spec.migratable and placement.get(v) != snap.placement.get(v)
    ]
    replay = replay_plan(snap.pms, running, snap.placement, pending, doc["plan"], target=placement)
    return {
        "exit": code,
        "status": doc["status"],
        "admitted": len(doc["admitted"]),
        "migrations": sum(
            cost.get(k, 0) for k in ("migrations_intra", "migrations_inter", "parking_intra", "parking_inter")
        ),
        "gb_copied": (cost.get("bytes_copied", 0) + cost.get("local_bytes_copied", 0)) / 1e9,
        "objective": evaluate(snap.pms, dict(snap.vms), placement, snap.placement, Weights()).value,
        "pinned_moved": len(pinned),
        "replay_ok": replay.ok,
        "replay_reason": replay.reason,
        "termination": doc["solver"]["termination"],
        "proved_optimal": doc["solver"]["proved_optimal"],
        "wall_s": wall_s,
    }


def solve_file(
    root: Path, path: Path, extra: list[str], time_limit: float
) -> tuple[dict[str, Any], float, int]:
    """`origamig solve PATH --json --deterministic` of the checkout at `root`: its document, wall, exit."""
    args = ["solve", str(path), "--json", "--deterministic", "--time-limit", str(time_limit), *extra]
    ran = run_command(root, args)
    if ran.code not in (0, 3):  # 3: stopped at the limit, nothing better found
        raise SystemExit(f"error: {root}: solve {path.name} exited {ran.code}: {ran.stderr.strip()[-400:]}")
    return ran.document(), ran.wall_s, ran.code


COLUMNS = ("admitted", "migrations", "GB copied", "objective (paper weights)", "pinned moved", "replay valid",
           "median wall s")  # fmt: skip


def summarize(rows: list[dict[str, Any]], sizes: list[int], versions: list[str]) -> list[dict[str, Any]]:
    out = []
    for n in sizes:
        for name in versions:
            rs = [r for r in rows if r["servers"] == n and r["version"] == name]
            if not rs:
                continue
            out.append(
                {
                    "servers": n,
                    "version": name,
                    "runs": len(rs),
                    "pending": sum(r["pending"] for r in rs),
                    "admitted": sum(r["admitted"] for r in rs),
                    "migrations": sum(r["migrations"] for r in rs),
                    "gb_copied": sum(r["gb_copied"] for r in rs),
                    "objective_mean": statistics.mean(r["objective"] for r in rs),
                    "pinned_moved": sum(r["pinned_moved"] for r in rs),
                    "replay_valid": sum(r["replay_ok"] for r in rs),
                    "proved": sum(r["proved_optimal"] for r in rs),
                    "median_wall_s": statistics.median(r["wall_s"] for r in rs),
                }
            )
    return out


def print_table(summary: list[dict[str, Any]], title: str) -> None:
    table = Table(title=title)
    table.add_column("servers", justify="right")
    table.add_column("version")
    for col in COLUMNS:
        table.add_column(col, justify="right")
    for s in summary:
        table.add_row(
            str(s["servers"]),
            s["version"],
            f"{s['admitted']} of {s['pending']}",
            str(s["migrations"]),
            f"{s['gb_copied']:.0f}",
            f"{s['objective_mean']:.0f}",
            str(s["pinned_moved"]),
            f"{s['replay_valid']} of {s['runs']}",
            f"{s['median_wall_s']:.2f}",
        )
    operator_console().print(table)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--servers", default="12,40,100,1000")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--previous", type=Path, default=None, help="checkout of the previous release")
    ap.add_argument(
        "--all-up-to", type=int, default=40, help="largest cluster solved with --neighborhood all"
    )
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    out = results_file(args.out, RESULTS)
    sizes = [int(s) for s in args.servers.split(",")]
    versions: dict[str, tuple[Path, list[str]]] = {"default": (ROOT, [])}
    versions["all"] = (ROOT, ["--neighborhood", "all"])
    if args.previous is not None:
        versions["previous"] = (args.previous.resolve(), [])
    rows: list[dict[str, Any]] = []
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            for seed in range(args.seeds):
                doc = mixed_cluster(n, seed)
                snap = parse_snapshot(doc)
                files = {
                    "now": Path(tmp) / f"mixed-{n}-{seed}.json",
                    "previous": Path(tmp) / f"pinned-{n}-{seed}.json",
                }
                files["now"].write_text(json.dumps(doc))
                files["previous"].write_text(json.dumps(with_models_written_out(doc, snap)))
                for name, (root, extra) in versions.items():
                    if name == "all" and n > args.all_up_to:
                        continue
                    path = files["previous" if name == "previous" else "now"]
                    result, wall, code = solve_file(root, path, extra, args.time_limit)
                    row = {"servers": n, "seed": seed, "version": name, "pending": len(snap.pending)}
                    row |= measure(snap, result, wall, code)
                    rows.append(row)
                    print(
                        f"{n:5} seed {seed} {name:8}: admitted {row['admitted']}/{row['pending']}, "
                        f"{row['migrations']} migrations, {row['gb_copied']:.0f} GB, "
                        f"objective {row['objective']:.0f}, "
                        f"replay {'ok' if row['replay_ok'] else row['replay_reason']}, {wall:.1f} s",
                        flush=True,
                    )
    summary = summarize(rows, sizes, list(versions))
    print_table(
        summary, f"solve on mixed H100 / A100-80GB fleets, {args.seeds} seeds per size (deterministic HiGHS)"
    )
    meta = {
        "versions": {name: str(root) for name, (root, _) in versions.items()},
        "revisions": {name: revision(root) for name, (root, _) in versions.items()},
        "time_limit_s": args.time_limit,
        "all_up_to": args.all_up_to,
        "seeds": args.seeds,
        "cpus": os.cpu_count(),
        "loadavg_start": load,
        "loadavg_end": os.getloadavg(),
    }
    write_json(out, {"meta": meta, "summary": summary, "runs": rows})
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
