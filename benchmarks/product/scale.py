"""`solve` as the cluster grows: 1,000 to 100,000 servers of 8x H100-80GB, this checkout beside another.

    python -m benchmarks.product.scale [--servers 1000,10000,100000] [--pending 8] [--previous PATH]
                                       [--repeats 1] [--timeout 3600] [--fresh] [--out FILE]

Generated clusters (held out: drawn here only): every server carries 8x H100-80GB (192 cores, 2 TB);
half of them run VMs placed first fit at each profile's default start (3 cores and 32 GB per compute
slice; one GI, two with probability 1/4), so the cluster has fragmented GPUs and thousands of empty
ones; `--pending` VMs of the same kind wait. 10,000 servers hold about 55,000 running VMs and
80,000 GPUs; 100,000 servers 800,000 GPUs.

Each cluster is written once and solved by a fresh process (`origamig solve FILE --json`, the
default goal and neighborhoods, as an operator runs it) of this checkout and, with `--previous`, of
another checkout (a `git worktree` of an earlier commit), one after the other for each repeat. For
each run: the process's wall time and peak resident memory, the pending VMs admitted, the plan's
length, and whether the independent replay (`judge/replay.py`) finds every step valid and ends in
the reported placement. The table gives the medians over the repeats and, per version, the time
against the smallest cluster's in the same run. Each finished cell is written to the JSON at once;
a rerun skips the cells already there (`--fresh` runs them again). Writes
`benchmarks/results/scale.json` and a figure of time and memory against servers (`scale.png`).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.table import Table

from benchmarks import ROOT
from benchmarks.checkouts import revision, run_command
from benchmarks.product.solve_admission import draw_vm, first_fit_slots
from benchmarks.publish import results_file, write_json
from origamig.cli.terminal import operator_console
from origamig.cluster.catalog import default_catalog
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import GiSlot, Placement, PmSpec, cores_to_m, gb_to_mb
from origamig.judge.replay import replay_plan
from origamig.snapshot.document import parse_snapshot

RESULTS = ROOT / "benchmarks" / "results" / "scale.json"
MODEL, GPUS, CORES, RAM_GB = "H100-80GB", 8, 192, 2048
SEED_BASE = 12001  # held out: no other benchmark or test draws clusters from these seeds


def cluster(servers: int, pending: int) -> dict[str, Any]:
    """A snapshot document of `servers` 8x H100-80GB servers, half of them in use."""
    rng = random.Random(SEED_BASE + servers)
    model = default_catalog().gpu(MODEL)
    pms_doc, pms = [], []
    for j in range(servers):
        name = f"srv-{j:06d}"
        pms_doc.append({"id": name, "cpu": CORES, "ram_gb": RAM_GB, "gpus": [MODEL] * GPUS})
        pms.append(PmSpec(name, cores_to_m(CORES), gb_to_mb(RAM_GB), (model,) * GPUS))
    dc = DataCenter(pms)
    vms: list[dict[str, Any]] = []
    for j in rng.sample(range(servers), servers // 2):
        for _ in range(rng.randint(2, 3 * GPUS)):
            vm, doc = draw_vm(rng, MODEL, f"vm-{len(vms):07d}")
            slots = first_fit_slots(dc, j, vm)
            if slots is not None:
                dc.place(vm, Placement(j, slots))
                doc["placement"] = {"pm": pms[j].id, "gis": [{"gpu": s.gpu, "start": s.start} for s in slots]}
                vms.append(doc)
    vms += [draw_vm(rng, MODEL, f"new-{n}")[1] for n in range(pending)]
    return {"version": 1, "description": f"scale cluster, {servers} servers", "pms": pms_doc, "vms": vms}


def judge_run(doc_in: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """What a run's solve document says, and whether its plan replays valid to its placement."""
    snap = parse_snapshot(doc_in)
    index = {pm.id: j for j, pm in enumerate(snap.pms)}
    placement = {
        v: Placement(index[pl["pm"]], tuple(GiSlot(g["gpu"], g["start"]) for g in pl["gis"]))
        for v, pl in out["placement"].items()
    }
    running = {v: snap.vms[v] for v in snap.placement}
    pending = {v: snap.vms[v] for v in snap.pending}
    replay = replay_plan(snap.pms, running, snap.placement, pending, out["plan"], target=placement)
    return {
        "status": out["status"],
        "pending": len(pending),
        "admitted": len(out["admitted"]),
        "steps": len(out["plan"]),
        "replay_ok": replay.ok,
        "replay_reason": replay.reason,
        "solver_wall_s": out["solver"]["wall_s"],
    }


def run_cell(
    root: Path, snapshot: Path, doc_in: dict[str, Any], repeats: int, timeout_s: float
) -> dict[str, Any]:
    """`repeats` runs of one checkout's `solve` on one cluster."""
    runs = []
    for _ in range(repeats):
        ran = run_command(root, ["solve", str(snapshot), "--json"], timeout_s)
        if ran.code not in (0, 3):
            raise SystemExit(f"{root}: solve exited {ran.code}: {ran.stderr.strip()[-400:]}")
        runs.append({"wall_s": ran.wall_s, "peak_mb": ran.peak_mb, **judge_run(doc_in, ran.document())})
    return {
        "runs": runs,
        "wall_s": statistics.median(r["wall_s"] for r in runs),
        "peak_mb": statistics.median(r["peak_mb"] for r in runs),
        "admitted": min(r["admitted"] for r in runs),
        "pending": runs[0]["pending"],
        "steps": statistics.median(r["steps"] for r in runs),
        "replay_ok": all(r["replay_ok"] for r in runs),
    }


def print_table(doc: dict[str, Any]) -> None:
    cells = doc["cells"]
    table = Table(title="origamig solve against servers (8x H100-80GB each)")
    for col in (
        "version",
        "servers",
        "admitted",
        "plan steps",
        "replay valid",
        "wall s",
        "× smallest",
        "peak MB",
    ):
        table.add_column(col, justify="right")
    for version in doc["versions"]:
        mine = sorted((c for c in cells.values() if c["version"] == version), key=lambda c: c["servers"])
        for c in mine:
            base = mine[0]["wall_s"]
            table.add_row(
                version,
                f"{c['servers']:,}",
                f"{c['admitted']} of {c['pending']}",
                f"{c['steps']:g}",
                "yes" if c["replay_ok"] else "NO",
                f"{c['wall_s']:.2f}",
                f"{c['wall_s'] / base:.2f}",
                f"{c['peak_mb']:.0f}",
            )
    operator_console().print(table)


def draw(doc: dict[str, Any], png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 4))
    for version in doc["versions"]:
        mine = sorted(
            (c for c in doc["cells"].values() if c["version"] == version), key=lambda c: c["servers"]
        )
        xs = [c["servers"] for c in mine]
        ax_t.plot(xs, [c["wall_s"] for c in mine], marker="o", label=version)
        ax_m.plot(xs, [c["peak_mb"] for c in mine], marker="o", label=version)
    for ax, label in ((ax_t, "solve wall time (s)"), (ax_m, "peak memory (MB)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("servers (8 GPUs each)")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--servers", default="1000,10000,100000", help="cluster sizes, comma-separated")
    ap.add_argument("--pending", type=int, default=8, help="pending VMs per cluster")
    ap.add_argument("--previous", type=Path, help="another checkout to run beside this one")
    ap.add_argument("--repeats", type=int, default=1, help="runs per checkout and size (medians reported)")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds a run may take")
    ap.add_argument("--fresh", action="store_true", help="run every cell again")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    out = results_file(args.out, RESULTS)
    versions = {"this": ROOT} | ({"previous": args.previous.resolve()} if args.previous else {})
    doc: dict[str, Any] = {"cells": {}}
    if out.exists() and not args.fresh:
        doc = json.loads(out.read_text())
    doc["command"] = "python -m benchmarks.product.scale " + " ".join(
        f"--{k.replace('_', '-')}" + ("" if v is True else f" {v}")
        for k, v in vars(args).items()
        if v not in (None, False) and k != "out"
    )
    doc["versions"] = {name: revision(root) for name, root in versions.items()}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for servers in [int(s) for s in args.servers.split(",")]:
            todo = [name for name in versions if f"{name} {servers}" not in doc["cells"]]
            if not todo:
                continue
            doc_in = cluster(servers, args.pending)
            snapshot = Path(tmp) / f"scale-{servers}.json"
            snapshot.write_text(json.dumps(doc_in))
            for name in todo:
                cell = run_cell(versions[name], snapshot, doc_in, args.repeats, args.timeout)
                doc["cells"][f"{name} {servers}"] = {"version": name, "servers": servers, **cell}
                write_json(out, doc)
                print(
                    f"{name} {servers:,} servers: {cell['wall_s']:.2f} s, {cell['peak_mb']:.0f} MB",
                    flush=True,
                )
            snapshot.unlink()
    doc["wall_s"] = doc.get("wall_s", 0.0) + time.perf_counter() - started
    write_json(out, doc)
    print_table(doc)
    png = out.with_suffix(".png")
    draw(doc, png)
    print(f"wrote {out} and {png}")


if __name__ == "__main__":
    main()
