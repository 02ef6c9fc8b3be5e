"""Solvers on the same OrigaMIG calls: record a simulation's neighborhoods, replay them.

Record: OrigaMIG runs on the paper's data center shape (3/4 of PMs with 2x A100, 1/4 with 2x A30)
and every call it makes after `record_from_h` is written as a snapshot (docs/formats.md#snapshot) restricted
to the call's neighborhood: the PMs of M̂ with their running VMs (placed) and the pending VMs of N̂
(unplaced), plus the weights. Solving such a snapshot over all its PMs is exactly the call's BILP.

Replay: each recorded call is solved by every setting (HiGHS / CP-SAT, 1 / 2 threads) with a 10 s
limit; when a solve runs past 1 s (2 s), it is solved again with a 1 s (2 s) limit to learn the
objective reached by then. Per setting: median and p95 wall time of the 10 s solve, share proved
optimal, and the share of calls at the best objective any setting found, at 1, 2 and 10 s.

    python -m benchmarks.solver.solver_replay --quick                 # 32 PMs, 12 of the calls in 24–48 h
    python -m benchmarks.solver.solver_replay --full                  # 128 PMs, 60 of the calls in 40–56 h
    python -m benchmarks.solver.solver_replay --full --record-only    # record the calls only (then --replay)
    python -m benchmarks.solver.solver_replay --replay FILE.json      # replay a recorded file only
    python -m benchmarks.solver.solver_replay --replay FILE.json --settings highs-1,cpsat-2   # some settings
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks import RESULTS
from benchmarks.paper_values import TABLE10, TABLE12_CALL_MEDIAN_S
from benchmarks.publish import publish, quantile, redraw, results_file, scale_parser, write_json
from origamig.bilp import Limits, build_model, compile_model, restrict, solve_region
from origamig.bilp.backends.cpu_time import cpu_seconds
from origamig.bilp.compile import Compiled
from origamig.call.neighborhood import Neighborhood
from origamig.cluster.catalog import default_catalog
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Weights
from origamig.policies.base import Work
from origamig.policies.optimizer.policy import OrigaMIG
from origamig.sim.engine import Simulation
from origamig.sim.scenario import SimConfig, build_pms, requests_for
from origamig.sim.workload import HOUR
from origamig.snapshot.document import parse_snapshot
from origamig.solver_registry import backend_names

SETTINGS = tuple((solver, threads) for solver in backend_names() for threads in (1, 2))
CHECKPOINTS_S = (1.0, 2.0, 10.0)
EPS = 1e-6
PAPER_MEDIAN_CALL_128_S = TABLE10["delta-10"]["median_call_s"]  # Table 10, δ = 10 (the default settings)


@dataclass(frozen=True)
class Setup:
    pms: int
    load: float
    seed: int
    record_from_h: float
    horizon_h: float
    calls: int  # how many recorded calls to replay (spread evenly over those recorded)
    record_limit_s: float = 2.0  # call limit while recording (only shapes the trajectory)
    solver: str = "highs"
    record_work_limit: float | None = None  # if given: deterministic recording with this work budget


QUICK = Setup(pms=32, load=0.85, seed=1, record_from_h=24.0, horizon_h=48.0, calls=12)
# The full recording runs deterministic calls with a 100-node budget (the quick simulations' budget):
# the trajectory only decides which calls are recorded, and 128 PMs x 56 h is ~2,000 calls.
FULL = Setup(
    pms=128, load=0.85, seed=1, record_from_h=40.0, horizon_h=56.0, calls=60, record_work_limit=100.0
)


def neighborhood_document(dc: DataCenter, nb: Neighborhood, weights: Weights) -> dict[str, Any]:
    """The call as a snapshot (docs/formats.md#snapshot): M̂'s PMs and VMs, N̂'s pending VMs, the weights."""
    pms = [dc.pms[j] for j in nb.pms]
    vms: list[dict[str, Any]] = []
    for j in nb.pms:
        for v in sorted(dc.vms_on(j)):
            vm, pl = dc.vms[v], dc.placement[v]
            vms.append(
                {
                    "id": v,
                    "cpu": vm.cpu,
                    "ram_gb": vm.ram_gb,
                    "gis": [p.name for p in vm.gis],
                    "placement": {
                        "pm": dc.pms[pl.pm].id,
                        "gis": [{"gpu": s.gpu, "start": s.start} for s in pl.gis],
                    },
                }
            )
    for v in nb.pending:
        vm = dc.pending[v]
        entry: dict[str, Any] = {"id": v, "cpu": vm.cpu, "ram_gb": vm.ram_gb, "gis": [p.name for p in vm.gis]}
        if vm.gis:
            entry["gpu_model"] = vm.gis[0].gpu_model
        vms.append(entry)
    return {
        "version": 1,
        "pms": [
            {"id": pm.id, "cpu": pm.cpu, "ram_gb": pm.ram_gb, "gpus": [g.name for g in pm.gpus]} for pm in pms
        ],
        "vms": vms,
        "weights": {
            "accept": weights.accept,
            "pm": weights.pm,
            "gpu": weights.gpu,
            "free_start": weights.free_start,
            "migration": weights.migration,
        },
    }


class _RecordingOrigaMIG(OrigaMIG):
    """OrigaMIG that writes down each call's neighborhood (as a snapshot) from `record_from_s` on."""

    def __init__(self, record_from_s: float, **options: Any) -> None:
        super().__init__(**options)
        self.record_from_s = record_from_s
        self.recorded: list[dict[str, Any]] = []
        self.on_call = self._record

    def _record(self, dc: DataCenter, nb: Neighborhood, work: Work, now: float) -> None:
        if now >= self.record_from_s:
            self.recorded.append(
                {
                    "t_s": now,
                    "kind": nb.kind,
                    "pms": len(nb.pms),
                    "vms": nb.vm_count(dc),
                    "recorded_wall_s": work.wall_s,
                    "snapshot": neighborhood_document(dc, nb, self.weights),
                }
            )


def record(setup: Setup) -> list[dict[str, Any]]:
    """Simulate OrigaMIG and return the neighborhoods of its calls after `record_from_h`."""
    config = SimConfig(load=setup.load, pms=setup.pms, warmup_s=0.0, measure_s=setup.horizon_h * HOUR)
    catalog = default_catalog()
    pms = build_pms(config, catalog)
    requests = requests_for(config, setup.seed, pms, catalog)
    policy = _RecordingOrigaMIG(
        setup.record_from_h * HOUR,
        solver=setup.solver,
        time_limit_s=setup.record_limit_s,
        threads=1,
        deterministic=setup.record_work_limit is not None,
        work_limit=setup.record_work_limit,
    )
    Simulation(pms, requests, policy, 0.0, config.measure_s).run()
    return policy.recorded


def spread(items: Sequence[Any], count: int) -> list[Any]:
    """`count` items spread evenly over `items` (all of them if there are fewer)."""
    if len(items) <= count:
        return list(items)
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]


def solve_once(dc: DataCenter, pending: list[str], weights: Weights, solver: str, threads: int, limit: float):
    return solve_region(
        dc,
        range(len(dc.pms)),
        pending,
        weights,
        solver=solver,
        limits=Limits(time_limit_s=limit, threads=threads),
    )


def snapshot_model(doc: dict[str, Any]) -> Compiled:
    """The compiled model of a whole snapshot document (all its PMs, its pending VMs, its weights)."""
    snap = parse_snapshot(doc)
    dc = snap.datacenter()
    return compile_model(build_model(restrict(dc, range(len(dc.pms)), snap.pending), snap.weights))


def replay_call(
    call: dict[str, Any], settings: Sequence[tuple[str, int]] = SETTINGS, checkpoints: bool = True
) -> dict[str, Any]:
    """Solve one recorded call with every setting; objectives at 1, 2 and 10 s (without `checkpoints`
    the earlier objectives are those of the 10 s solve if it finished by then, else unknown)."""
    snap = parse_snapshot(call["snapshot"])
    out: dict[str, Any] = {
        "t_s": call["t_s"],
        "kind": call["kind"],
        "pms": len(snap.pms),
        "vms": len(snap.vms),
    }
    per: dict[str, Any] = {}
    for solver, threads in settings:
        dc = snap.datacenter()
        cpu0 = cpu_seconds()
        full = solve_once(dc, snap.pending, snap.weights, solver, threads, CHECKPOINTS_S[-1])
        cpu = cpu_seconds() - cpu0  # the whole call (build, compile, solve, decode), all threads
        res = full.result
        at: dict[str, float | None] = {}
        for t in CHECKPOINTS_S[:-1]:
            if res.wall_s <= t:
                at[f"{t:g}"] = res.objective
            elif not checkpoints:
                at[f"{t:g}"] = None
            else:
                at[f"{t:g}"] = solve_once(dc, snap.pending, snap.weights, solver, threads, t).result.objective
        at[f"{CHECKPOINTS_S[-1]:g}"] = res.objective
        per[f"{solver}-{threads}t"] = {
            "wall_s": res.wall_s,
            "cpu_s": cpu,
            "work": res.work,
            "proved": res.proved_optimal,
            "objective": res.objective,
            "bound": res.bound,
            "objective_at": at,
            "columns": full.size.get("columns"),
        }
    out["solves"] = per
    best = max((s["objective"] for s in per.values() if s["objective"] is not None), default=None)
    out["best_objective"] = best
    return out


def summarize(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    names = list(rows[0]["solves"]) if rows else []
    for name in names:
        solves = [(r["solves"][name], r["best_objective"]) for r in rows]
        walls = [s["wall_s"] for s, _ in solves]
        entry: dict[str, Any] = {
            "setting": name,
            "calls": len(solves),
            "median_s": quantile(walls, 0.5),
            "p95_s": quantile(walls, 0.95),
            "median_cpu_s": quantile([s.get("cpu_s", float("nan")) for s, _ in solves], 0.5),
            "p95_cpu_s": quantile([s.get("cpu_s", float("nan")) for s, _ in solves], 0.95),
            "proved_share": sum(s["proved"] for s, _ in solves) / len(solves),
        }
        for t in CHECKPOINTS_S:
            key = f"{t:g}"
            reached = [
                s["objective_at"][key] is not None
                and best is not None
                and s["objective_at"][key] >= best - EPS
                for s, best in solves
            ]
            short = [
                (best - s["objective_at"][key]) / max(1.0, abs(best))
                for s, best in solves
                if s["objective_at"][key] is not None and best is not None
            ]
            entry[f"at_best_share_{key}s"] = sum(reached) / len(reached)
            entry[f"mean_shortfall_{key}s"] = statistics.fmean(short) if short else float("nan")
        out.append(entry)
    return out


def print_table(doc: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Solvers on {len(doc['calls'])} recorded OrigaMIG calls (10 s limit)")
    cols = ["setting", "median s", "p95 s", "median cpu s", "p95 cpu s", "proved"]
    cols += [f"at best @{t:g}s" for t in CHECKPOINTS_S]
    cols += [f"shortfall @{t:g}s" for t in CHECKPOINTS_S]
    for col in cols:
        table.add_column(col, justify="right")
    for s in doc["summary"]:
        table.add_row(
            s["setting"],
            f"{s['median_s']:.2f}",
            f"{s['p95_s']:.2f}",
            f"{s.get('median_cpu_s', float('nan')):.2f}",
            f"{s.get('p95_cpu_s', float('nan')):.2f}",
            f"{100 * s['proved_share']:.0f}%",
            *[f"{100 * s[f'at_best_share_{t:g}s']:.0f}%" for t in CHECKPOINTS_S],
            *[f"{100 * s[f'mean_shortfall_{t:g}s']:.2f}%" for t in CHECKPOINTS_S],
        )
    Console(width=170).print(table)


def draw(doc: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 5.4))
    summary = doc["summary"]
    names = [s["setting"] for s in summary]
    for n, name in enumerate(names):
        walls = [r["solves"][name]["wall_s"] for r in doc["calls"]]
        ax.scatter([n] * len(walls), walls, alpha=0.4, s=14, color="tab:gray")
    ax.bar(range(len(names)), [s["median_s"] for s in summary], alpha=0.6, label="median")
    ax.scatter(range(len(names)), [s["p95_s"] for s in summary], marker="_", s=400, color="k", label="p95")
    ax.axhline(CHECKPOINTS_S[-1], color="tab:red", ls="-.", lw=0.8, label="call limit (10 s, paper §6.1)")
    ax.axhline(
        PAPER_MEDIAN_CALL_128_S,
        color="tab:purple",
        ls="--",
        lw=1,
        label=f"paper median call, 128 PMs, load 0.85 (Table 10): {PAPER_MEDIAN_CALL_128_S} s",
    )
    ax.axhline(
        TABLE12_CALL_MEDIAN_S[32],
        color="tab:green",
        ls="--",
        lw=1,
        label=f"paper median call, 32 PMs, §6.8 load (Table 12): {TABLE12_CALL_MEDIAN_S[32]} s",
    )
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names)
    ax.set_yscale("log")
    ax.set_ylabel("wall time of one call's solve (s, log)")
    ax.set_xlabel("solver and threads")
    ax.set_title("(a) time per call (dots: each call)")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    for s in summary:
        bx.plot(
            CHECKPOINTS_S, [100 * s[f"at_best_share_{t:g}s"] for t in CHECKPOINTS_S], "o-", label=s["setting"]
        )
    bx.set_xscale("log")
    bx.set_xticks(CHECKPOINTS_S)
    bx.set_xticklabels([f"{t:g}" for t in CHECKPOINTS_S])
    bx.set_ylim(-5, 105)
    bx.set_xlabel("time limit (s, log)")
    bx.set_ylabel("calls at the best objective found (%)")
    bx.set_title("(b) objective reached by a deadline")
    bx.legend(fontsize=8)
    fig.suptitle(f"Solver comparison — {doc['mode']} run: {doc['scale']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = scale_parser(__doc__, "32 PMs, 12 calls (default)", "128 PMs, 60 calls")
    ap.add_argument(
        "--settings",
        default=",".join(f"{n}-{t}" for n, t in SETTINGS),
        help="solver-threads pairs to replay (default: %(default)s)",
    )
    ap.add_argument(
        "--no-checkpoints", action="store_true", help="no 1 s / 2 s re-solves (time per call only)"
    )
    ap.add_argument("--record-only", action="store_true", help="record the calls, replay nothing")
    ap.add_argument("--out", type=Path, default=RESULTS / "solver_replay.json")
    ap.add_argument("--from-json", type=Path, help="redraw a results file (table and PNG), no solve")
    args = ap.parse_args(argv)
    args.out = results_file(args.out, RESULTS / "solver_replay.json")
    if args.from_json:
        return redraw(args.from_json, print_table, draw)
    setup = FULL if args.full else QUICK
    settings = tuple((n, int(t)) for n, t in (x.rsplit("-", 1) for x in args.settings.split(",")))
    name = "full" if args.full else "quick"
    started = time.perf_counter()
    load = os.getloadavg()
    calls_file = args.out.with_name(args.out.stem + "_calls.json")
    if args.replay:
        recorded_doc = json.loads(args.replay.read_text())
        calls = recorded_doc["calls"]
        scale = f"replay of {args.replay} ({len(calls)} calls)"
    else:
        scale = (
            f"{setup.pms} PMs (3/4 A100, 1/4 A30), load {setup.load}, seed {setup.seed}; calls after "
            f"{setup.record_from_h:g} h of {setup.horizon_h:g} h, {setup.calls} replayed; 10 s limit"
        )
        print(f"{name}: {scale}", flush=True)
        recorded = record(setup)
        calls = spread(recorded, setup.calls)
        write_json(calls_file, {"setup": asdict(setup), "calls": calls})
        print(
            f"recorded {len(recorded)} calls in {time.perf_counter() - started:.0f} s -> {calls_file}",
            flush=True,
        )
        if args.record_only:
            return 0
    rows = []
    for n, call in enumerate(calls):
        rows.append(replay_call(call, settings, not args.no_checkpoints))
        r = rows[-1]
        print(
            f"  call {n:2} ({r['kind']}, {r['pms']} PMs, {r['vms']} VMs): "
            + " ".join(f"{k}={s['wall_s']:.2f}{'*' if s['proved'] else ''}" for k, s in r["solves"].items()),
            flush=True,
        )
    doc = {"mode": name, "scale": scale, "setup": asdict(setup), "summary": summarize(rows), "calls": rows}
    publish(doc, args.out, started, load, print_table, draw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
