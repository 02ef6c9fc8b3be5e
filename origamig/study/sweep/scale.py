"""How big a sweep is: PMs, simulated hours, seeds and OrigaMIG's call budget; the named scales."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from origamig.policies.optimizer.options import DEFAULT_ARRIVAL
from origamig.sim.fleet import Fleet
from origamig.sim.scenario import SimConfig
from origamig.sim.workload import HOUR


@dataclass(frozen=True)
class Scale:
    """How big a sweep is; `describe()` is printed and stored with the results."""

    name: str
    pms: int
    warmup_h: float
    measure_h: float
    seeds: tuple[int, ...]
    time_limit_s: float | None  # OrigaMIG's per-call wall-clock limit (None: no wall-clock effect)
    deterministic: bool  # True: calls take modeled time; with no time limit, only `work_limit` stops them
    work_limit: float | None = None
    threads: int | None = 1
    solver: str = "highs"  # OrigaMIG's BILP backend (`solver_registry`)
    fleet: Fleet | None = None  # a fleet file's data center and workload (`--fleet`); None: the paper's

    def config(self, **changes: Any) -> SimConfig:
        """The base configuration of this scale, with `changes` (load, variant, policy_options...)."""
        base = SimConfig(
            pms=self.pms,
            warmup_s=self.warmup_h * HOUR,
            measure_s=self.measure_h * HOUR,
            deterministic=self.deterministic,
            solver=self.solver,
            fleet=self.fleet,
        )
        return base.replace(**changes)

    def origamig_options(self, **overrides: Any) -> tuple[tuple[str, Any], ...]:
        """OrigaMIG's solver options at this scale (`overrides` win), as `SimConfig.policy_options`."""
        # The arrival rule is always named, so a cell's key says which rule it ran with.
        opts: dict[str, Any] = {
            "arrival": DEFAULT_ARRIVAL,
            "time_limit_s": self.time_limit_s,
            "threads": self.threads,
        }
        if self.work_limit is not None:
            opts["work_limit"] = self.work_limit
        opts.update(overrides)
        return tuple(sorted(opts.items()))

    def describe(self) -> str:
        budget = (
            f"deterministic, at most {self.work_limit:g} B&B nodes per call, no wall-clock limit"
            if self.deterministic and self.work_limit is not None and self.time_limit_s is None
            else f"{self.time_limit_s} s per call" + (", deterministic" if self.deterministic else "")
        )
        fleet = f" of fleet {self.fleet.name}" if self.fleet is not None else ""
        return (
            f"{self.name} scale: {self.pms} PMs{fleet}, "
            f"{self.warmup_h:g} h warm-up + {self.measure_h:g} h measured, "
            f"seeds {','.join(map(str, self.seeds))}; OrigaMIG calls: {self.solver}, {budget}, "
            f"{self.threads or 'all'} thread(s)"
        )


# Quick runs are reproducible: no wall-clock limit (a wall-clock guard on a loaded 2-core machine
# interrupted half of the calls in a first trial), a node budget that almost never binds instead.
QUICK = Scale("quick", pms=32, warmup_h=24, measure_h=24, seeds=(1, 2), time_limit_s=None,
              deterministic=True, work_limit=100)  # fmt: skip
# Full runs are the paper's size with the same reproducible call budget as quick runs: the results do
# not depend on the machine's load, so a sweep can run for days in the background, resume, and be
# recomputed exactly; call times are modeled from the work spent (docs/model.md#solvers).
FULL = Scale("full", pms=128, warmup_h=48, measure_h=72, seeds=(1, 2, 3, 4, 5), time_limit_s=None,
             deterministic=True, work_limit=100)  # fmt: skip
SMOKE = Scale("smoke", pms=8, warmup_h=2, measure_h=2, seeds=(1,), time_limit_s=None,
              deterministic=True, work_limit=20)  # fmt: skip
SCALES = {s.name: s for s in (QUICK, FULL, SMOKE)}
