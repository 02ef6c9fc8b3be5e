"""What-ifs on the example fleets: FF, TC and OrigaMIG at load 0.85, seeds paired, and OrigaMIG's call
times on 8-GPU neighborhoods.

Fleets (examples/fleets/): the paper's data center (2-GPU A100-40GB / A30 servers), twelve 8x H100-80GB
servers, and a mixed fleet of eight 4x A100-80GB and eight 8x H200 servers. Each policy sees the same
requests per seed; OrigaMIG runs with the neighborhood bounds derived from the servers' GPU count
(docs/policies.md#algorithm-1): 16 PMs / 64 VMs on 2-GPU servers, 4 / 64 on 8-GPU ones.

Writes benchmarks/results/fleets-<scale>.json (every run, the sweep summary, the what-if comparison and
the call study), fleets-<scale>.md (the what-if in words and tables, as `origamig report --what-if`
prints it) and fleets-<scale>.png (its figure).

Call study (for the fleets with 8-GPU servers; `--no-calls` skips it, `--calls-only` redoes it alone):
the OrigaMIG run of the first seed (`--call-seeds` for others) is simulated again in this process with
every call of the measured window recorded — its wall time under the run's node budget, whether the
solver proved optimality, and the neighborhood's PMs, GPUs and VMs — then 60 of the recorded calls
(`--replay-calls`), spread evenly, are solved again with the paper's setting (HiGHS, 1 thread, 10 s
wall-clock limit, no node budget).

    python -m benchmarks.studies.fleets --quick --workers 1    # 24 h + 24 h, seeds 1-3; paper fleet at 32 PMs
    python -m benchmarks.studies.fleets --full --scheduler tcp://HOST:8786   # 48 h + 72 h, 5 seeds, own sizes
    python -m benchmarks.studies.fleets --replot               # tables and figure again from the stored JSON
    python -m benchmarks.studies.fleets --quick --fleet my.toml   # the same what-if on your own fleet file
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from pathlib import Path
from typing import Any

from benchmarks import RESULTS, ROOT, sweep_cli
from benchmarks.publish import quantile
from origamig.sim.fleet import Fleet, load_fleet
from origamig.sim.workload import HOUR
from origamig.study import sweep
from origamig.study.results import runs_document
from origamig.study.sweep import Cell, Scale, Sweep, sweep_runs

EXAMPLES = ROOT / "examples" / "fleets"
FLEET_FILES = ("paper", "h100-8x", "a100-h200-mixed")
POLICIES = ("ff", "tc", "origamig")
LOAD = 0.85
QUICK = dataclasses.replace(sweep.QUICK, seeds=(1, 2, 3))
FULL = sweep.FULL
QUICK_PMS = {"paper": 32}  # the paper's fleet scaled like the other quick sweeps; the others at their size
REPLAY_LIMIT_S = 10.0  # the paper's per-call limit, for the replay of recorded calls
REPLAY_MAX = 60  # recorded calls replayed per fleet (spread evenly over the window)


def fleets(files: tuple[str, ...] = FLEET_FILES) -> list[Fleet]:
    return [load_fleet(EXAMPLES / f"{name}.toml") for name in files]


def pms_of(fleet: Fleet, scale: Scale) -> int:
    return QUICK_PMS.get(fleet.name, fleet.pm_count) if scale.name == "quick" else fleet.pm_count


def describe(scale: Scale, chosen: list[Fleet]) -> str:
    """The scale's description with each fleet's own number of servers."""
    sizes = ", ".join(f"{f.name} {pms_of(f, scale)} servers" for f in chosen)
    return scale.describe().replace(f"{scale.pms} PMs", sizes, 1)


def cells(scale: Scale, chosen: list[Fleet]) -> list[Cell]:
    out = []
    for fleet in chosen:
        for policy in POLICIES:
            options = scale.origamig_options() if policy == "origamig" else ()
            config = scale.config(load=LOAD, fleet=fleet, pms=pms_of(fleet, scale), policy_options=options)
            out.extend(Cell(policy, fleet.name, policy, config, seed) for seed in scale.seeds)
    return out


def whatif_document(sw: Sweep, chosen: list[Fleet]) -> dict[str, Any]:
    """The sweep's runs as `origamig simulate` results (one scenario per fleet), compared with FF."""
    sizes = {f.name: pms_of(f, sw.scale) for f in chosen}
    runs = [
        {
            "policy": r.policy,
            "seed": r.seed,
            "metrics": r.metrics,
            "config": {
                "variant": r.variant,
                "load": r.load,
                "pms": sizes.get(r.col),
                "measure_s": sw.scale.measure_h * HOUR,
                "fleet": {"name": r.col},
            },
        }
        for r in sw.runs
    ]
    return runs_document(runs, "ff")


# --- OrigaMIG's calls on 8-GPU neighborhoods ---------------------------------------------------------
def record_calls(fleet: Fleet, scale: Scale, seed: int) -> list[dict[str, Any]]:
    """Simulate OrigaMIG on `fleet` as the sweep does and record every call of the measured window."""
    from benchmarks.solver.solver_replay import neighborhood_document
    from origamig.sim.engine import Simulation
    from origamig.sim.scenario import build_pms, requests_for
    from origamig.study.runner import make_run_policy

    config = scale.config(
        load=LOAD, fleet=fleet, pms=pms_of(fleet, scale), policy_options=scale.origamig_options()
    )
    pms = build_pms(config)
    requests = requests_for(config, seed, pms)
    policy = make_run_policy("origamig", config, seed)
    recorded: list[dict[str, Any]] = []

    def record_call(dc: Any, nb: Any, result: Any, now: float) -> None:
        if now >= config.warmup_s:
            stats = result.call
            recorded.append(
                {
                    "seed": seed,
                    "t_s": now,
                    "kind": nb.kind,
                    "pms": len(nb.pms),
                    "gpus": sum(len(dc.pms[j].gpus) for j in nb.pms),
                    "vms": nb.vm_count(dc),
                    "wall_s": result.wall_s,
                    "modeled_s": result.modeled_s,
                    "proved": stats.proved_optimal if stats is not None else False,
                    "snapshot": neighborhood_document(dc, nb, policy.weights),
                }
            )

    policy.on_call = record_call
    Simulation(pms, requests, policy, config.warmup_s, config.measure_s, deterministic=True).run()
    return recorded


def replay_calls(recorded: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Solve every recorded call again with the paper's setting (10 s wall clock, no node budget)."""
    from benchmarks.solver.solver_replay import solve_once
    from origamig.snapshot.document import parse_snapshot

    out = []
    for call in recorded:
        snap = parse_snapshot(call["snapshot"])
        sol = solve_once(snap.datacenter(), snap.pending, snap.weights, "highs", 1, REPLAY_LIMIT_S)
        out.append({"wall_s": sol.result.wall_s, "proved": bool(sol.result.proved_optimal)})
    return out


def call_figures(times: list[float], proved: list[bool]) -> dict[str, Any]:
    return {
        "calls": len(times),
        "median_s": statistics.median(times) if times else None,
        "p95_s": quantile(times, 0.95) if times else None,
        "max_s": max(times) if times else None,
        "proved_share": sum(proved) / len(proved) if proved else None,
    }


def call_study(
    chosen: list[Fleet], scale: Scale, seeds: tuple[int, ...] = (), replay_max: int = REPLAY_MAX
) -> dict[str, Any]:
    """Per 8-GPU fleet: the recorded calls' sizes and times (`seeds`, default the scale's first), and
    at most `replay_max` of them, spread evenly, solved again at the paper's setting."""
    from benchmarks.solver.solver_replay import spread

    seeds = seeds or scale.seeds[:1]
    out: dict[str, Any] = {}
    for fleet in chosen:
        if fleet.gpus_per_pm < 8:
            continue
        t0 = time.perf_counter()
        recorded = [c for seed in seeds for c in record_calls(fleet, scale, seed)]
        replayed = replay_calls(spread(recorded, replay_max))
        out[fleet.name] = {
            "seeds": list(seeds),
            "window": f"{scale.warmup_h:g}–{scale.warmup_h + scale.measure_h:g} h",
            "neighborhood": {
                key: {
                    "median": statistics.median(c[key] for c in recorded),
                    "max": max(c[key] for c in recorded),
                }
                for key in ("pms", "gpus", "vms")
            }
            if recorded
            else {},
            "kinds": {k: sum(1 for c in recorded if c["kind"] == k) for k in ("admission", "consolidation")},
            "budget": call_figures([c["wall_s"] for c in recorded], [c["proved"] for c in recorded]),
            "modeled": call_figures([c["modeled_s"] for c in recorded], [c["proved"] for c in recorded]),
            "paper_setting": call_figures([r["wall_s"] for r in replayed], [r["proved"] for r in replayed]),
            "calls": [{k: v for k, v in c.items() if k != "snapshot"} for c in recorded],
            "replayed": replayed,
            "wall_s": time.perf_counter() - t0,
        }
    return out


def sweep_calls(sw: Sweep) -> dict[str, Any]:
    """Per fleet, over the sweep's OrigaMIG runs: calls, the share the solver proved optimal, and the
    median of the runs' median call wall times."""
    out: dict[str, Any] = {}
    for fleet in dict.fromkeys(r.col for r in sw.runs):
        runs = [r for r in sw.runs if r.col == fleet and r.policy == "origamig"]
        calls = sum(int(r.counters.get("calls", 0)) for r in runs)
        proved = sum(int(r.counters.get("status_optimal", 0)) for r in runs)
        medians = [r.counters["median_call_s"] for r in runs if r.counters.get("median_call_s")]
        out[fleet] = {
            "runs": len(runs),
            "calls": calls,
            "proved_share": proved / calls if calls else None,
            "median_of_run_medians_s": statistics.median(medians) if medians else None,
        }
    return out


# --- output --------------------------------------------------------------------------------------------
def print_report(text: str, study: dict[str, Any], scale_text: str) -> None:
    print(text)
    rows = []
    for name, s in study.items():
        nb = s["neighborhood"]
        for label, key in (
            ("node budget (simulated)", "budget"),
            ("paper: 10 s, no budget", "paper_setting"),
        ):
            f = s[key]
            if not f["calls"]:
                continue
            rows.append(
                [
                    name,
                    label,
                    str(f["calls"]),
                    f"{nb['pms']['median']:g} / {nb['gpus']['median']:g} / {nb['vms']['median']:g}",
                    f"{f['median_s']:.2f}",
                    f"{f['p95_s']:.2f}",
                    f"{f['max_s']:.2f}",
                    f"{100 * f['proved_share']:.0f}%",
                ]
            )
    if rows:
        seeds = ",".join(sorted({str(x) for s in study.values() for x in s.get("seeds", ())}))
        seeds = f"seed{'s' if ',' in seeds else ''} {seeds}"
        sweep.print_table(
            f"OrigaMIG calls on 8-GPU neighborhoods ({seeds}, measured window) — {scale_text}",
            ["fleet", "setting", "calls", "median PMs/GPUs/VMs", "median s", "p95 s", "max s", "proved"],
            rows,
            "wall-clock seconds on this machine (shared, 2 cores); 'proved': the solver proved optimality",
        )


def write(sw: Sweep, chosen: list[Fleet], study: dict[str, Any], out_dir: Path) -> tuple[Path, Path, Path]:
    """Print the what-if and the call study; write the JSON, the markdown and the figure."""
    from origamig.study import whatif

    doc = whatif_document(sw, chosen)
    scenarios = whatif.what_ifs(doc)
    text = f"# What-ifs on the example fleets — {describe(sw.scale, chosen)}\n\n" + whatif.markdown(scenarios)
    print_report(text, study, describe(sw.scale, chosen))
    extra = {
        "load": LOAD,
        "scale_text": describe(sw.scale, chosen),
        "fleets": {f.name: {"pms": pms_of(f, sw.scale), "describe": f.describe()} for f in chosen},
        "what_if": {"summary": doc["summary"], "paired": doc["paired"]},
        "origamig_calls_in_sweep": sweep_calls(sw),
        "call_study": study,
    }
    path = sweep.write_json(sw, extra, out_dir)
    md = path.with_suffix(".md")
    md.write_text(text)
    png = path.with_suffix(".png")
    whatif.draw(scenarios, png)
    return path, md, png


def main(args: argparse.Namespace) -> None:
    scale = sweep_cli.scale_from(args, QUICK, FULL)
    if scale.fleet is not None:  # --fleet FILE: the what-if on your own fleet
        chosen = [scale.fleet]
    else:
        chosen = fleets(tuple(args.fleets.split(",")) if args.fleets else FLEET_FILES)
    kept_study = _stored_study(scale, args.out) if args.replot or args.no_calls else {}  # before a rerun
    if args.replot or args.calls_only:  # the stored runs as they are (derived with each fleet's size)
        done = json.loads((args.out / f"fleets-{scale.name}.json").read_text())
        sw = Sweep(
            "fleets", scale, cells(scale, chosen), runs=sweep_runs(done), wall_s=done.get("wall_s") or 0.0
        )
    else:
        sw = sweep_cli.run_or_load("fleets", scale, cells(scale, chosen), args)
    seeds = sweep.parse_seeds(args.call_seeds) if args.call_seeds else ()
    study = kept_study or ({} if args.no_calls else call_study(chosen, scale, seeds, args.replay_calls))
    path, md, png = write(sw, chosen, study, args.out)
    print(f"{describe(sw.scale, chosen)}\nwall time {sw.wall_s:.0f} s; wrote {path}, {md} and {png}")


def _stored_study(scale: Scale, out_dir: Path) -> dict[str, Any]:
    path = out_dir / f"fleets-{scale.name}.json"
    if not path.exists():
        return {}
    return json.loads(path.read_text()).get("call_study") or {}


if __name__ == "__main__":
    p = sweep_cli.parser(__doc__ or "", QUICK, FULL, RESULTS)
    p.add_argument(
        "--fleets", default=None, help=f"comma-separated example fleets (default {','.join(FLEET_FILES)})"
    )
    p.add_argument("--no-calls", action="store_true", help="skip the call study (keep a stored one)")
    p.add_argument("--calls-only", action="store_true", help="redo the call study on the stored sweep")
    p.add_argument("--call-seeds", default=None, help="seeds of the call study (default: the first seed)")
    p.add_argument(
        "--replay-calls",
        type=int,
        default=REPLAY_MAX,
        help=f"calls replayed per fleet (default {REPLAY_MAX})",
    )
    sweep_cli.main_wrapper(main, p.parse_args())
