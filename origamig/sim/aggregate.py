"""Across seeds: mean and 95% confidence interval (Student t), and policy differences paired by seed."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from origamig.sim.metrics import METRIC_NAMES

# Two-sided 95% quantiles t_{0.975, df} for df = 1..30 (standard tables).
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t975(df: int) -> float:
    """The 0.975 quantile of Student's t with `df` degrees of freedom (Cornish–Fisher beyond 30)."""
    if df < 1:
        return math.nan
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959964
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def mean_ci(values: Iterable[float | None]) -> dict[str, Any]:
    """Mean, half-width of the 95% CI (0 for one value), n, and the values (None skipped)."""
    xs = [float(v) for v in values if v is not None]
    if not xs:
        return {"mean": None, "ci95": None, "n": 0, "values": []}
    mean = statistics.fmean(xs)
    half = t975(len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else 0.0
    return {"mean": mean, "ci95": half, "n": len(xs), "values": xs}


def fleet_label(run: dict[str, Any]) -> str | None:
    """The data center a run simulated when it is not the variant's: its fleet's name, or
    `from <snapshot file>`; None for the variant's own hardware."""
    cfg = run.get("config", {})
    fleet = cfg.get("fleet")
    if isinstance(fleet, dict) and fleet.get("name"):
        return str(fleet["name"])
    if cfg.get("snapshot"):
        return f"from {Path(str(cfg['snapshot'])).name}"
    return None


def _group_key(run: dict[str, Any]) -> tuple[str, float, str | None]:
    cfg = run.get("config", {})
    return (str(cfg.get("variant", "default")), float(cfg.get("load", 0.0)), fleet_label(run))


def summarize(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (variant, load, fleet, policy): every metric as mean ± CI over its seeds."""
    groups: dict[tuple[str, float, str | None, str], list[dict[str, Any]]] = {}
    for run in runs:
        groups.setdefault((*_group_key(run), run["policy"]), []).append(run)
    out = []
    for (variant, load, fleet, policy), members in groups.items():
        metrics = {m: mean_ci(r["metrics"].get(m) for r in members) for m in METRIC_NAMES}
        seeds = sorted(r["seed"] for r in members)
        row = {"variant": variant, "load": load, "policy": policy, "seeds": seeds, "metrics": metrics}
        out.append(row | ({"fleet": fleet} if fleet is not None else {}))
    return out


def paired(runs: Sequence[dict[str, Any]], baseline: str) -> list[dict[str, Any]]:
    """Per (variant, load) and policy ≠ baseline: metric(policy) − metric(baseline) over common seeds."""
    by_key: dict[tuple[str, float, str | None], dict[str, dict[int, dict[str, Any]]]] = {}
    for run in runs:
        by_key.setdefault(_group_key(run), {}).setdefault(run["policy"], {})[run["seed"]] = run["metrics"]
    out = []
    for (variant, load, fleet), policies in by_key.items():
        base = policies.get(baseline)
        if base is None:
            continue
        for policy, seeds in policies.items():
            if policy == baseline:
                continue
            common = sorted(set(seeds) & set(base))
            metrics = {}
            for m in METRIC_NAMES:
                diffs = [
                    seeds[s][m] - base[s][m]
                    for s in common
                    if seeds[s].get(m) is not None and base[s].get(m) is not None
                ]
                stats = mean_ci(diffs)
                stats["wins"] = sum(1 for d in diffs if d < 0)  # seeds where the policy's value is lower
                metrics[m] = stats
            row = {
                "variant": variant,
                "load": load,
                "policy": policy,
                "baseline": baseline,
                "seeds": common,
                "metrics": metrics,
            }
            out.append(row | ({"fleet": fleet} if fleet is not None else {}))
    return out
