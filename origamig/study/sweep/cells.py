"""The cells of a sweep — (row, column, policy, configuration, seed) — and what identifies them."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any

from origamig.policies.optimizer.options import EXECUTION_ONLY
from origamig.sim.scenario import SimConfig
from origamig.study.aggregate import MeanCi
from origamig.study.runner import RunSpec


@dataclass(frozen=True)
class Cell:
    """One run of a sweep: the row it belongs to, its column (load/variant/""), and what to run."""

    row: str
    col: str
    policy: str
    config: SimConfig
    seed: int

    def spec(self) -> RunSpec:
        return RunSpec(self.config, self.policy, self.seed)

    @property
    def key(self) -> str:
        return cell_key(self.row, self.col, self.policy, self.seed, self.config)


def cell_key(row: str, col: str, policy: str, seed: int, config: SimConfig) -> str:
    """What identifies a run in a results file: row, column, policy, seed and a fingerprint of the
    whole configuration (scale, load, variant, options), so a changed setting never reuses it. The
    folder a trace is read from is not a setting (a copy of the trace elsewhere keeps the key), nor
    are options that change only how the run is carried out (`EXECUTION_ONLY`: solve_workers)."""
    options = tuple(kv for kv in config.policy_options if kv[0] not in EXECUTION_ONLY)
    settings = dataclasses.asdict(config) | {"trace_dir": None, "policy_options": options}
    fields = json.dumps(json_value(without_unset_hardware(settings)), sort_keys=True, default=str)
    digest = hashlib.sha1(fields.encode()).hexdigest()[:12]
    return f"{row}|{col}|{policy}|{seed}|{digest}"


def without_unset_hardware(fields: dict[str, Any]) -> dict[str, Any]:
    """`fields` without an unset `fleet` / `snapshot`: a run on the paper's data center keeps the
    fingerprint it had before fleets existed, so stored sweeps resume."""
    return {k: v for k, v in fields.items() if not (k in ("fleet", "snapshot") and v is None)}


def json_value(x: Any) -> Any:
    """`x` as a JSON file gives it back: NaN/inf become None, tuples lists, keys strings, a `MeanCi`
    its `to_json()` (the findings a sweep script writes hold them)."""
    if isinstance(x, MeanCi):
        return json_value(x.to_json())
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {str(k): json_value(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_value(v) for v in x]
    return x
