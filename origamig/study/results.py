"""The results document of `origamig simulate` (JSON) and reading it back for `origamig report`.

    {"version": 1,
     "runs":    [{"policy", "seed", "config": {...}, "metrics": {name: value}, "counters", "events",
                  "requests", "calls", "wall_s", "cpu_s", "call_stats_s"}],
     "summary": [{"variant", "load", "policy", "seeds", "metrics": {name: {"mean", "ci95", "n", "values"}}}],
     "paired":  [{"variant", "load", "policy", "baseline", "seeds",
                  "metrics": {name: {"mean", "ci95", "n", "values", "wins"}}}]}

Metric names are those of docs/simulator.md#metrics (`metrics.METRIC_NAMES`); `ci95` is the half-width of the
95% Student-t interval over seeds; paired entries are policy − baseline by seed (`wins`: seeds where it is
lower).
Runs on a fleet file or from a snapshot are grouped apart: their rows carry `"fleet"` (the fleet's
name, or `from <snapshot file>`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from origamig.errors import UserError
from origamig.files import parse_json_text
from origamig.sim.engine import RunResult
from origamig.study.aggregate import paired, setup_of, summarize

VERSION = 1


class ResultsError(UserError):
    """A results file that cannot be read."""


def document(results: Sequence[RunResult], baseline: str | None = None) -> dict[str, Any]:
    runs = [dataclasses.asdict(r) for r in results]
    return runs_document(runs, baseline)


def runs_document(runs: list[dict[str, Any]], baseline: str | None = None) -> dict[str, Any]:
    policies = list(dict.fromkeys(r["policy"] for r in runs))
    base = baseline or ("ff" if "ff" in policies else (policies[0] if policies else None))
    return {
        "version": VERSION,
        "runs": runs,
        "summary": summarize(runs),
        "paired": paired(runs, base) if base else [],
    }


def load_runs(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """The runs of every results file (a later duplicate of (policy, variant, load, seed, setup) wins)."""
    merged: dict[tuple[Any, ...], dict[str, Any]] = {}
    for path in paths:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ResultsError(f"{path}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ResultsError(f"{path}: cannot read ({exc.__class__.__name__}: {exc})") from None
        data = parse_json_text(text, str(path), ResultsError)
        runs = data.get("runs") if isinstance(data, dict) else None
        if not isinstance(runs, list):
            raise ResultsError(f"{path}: runs: missing (not an `origamig simulate` results file)")
        for n, run in enumerate(runs):
            if not isinstance(run, dict) or not {"policy", "seed", "metrics"} <= set(run):
                raise ResultsError(f"{path}: runs[{n}]: needs policy, seed and metrics")
            cfg = run.get("config", {})
            if not isinstance(cfg, dict):
                raise ResultsError(f"{path}: runs[{n}].config: expected an object")
            setup = json.dumps(setup_of(run), sort_keys=True, default=str)
            key = (run["policy"], cfg.get("variant"), cfg.get("load"), run["seed"], setup)
            merged[key] = run
    return list(merged.values())
