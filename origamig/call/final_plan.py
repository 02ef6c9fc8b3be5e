"""One plan for the end state of several calls, with no move that nobody needs (docs/solving.md#one-plan).

Each call plans its own moves from the state the previous one left, so the calls' plans run one
after another could start a VM and later move it, or move one VM twice. `final_plan` plans the way
from the starting state to the calls' end state in one go instead (`executor.plan_migrations`:
every VM moves or starts once, straight to its place, unless a parking cycle needs a second move),
and falls back on the calls' chained plans only when no direct order exists.

Then it drops the moves nobody needs: a running VM that moves is put back where it was whenever the
end state stays valid, every admitted VM stays admitted, a plan still exists, and Eq. (5) under the
goal's `weights`, less the plan's parking cost, does not fall. It tries the VMs that copy the most
first and repeats until no move can be dropped, so that no move of the returned plan can be dropped
alone. Cost: one plan per moved VM per pass (passes end when nothing more is dropped).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from origamig.call.decision import STRICTLY_BETTER, parking_cost
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, Weights
from origamig.errors import PlacementError
from origamig.judge.objective import ChangeRegion
from origamig.plan.executor import chain_plans, plan_migrations
from origamig.plan.steps import DEFAULT_BANDWIDTH_GBIT_S, Infeasible, Plan, move_bytes


@dataclass(frozen=True)
class FinalPlan:
    """The moves of several calls as one plan: its target (the VMs it moves or starts, at their new
    place), the plan, whether it was planned in one go (`direct`) and the VMs whose moves were dropped."""

    target: Mapping[str, Placement]
    plan: Plan
    direct: bool
    dropped: tuple[str, ...] = ()


def final_plan(
    start: DataCenter,
    end: DataCenter,
    call_plans: Sequence[Plan],
    weights: Weights,
    bandwidth_gbit_s: float = DEFAULT_BANDWIDTH_GBIT_S,
) -> FinalPlan:
    """The plan from `start` to `end` (the state the calls ended in; `call_plans` are theirs, in order),
    its moves that nobody needs dropped."""
    target = start.changes_to(end.placement)
    plan = plan_migrations(start, target, bandwidth_gbit_s=bandwidth_gbit_s)
    if isinstance(plan, Infeasible):  # no order in one go: the calls' own plans, one after another
        return FinalPlan(target, chain_plans(start, call_plans, end), direct=False)
    return _drop_unneeded(start, target, plan, weights, bandwidth_gbit_s)


def _drop_unneeded(
    start: DataCenter, target: dict[str, Placement], plan: Plan, weights: Weights, bandwidth: float
) -> FinalPlan:
    region = ChangeRegion.around(start, target)
    score = _value(region, target, plan, weights)
    dropped: list[str] = []
    while True:
        moved = sorted(
            (v for v in target if v in start.placement),
            key=lambda v: (-move_bytes(start.vms[v]), v),
        )
        for v in moved:
            trial = {u: pl for u, pl in target.items() if u != v}
            trial_plan = _plan(start, trial, bandwidth)
            if trial_plan is None:
                continue
            value = _value(region, trial, trial_plan, weights)
            if value >= score - STRICTLY_BETTER:
                target, plan, score = trial, trial_plan, value
                dropped.append(v)
                break
        else:
            return FinalPlan(target, plan, direct=True, dropped=tuple(dropped))


def _plan(start: DataCenter, target: Mapping[str, Placement], bandwidth: float) -> Plan | None:
    """The plan to `target`, or None when `target` is no valid end state or has no valid order."""
    try:
        plan = plan_migrations(start, target, bandwidth_gbit_s=bandwidth)
    except PlacementError:
        return None
    return None if isinstance(plan, Infeasible) else plan


def _value(region: ChangeRegion, target: Mapping[str, Placement], plan: Plan, weights: Weights) -> float:
    """Eq. (5) of the region with `target` applied, relative to the start, less the plan's parking
    cost (up to the constant of the servers and VMs outside the region)."""
    return region.evaluate(target, weights).value - parking_cost(plan, region.dc.vms, weights)
