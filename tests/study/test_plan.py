"""Run planning (`study/plan.py`): one run per load × policy × seed in that order, every input
checked before any run starts, every problem named at once."""

from __future__ import annotations

import pytest

from origamig.errors import UserError
from origamig.sim.scenario import data_center_fields
from origamig.study.plan import RunSetting, plan_runs

SETTING = RunSetting(data_center_fields(16, None, None), warmup_s=3600.0, measure_s=3600.0)


def test_runs_go_load_by_load_then_policy_then_seed() -> None:
    runs = plan_runs(SETTING, ["ff", "tc"], [0.5, 0.85], [1, 2])
    assert [(r.config.load, r.policy, r.seed) for r in runs] == [
        (load, policy, seed) for load in (0.5, 0.85) for policy in ("ff", "tc") for seed in (1, 2)
    ]
    assert {r.config.pms for r in runs} == {16}


def test_every_bad_input_is_named_before_any_run() -> None:
    bad = RunSetting(SETTING.hardware, 3600.0, 3600.0, solver="gurobi")
    with pytest.raises(UserError) as caught:
        plan_runs(bad, [], [0.85], [1])
    solver, policy = caught.value.problems
    assert solver.startswith("--solver: 'gurobi' is not one of highs")
    assert policy == "--policy: give at least one policy"
    with pytest.raises(UserError, match="--load"):
        plan_runs(SETTING, ["ff"], [0.0], [1])
