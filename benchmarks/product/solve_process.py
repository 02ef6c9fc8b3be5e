"""What an operator's `origamig solve` costs beyond the solver: process wall time minus solver time.

Five fragmented 16-PM neighborhoods (the generator of `benchmarks/solver/solvers.py`, seed 1; `--pms N`:
fragmented N-PM data centers of the same recipe, seed 7) are written as snapshot files and each is
solved by a fresh process, as an operator runs it:

    origamig solve hoodN.json --neighborhood all --time-limit 10 --json

The overhead of a run is its process's wall time minus the solver's own `solver.wall_s` (Python's
start, imports, reading the snapshot, building and compiling the model, the LP bound, waiting for
the solver's helper process, decoding, planning and writing the document). Several checkouts can be
timed side by side in one run, interleaved instance by instance (`--versions NAME=PATH`, a folder
holding an `origamig` package; default: this one); medians over instances and repeats.

The processes run as on an installed package, with the bytecode of every module cached: one untimed
run per version first writes it (even where `PYTHONDONTWRITEBYTECODE` is set, which would otherwise
make every timed run compile the package's sources again).

    python -m benchmarks.product.solve_process                                  # this checkout, 3 repeats
    python -m benchmarks.product.solve_process --versions old=/tmp/old,new=.   # side by side
    python -m benchmarks.product.solve_process --pms 48 --instances 3          # larger snapshots

Prints a table and writes benchmarks/results/solve_process.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
from pathlib import Path
from typing import Any

from benchmarks import ROOT
from benchmarks.checkouts import revision, run_command
from benchmarks.publish import results_file, write_json
from benchmarks.solver.solvers import fragmented, neighborhoods
from origamig.cluster.datacenter import DataCenter
from origamig.snapshot.document import placement_json

RESULTS = ROOT / "benchmarks" / "results" / "solve_process.json"
COMMAND = ["solve", "--neighborhood", "all", "--time-limit", "10", "--json"]


def snapshot_of(dc: DataCenter) -> dict[str, Any]:
    """The snapshot document of a generated data center (running VMs placed, pending VMs not)."""
    placed = placement_json(dc.pms, dc.placement)
    pms = [{"id": p.id, "cpu": p.cpu, "ram_gb": p.ram_gb, "gpus": [g.name for g in p.gpus]} for p in dc.pms]
    vms = []
    for v, spec in {**dc.vms, **dc.pending}.items():
        entry: dict[str, Any] = {
            "id": v,
            "cpu": spec.cpu,
            "ram_gb": spec.ram_gb,
            "gis": [g.name for g in spec.gis],
        }
        if v in placed:
            entry["placement"] = placed[v]
        vms.append(entry)
    return {"version": 1, "pms": pms, "vms": vms}


def instances(n_pms: int, count: int) -> list[DataCenter]:
    """The 16-PM neighborhoods of `benchmarks/solver/solvers.py`, or `count` fragmented `n_pms`-PM ones."""
    if n_pms == 16:
        return neighborhoods(1, count)
    rng = random.Random(7)
    return [fragmented(rng, n_pms) for _ in range(count)]


def run_once(package_root: Path, snapshot: Path) -> dict[str, float]:
    """One `origamig solve` process of the checkout at `package_root`: wall, solver wall, overhead."""
    ran = run_command(package_root, [COMMAND[0], str(snapshot), *COMMAND[1:]])
    if ran.code not in (0, 3):  # 3: stopped at the limit, nothing better found
        raise SystemExit(f"error: {package_root}: solve exited {ran.code}: {ran.stderr.strip()[-300:]}")
    solver = ran.document()["solver"]
    return {
        "wall_s": ran.wall_s,
        "solver_s": solver["wall_s"],
        "overhead_s": ran.wall_s - solver["wall_s"],
        "bound_s": solver["timings"].get("bound_s", 0.0),
        "termination": solver["termination"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--versions", default=f"this={ROOT}", help="NAME=PATH,... checkouts to time (default: this)"
    )
    ap.add_argument("--instances", type=int, default=5, help="16-PM neighborhoods (default 5)")
    ap.add_argument("--repeats", type=int, default=3, help="runs of each instance per version (default 3)")
    ap.add_argument("--pms", type=int, default=16, help="PMs per snapshot (default 16: the neighborhoods)")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()
    args.out = results_file(args.out, RESULTS)
    versions = dict(v.split("=", 1) for v in args.versions.split(","))
    rows: list[dict[str, Any]] = []
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for n, dc in enumerate(instances(args.pms, args.instances)):
            path = Path(tmp) / f"hood{n}.json"
            path.write_text(json.dumps(snapshot_of(dc)))
            files.append(path)
        for root in versions.values():  # untimed: writes every version's bytecode cache
            run_once(Path(root).resolve(), files[0])
        for rep in range(args.repeats):
            for n, path in enumerate(files):
                for name, root in versions.items():  # interleaved: the machine's noise hits all alike
                    r = run_once(Path(root).resolve(), path)
                    rows.append({"version": name, "instance": n, "repeat": rep, **r})
                    print(
                        f"{name:8} hood{n} rep {rep}: process {r['wall_s']:.2f} s, "
                        f"solver {r['solver_s']:.2f} s ({r['termination']}), LP bound {r['bound_s']:.2f} s, "
                        f"overhead {r['overhead_s']:.2f} s",
                        flush=True,
                    )
    summary = {}
    print(
        f"\n{'version':8} {'runs':>4} {'overhead median':>16} {'max':>6} "
        f"{'solver median':>14} {'process median':>15}"
    )
    for name in versions:
        mine = [r for r in rows if r["version"] == name]
        summary[name] = {
            "runs": len(mine),
            "overhead_median_s": statistics.median(r["overhead_s"] for r in mine),
            "overhead_max_s": max(r["overhead_s"] for r in mine),
            "solver_median_s": statistics.median(r["solver_s"] for r in mine),
            "process_median_s": statistics.median(r["wall_s"] for r in mine),
        }
        s = summary[name]
        print(
            f"{name:8} {s['runs']:4} {s['overhead_median_s']:16.2f} {s['overhead_max_s']:6.2f} "
            f"{s['solver_median_s']:14.2f} {s['process_median_s']:15.2f}"
        )
    meta = {
        "command": COMMAND,
        "pms": args.pms,
        "versions": versions,
        "revisions": {name: revision(Path(root)) for name, root in versions.items()},
        "loadavg_start": load,
        "loadavg_end": os.getloadavg(),
        "cpus": os.cpu_count(),
    }
    write_json(args.out, {"meta": meta, "summary": summary, "runs": rows})
    print(f"loadavg start {load}, end {meta['loadavg_end']}; wrote {args.out}")


if __name__ == "__main__":
    main()
