"""What a change of the fleet costs `origamig serve` (docs/service.md#the-fleet-as-it-changes), at 1,000 to
10,000 servers.

    python -m benchmarks.product.fleet_change [--pms 1000,10000] [--vms-per-pm 3] [--repeats 5]
                                              [--seed 0] [--out benchmarks/results/fleet_change.json]

Each size seeds the cluster of `serve_load` (`--pms` servers of 2× A100-40GB, `--vms-per-pm` running
VMs each, placed by first fit) into a new state and opens it in this process (the live state, the
optimizer's checks off), then `--repeats` times, in turn:

- `arrival`: a VM request on the state as it runs (the arrival rule's index made by one before);
- `add`: `PUT /v1/pms/{id}` of an empty server — in place, committed (the seed rewritten);
- `snapshot_after` / `arrival_after`: the first `GET /v1/snapshot` and the first VM request after it
  (each reads every server once again: the state started a new journal);
- `cordon` / `uncordon`, and `lgi`: one server's `nvidia-smi mig -lgi` listing (three GIs) compared;
- `remove`: `DELETE /v1/pms/{id}` of that server — the state read back from the store;
- `add_by_rebuild`: the same add made the other way the service could make it — the seed changed and
  the whole state read back from the store — then removed again.

`add` and `add_by_rebuild` are measured side by side in one run (alternating), and the table gives
medians (ms). Each size is written to the JSON as soon as it is done; a rerun skips the sizes there.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.table import Table

from benchmarks import ROOT
from benchmarks.product.serve_load import cluster
from benchmarks.publish import write_json
from origamig.cli.terminal import operator_console
from origamig.policies.base import make_policy
from origamig.serve.events_log import EVENTS
from origamig.serve.fleet import Fleet
from origamig.serve.host_gis import compare
from origamig.serve.live import Live
from origamig.serve.store import Store

RESULTS = ROOT / "benchmarks" / "results" / "fleet_change.json"
STEPS = ("arrival", "add", "snapshot_after", "arrival_after", "cordon", "uncordon", "lgi", "remove")
STEPS += ("add_by_rebuild",)
SERVER = {"cpu": 80, "ram_gb": 512, "gpus": ["A100-40GB", "A100-40GB"]}
LISTING = """+----------------------------------------------------+
| GPU instances:                                     |
| GPU   Name          Profile  Instance   Placement  |
|                       ID       ID       Start:Size |
|====================================================|
|   0  MIG 1g.5gb       19        7          0:1     |
+----------------------------------------------------+
|   0  MIG 2g.10gb      14        5          4:2     |
+----------------------------------------------------+
|   1  MIG 3g.20gb       9        2          0:4     |
+----------------------------------------------------+
"""


def timed_ms(act: Callable[..., Any], *args: Any) -> float:
    began = time.perf_counter()
    act(*args)
    return (time.perf_counter() - began) * 1000


def add_by_rebuild(live: Live, pm_id: str) -> None:
    """The add the other way: the seed changed in the store, the whole state read back."""
    with live.writing:
        doc = dict(live.seed.document)
        doc["pms"] = [*doc["pms"], {"id": pm_id, **SERVER}]
        live.refleet(lambda db: live.store.put_meta(db, "seed", doc), live.now())


def one_size(pms: int, vms_per_pm: int, repeats: int, seed: int) -> dict[str, Any]:
    """Every step's times at `pms` servers (module doc)."""
    doc = cluster(pms, pms * vms_per_pm, random.Random(seed))
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.create(Path(tmp) / "state.db", doc)
        live = Live(store, make_policy("origamig", check_interval_s=1e9))
        fleet = Fleet(live)
        times: dict[str, list[float]] = {step: [] for step in STEPS}
        for n in range(repeats):
            new = f"added-{n}"
            warm = {"id": f"warm-{n}", "cpu": 4, "ram_gb": 16, "gis": ["1g.5gb"]}
            live.arrive(warm)  # the arrival rule's index made (a removal or a start reads all anew)
            live.depart(warm["id"])
            times["arrival"].append(timed_ms(live.arrive, warm))
            live.depart(warm["id"])
            times["add"].append(timed_ms(fleet.add, new, dict(SERVER)))
            times["snapshot_after"].append(timed_ms(live.snapshot_json))
            vm = {"id": f"late-{n}", "cpu": 4, "ram_gb": 16, "gis": ["1g.5gb"]}
            times["arrival_after"].append(timed_ms(live.arrive, vm))
            live.depart(vm["id"])
            times["cordon"].append(timed_ms(fleet.cordon, "pm0"))
            times["uncordon"].append(timed_ms(fleet.uncordon, "pm0"))
            times["lgi"].append(timed_ms(compare, live, "pm1", LISTING, True))
            times["remove"].append(timed_ms(fleet.remove, new))
            times["add_by_rebuild"].append(timed_ms(add_by_rebuild, live, new))
            fleet.remove(new)
        store.close()
    return {
        "pms": pms,
        "vms": pms * vms_per_pm,
        "repeats": repeats,
        "median_ms": {step: round(statistics.median(ts), 2) for step, ts in times.items()},
        "ms": {step: [round(t, 2) for t in ts] for step, ts in times.items()},
    }


def show(doc: dict[str, Any]) -> None:
    table = Table(title="a change of the fleet, median ms")
    table.add_column("servers", justify="right")
    for step in STEPS:
        table.add_column(step, justify="right")
    table.add_column("rebuild / add", justify="right")
    for cell in doc["cells"].values():
        med = cell["median_ms"]
        ratio = med["add_by_rebuild"] / med["add"] if med["add"] else float("nan")
        table.add_row(f"{cell['pms']:,}", *(f"{med[s]:,.1f}" for s in STEPS), f"{ratio:,.0f}×")
    operator_console().print(table)


def main(argv: list[str] | None = None) -> int:
    EVENTS.stream = open(os.devnull, "w")  # noqa: SIM115 — the service's event log, not measured here
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pms", default="1000,10000", help="server counts, comma-separated")
    parser.add_argument("--vms-per-pm", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    doc: dict[str, Any] = json.loads(args.out.read_text()) if args.out.exists() else {"cells": {}}
    doc["command"] = "python -m benchmarks.product.fleet_change " + " ".join(argv or sys.argv[1:])
    for pms in (int(p) for p in args.pms.split(",")):
        if str(pms) in doc["cells"]:
            print(f"{pms} servers: already in {args.out}")
            continue
        doc["cells"][str(pms)] = one_size(pms, args.vms_per_pm, args.repeats, args.seed)
        write_json(args.out, doc)
    show(doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
