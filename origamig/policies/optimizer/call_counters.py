"""The OrigaMIG policy's counters (`Policy.counters`): its calls by kind, their wall times and phases,
their terminations and outcomes, and what applied calls admitted, rejected and moved."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from typing import Any

from origamig.policies.base import Work
from origamig.policies.optimizer.call_work import PHASES


class CallCounters:
    """Counts the calls of one policy as they start and finish."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.wall: list[float] = []
        self.phase: defaultdict[str, float] = defaultdict(float)  # seconds per phase of the calls
        self.count: Counter[str] = Counter()
        self.status: Counter[str] = Counter()

    def started(self, kind: str, work: Work) -> None:
        """Count a call of `kind` as it starts with its outcome `work`."""
        assert work.call is not None
        self.calls[kind] += 1
        self.wall.append(work.wall_s)
        for phase in PHASES:
            self.phase[phase] += work.phases_s.get(phase, 0.0)
        if "primal_s" in work.phases_s:  # only with the `primal` option: other runs keep their counters
            self.phase["primal_s"] += work.phases_s["primal_s"]
        self.status[work.call.termination] += 1
        self.status[f"outcome_{work.call.outcome}"] += 1

    def finished(self, work: Work) -> None:
        """Count what a call that ended admitted, rejected and (applied) moved."""
        self.count["admitted"] += len(work.admitted)
        self.count["rejected"] += len(work.rejected)
        if work.applied and work.plan is not None:
            cost = work.plan.cost
            self.count["migrations"] += cost.migrations_intra + cost.migrations_inter
            self.count["parking"] += cost.parking_intra + cost.parking_inter
            self.count["bytes"] += cost.bytes

    def report(self) -> dict[str, float]:
        """The counters by name, as `Policy.counters` returns them."""
        out: dict[str, Any] = {f"calls_{k}": v for k, v in self.calls.items()}
        out["calls"] = sum(v for k, v in self.calls.items() if k not in ("consolidation_skipped", "reused"))
        out["median_call_s"] = statistics.median(self.wall) if self.wall else 0.0
        out["time_longest_call_s"] = max(self.wall, default=0.0)  # wall clock: how near the safety net
        out.update({f"time_{k}": v for k, v in self.phase.items()})
        out.update({f"status_{k}": v for k, v in self.status.items()})
        out.update(self.count)
        return out
