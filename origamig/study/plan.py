"""Planning a set of simulation runs: `origamig simulate`'s policies × loads × seeds, each run's
configuration built and checked in one place (the command and `run_policy` alike)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from origamig.errors import UserError
from origamig.runtime.migration import MigrationModel
from origamig.sim.scenario import SimConfig, validate
from origamig.solver_registry import DEFAULT_BACKEND, backend_names
from origamig.study.runner import RunSpec


@dataclass(frozen=True)
class RunSetting:
    """What every run of a plan shares: the data center (`sim.scenario.data_center_fields`), the
    workload variant and windows, the solver and the policies' options."""

    hardware: Mapping[str, Any]
    warmup_s: float
    measure_s: float
    variant: str = "default"
    deterministic: bool = False
    solver: str = DEFAULT_BACKEND
    requests_file: str | None = None
    trace_dir: str | None = None
    debug_check: bool = False
    policy_options: tuple[tuple[str, Any], ...] = ()
    migration: tuple[tuple[str, Any], ...] = ()

    def config(self, load: float) -> SimConfig:
        return SimConfig(
            load=load,
            **self.hardware,
            variant=self.variant,
            warmup_s=self.warmup_s,
            measure_s=self.measure_s,
            deterministic=self.deterministic,
            solver=self.solver,
            requests_file=self.requests_file,
            trace_dir=self.trace_dir,
            debug_check=self.debug_check,
            policy_options=self.policy_options,
            migration=self.migration,
        )


def plan_runs(
    setting: RunSetting, policies: Sequence[str], loads: Sequence[float], seeds: Sequence[int]
) -> list[RunSpec]:
    """One run per load × policy × seed (in that order), every configuration checked; a `UserError`
    names every bad input (the command's option names)."""
    problems = []
    if setting.solver not in backend_names():
        problems.append(f"--solver: {setting.solver!r} is not one of {', '.join(backend_names())}")
    if not policies:
        problems.append("--policy: give at least one policy")
    if problems:
        raise UserError(problems)
    MigrationModel.of(setting.migration)  # a bad setting is refused before any run starts
    configs = [setting.config(load) for load in loads]
    for config in configs:
        validate(config)
    return [RunSpec(config, p, s) for config in configs for p in policies for s in seeds]
