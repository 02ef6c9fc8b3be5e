"""Across seeds: mean and 95% confidence interval (Student t), and policy differences paired by seed."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
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


@dataclass(frozen=True)
class MeanCi:
    """A metric over seeds: its mean, the half-width of its 95% Student-t interval (0 for one value),
    how many values and the values themselves; `mean` and `ci95` are None when there are none.

    In JSON (results files, findings, `simulate --json`): `{"mean", "ci95", "n", "values"}`."""

    mean: float | None
    ci95: float | None
    n: int
    values: tuple[float, ...]

    def to_json(self) -> dict[str, Any]:
        return {"mean": self.mean, "ci95": self.ci95, "n": self.n, "values": list(self.values)}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> MeanCi:
        """The record of a stored summary; other keys (a paired difference's `wins`) are not its own,
        a missing `values` reads as none and a missing `n` as their count."""
        values = tuple(float(v) for v in doc.get("values") or ())
        mean, ci95 = doc.get("mean"), doc.get("ci95")
        return cls(
            None if mean is None else float(mean),
            None if ci95 is None else float(ci95),
            int(doc.get("n", len(values))),
            values,
        )


def mean_ci(values: Iterable[float | None]) -> MeanCi:
    """Mean, half-width of the 95% CI (0 for one value), n, and the values (None skipped)."""
    xs = tuple(float(v) for v in values if v is not None)
    if not xs:
        return MeanCi(None, None, 0, ())
    mean = statistics.fmean(xs)
    half = t975(len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else 0.0
    return MeanCi(mean, half, len(xs), xs)


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


def _fleet(run: dict[str, Any]) -> dict[str, str]:
    """`{"fleet": label}` for a run on a fleet file or from a snapshot, else nothing."""
    label = fleet_label(run)
    return {"fleet": label} if label else {}


# Config fields that name a group on their own (variant, load) or cannot change a run's metrics.
_NOT_SETUP = frozenset({"variant", "load", "debug_check", "trace_dir"})


def setup_of(run: dict[str, Any]) -> dict[str, Any]:
    """What else a run's metrics depend on besides variant, load, policy and seed: data-center size,
    window, solver, determinism, requests file, policy options. Runs that differ here are never
    averaged together."""
    cfg = run.get("config", {})
    unset = {k for k in ("fleet", "snapshot") if cfg.get(k) is None}  # as in files from before fleets
    return {k: cfg[k] for k in sorted(cfg) if k not in _NOT_SETUP and k not in unset}


def _group_key(run: dict[str, Any]) -> tuple[str, float, str]:
    cfg = run.get("config", {})
    setup = json.dumps(setup_of(run), sort_keys=True, default=str)
    return (str(cfg.get("variant", "default")), float(cfg.get("load", 0.0)), setup)


def summarize(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (variant, load, setup, policy): every metric as mean ± CI over its seeds, in JSON
    (`MeanCi.to_json()`): the rows are the `summary` of a results document (`results.py`).

    Each row names its `pms` and full `setup` (see `setup_of`): runs of different sizes, windows or
    solvers are reported apart, never averaged."""
    groups: dict[tuple[str, float, str, str], list[dict[str, Any]]] = {}
    for run in runs:
        groups.setdefault((*_group_key(run), run["policy"]), []).append(run)
    out = []
    for (variant, load, _, policy), members in groups.items():
        metrics = {m: mean_ci(r["metrics"].get(m) for r in members).to_json() for m in METRIC_NAMES}
        seeds = sorted(r["seed"] for r in members)
        setup = setup_of(members[0])
        out.append(
            {
                "variant": variant,
                "load": load,
                "policy": policy,
                "seeds": seeds,
                "pms": setup.get("pms"),
                "setup": setup,
                "metrics": metrics,
                # The plans' duration, median and 95th percentile (means over the seeds), grouped.
                "plan_duration_s": {q: metrics[f"plan_duration_s_{q}"]["mean"] for q in ("p50", "p95")},
            }
            | _fleet(members[0])
        )
    return out


def paired(runs: Sequence[dict[str, Any]], baseline: str) -> list[dict[str, Any]]:
    """Per (variant, load, setup) and policy ≠ baseline: metric(policy) − metric(baseline) over
    common seeds, in JSON (`MeanCi.to_json()` and `wins`): the `paired` rows of a results document."""
    by_key: dict[tuple[str, float, str], dict[str, dict[int, dict[str, Any]]]] = {}
    setups: dict[tuple[str, float, str], dict[str, Any]] = {}
    for run in runs:
        key = _group_key(run)
        by_key.setdefault(key, {}).setdefault(run["policy"], {})[run["seed"]] = run["metrics"]
        setups.setdefault(key, setup_of(run))
    out = []
    for key, policies in by_key.items():
        variant, load, _ = key
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
                wins = sum(1 for d in diffs if d < 0)  # seeds where the policy's value is lower
                metrics[m] = mean_ci(diffs).to_json() | {"wins": wins}
            out.append(
                {
                    "variant": variant,
                    "load": load,
                    "policy": policy,
                    "baseline": baseline,
                    "seeds": common,
                    "pms": setups[key].get("pms"),
                    "setup": setups[key],
                    "metrics": metrics,
                }
                | _fleet({"config": setups[key]})
            )
    return out


def setup_labels(rows: Sequence[dict[str, Any]]) -> list[str]:
    """A short label per row naming the setup fields in which the rows differ ("" if they agree)."""
    keys = sorted({k for r in rows for k in r.get("setup", {})})
    varying = [k for k in keys if len({json.dumps(r.get("setup", {}).get(k), default=str) for r in rows}) > 1]
    varying = [k for k in varying if k != "pms"]
    return [", ".join(f"{k}={_short(r.get('setup', {}).get(k))}" for k in varying) for r in rows]


def _short(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{v}" for k, v in sorted(value.items())) + "}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
