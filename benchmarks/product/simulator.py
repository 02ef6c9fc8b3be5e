"""Simulator speed and fidelity.

Speed: each policy over the default 128 PMs and 5 simulated days (48 h warm-up + 72 h measured,
≈ 4,300 requests at load 0.85) on one core; the run time is split into the policy's own methods
and everything else (the framework: event heap, state updates, metrics), and OrigaMIG's calls into
the phases its `Work.phases_s` reports (select, build, solve, plan).

Fidelity: FF with the default setup over seeds 1..N at loads 0.75 and 1.0, against an independent
reading of the workload (docs/simulator.md) over 100 seeds and against the paper's Table 8.

    python -m benchmarks.product.simulator --quick  # speed of ff/mfi/tc (1 repeat), FF fidelity over 5 seeds
    python -m benchmarks.product.simulator --full   # 3 repeats (median), OrigaMIG too, FF fidelity, 20 seeds

Prints tables and writes benchmarks/results/simulator.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from benchmarks import ROOT
from benchmarks.paper_values import READING_FF_100_SEEDS, TABLE8
from origamig.policies.base import policy_names
from origamig.sim.engine import Simulation
from origamig.sim.scenario import SimConfig, build_pms, requests_for
from origamig.study.aggregate import mean_ci
from origamig.study.runner import RunSpec, make_run_policy, run_all

RESULTS = ROOT / "benchmarks" / "results" / "simulator.json"
READING_FF = READING_FF_100_SEEDS
# The paper's Table 8 for FF, acceptance as a fraction like ours.
PAPER_FF = {
    load: {
        "acceptance": round(TABLE8["acceptance_pct"][load]["ff"] / 100, 6),
        "active_pms": TABLE8["active_pms"][load]["ff"],
        "energy_mwh": TABLE8["energy_mwh"][load]["ff"],
    }
    for load in READING_FF
}
SPEED_TARGET_FF_S = 1.0


class Timed:
    """A transparent proxy that adds up the wall time spent in the policy's own methods."""

    def __init__(self, policy: Any) -> None:
        self._p = policy
        self.name = policy.name
        self.spent = 0.0

    def _wrap(self, fn: Any, *args: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self.spent += time.perf_counter() - t0

    def arrive(self, *a: Any) -> Any:
        return self._wrap(self._p.arrive, *a)

    def depart(self, *a: Any) -> Any:
        return self._wrap(self._p.depart, *a)

    def next_check(self, *a: Any) -> Any:
        return self._wrap(self._p.next_check, *a)

    def work(self, *a: Any) -> Any:
        return self._wrap(self._p.work, *a)

    def finished(self, *a: Any) -> Any:
        return self._wrap(self._p.finished, *a)

    def counters(self) -> dict[str, float]:
        return self._p.counters()


def speed(policy: str, repeats: int, deterministic: bool, hours: float = 120.0) -> dict[str, Any]:
    warmup = min(48.0, hours * 0.4) * 3600
    cfg = SimConfig(load=0.85, deterministic=deterministic, warmup_s=warmup, measure_s=hours * 3600 - warmup)
    pms = build_pms(cfg)
    t0 = time.perf_counter()
    requests = requests_for(cfg, 1, pms)
    gen_s = time.perf_counter() - t0
    runs = []
    for _ in range(repeats):
        timed = Timed(make_run_policy(policy, cfg, 1))
        sim = Simulation(pms, requests, timed, cfg.warmup_s, cfg.measure_s, deterministic)
        res = sim.run()
        runs.append((res.wall_s, timed.spent, res))
    wall, spent, res = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
    return {
        "policy": policy,
        "requests": len(requests),
        "events": res.events,
        "calls": res.calls,
        "generate_s": gen_s,
        "run_s": wall,
        "policy_s": spent,
        "framework_s": wall - spent,
        "framework_us_per_event": 1e6 * (wall - spent) / max(res.events, 1),
        "call_phases_s": res.call_stats_s,
        "repeats": repeats,
        "simulated_h": hours,
    }


def fidelity(seeds: int) -> list[dict[str, Any]]:
    out = []
    for load in (0.75, 1.0):
        results = run_all([RunSpec(SimConfig(load=load), "ff", s) for s in range(1, seeds + 1)])
        for metric in ("acceptance", "active_pms", "energy_mwh"):
            stats = mean_ci(r.metrics[metric] for r in results)
            ref = READING_FF[load][metric]
            assert stats.mean is not None and stats.ci95 is not None  # every run has these metrics
            out.append(
                {
                    "load": load,
                    "metric": metric,
                    "mean": stats.mean,
                    "ci95": stats.ci95,
                    "sd": statistics.stdev(stats.values) if seeds > 1 else 0.0,
                    "reading_100_seeds": ref,
                    "paper": PAPER_FF[load][metric],
                    "reading_inside_ci": abs(stats.mean - ref) <= stats.ci95,
                }
            )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1 repeat, FF fidelity over 5 seeds (default)")
    ap.add_argument("--full", action="store_true", help="3 repeats, OrigaMIG included, 20 seeds")
    ap.add_argument("--policies", default=None, help="comma-separated (default: ff,mfi,tc [+origamig])")
    ap.add_argument("--seeds", type=int, default=None, help="seeds for the fidelity check")
    ap.add_argument("--no-fidelity", action="store_true")
    ap.add_argument("--hours", type=float, default=120.0, help="simulated hours of the speed runs (120)")
    args = ap.parse_args()
    repeats = 3 if args.full else 1
    seeds = args.seeds or (20 if args.full else 5)
    known = policy_names()
    wanted = args.policies.split(",") if args.policies else ["ff", "mfi", "tc"]
    if args.full and not args.policies and "origamig" in known:
        wanted.append("origamig")
    rows = [speed(p, repeats, deterministic=True, hours=args.hours) for p in wanted if p in known]
    print(f"Speed: 128 PMs, {args.hours:g} simulated hours, load 0.85, seed 1 (median of {repeats})")
    print(f"{'policy':<10}{'requests':>9}{'events':>8}{'calls':>7}{'run s':>8}{'policy s':>10}"
          f"{'framework s':>13}{'µs/event':>10}")  # fmt: skip
    for r in rows:
        head = f"{r['policy']:<10}{r['requests']:>9}{r['events']:>8}{r['calls']:>7}{r['run_s']:>8.3f}"
        print(head + f"{r['policy_s']:>10.3f}{r['framework_s']:>13.3f}{r['framework_us_per_event']:>10.1f}")
        if r["call_phases_s"]:
            phases = ", ".join(f"{k} {v:.2f}" for k, v in sorted(r["call_phases_s"].items()))
            print(f"{'':<10}Work.phases_s (s): {phases}")
    ff = next((r for r in rows if r["policy"] == "ff"), None)
    if ff and args.hours == 120:
        verdict = "ok" if ff["run_s"] <= SPEED_TARGET_FF_S else "TOO SLOW"
        print(f"FF target ≤ {SPEED_TARGET_FF_S} s: {ff['run_s']:.3f} s ({verdict})")
    doc: dict[str, Any] = {"speed": rows}
    if not args.no_fidelity:
        fid = fidelity(seeds)
        doc["fidelity"] = {"seeds": seeds, "rows": fid}
        print(f"\nFidelity: FF, default setup, seeds 1..{seeds} (mean ± 95% CI)")
        print(f"{'load':>5} {'metric':<12}{'ours':>18}{'reading(100)':>14}{'paper':>8}  inside CI")
        for r in fid:
            scale = 100 if r["metric"] == "acceptance" else 1
            ours = f"{r['mean'] * scale:.2f} ± {r['ci95'] * scale:.2f}"
            print(f"{r['load']:>5} {r['metric']:<12}{ours:>18}{r['reading_100_seeds'] * scale:>14.2f}"
                  f"{r['paper'] * scale:>8.2f}  {r['reading_inside_ci']}")  # fmt: skip
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(doc, indent=1))
    print(f"\nwritten to {RESULTS}")


if __name__ == "__main__":
    main()
