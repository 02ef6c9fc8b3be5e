"""One OrigaMIG call: restricted BILP → migration plan → decision rule (paper §5.3–5.4, SPEC §3).

The call decides on the current state without touching it. It evaluates Eq. (5) over M̂ and N̂ for
the solver's placement and for the current one with the same referee, subtracts δ_i per parking
move inside a PM and 2δ_i per parking move between PMs, and applies only if strictly better.
Pending VMs of the call that are not admitted by an applied plan are rejected.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from origamig.bilp import Limits, solve_region
from origamig.datacenter import DataCenter
from origamig.executor import Infeasible, plan_migrations
from origamig.neighborhood import Neighborhood
from origamig.objective import Objective, evaluate
from origamig.policies.base import Work
from origamig.records import Placement, Weights

EPSILON = 1e-6  # "strictly better" tolerance on Eq. (5)


@dataclass(frozen=True)
class Decision:
    """Both sides of the decision rule, for reports and tests."""

    before: Objective
    after: Objective
    parking_cost: float

    @property
    def gain(self) -> float:
        return self.after.value - self.parking_cost - self.before.value

    @property
    def apply(self) -> bool:
        return self.gain > EPSILON


def parking_cost(plan_steps: list[dict], dc: DataCenter, weights: Weights) -> float:
    """δ_i per parking move inside a PM, 2δ_i per parking move between PMs (SPEC §3)."""
    cost = 0.0
    for step in plan_steps:
        if step.get("op") == "migrate" and step.get("parking"):
            delta = weights.delta(dc.vms[step["vm"]])
            cost += delta if step["from"] == step["to"] else 2 * delta
    return cost


def decide(
    dc: DataCenter,
    nb: Neighborhood,
    target: Mapping[str, Placement],
    weights: Weights,
    plan_steps: list[dict],
) -> Decision:
    """Evaluate current vs new placement on (M̂, N̂) with the referee."""
    region_vms = [v for j in nb.pms for v in dc.vms_on(j)] + list(nb.pending)
    vms = {**dc.vms, **{v: dc.pending[v] for v in nb.pending}}
    new = {**dc.placement, **target}
    before = evaluate(dc.pms, vms, dc.placement, dc.placement, weights, nb.pms, region_vms)
    after = evaluate(dc.pms, vms, new, dc.placement, weights, nb.pms, region_vms)
    return Decision(before, after, parking_cost(plan_steps, dc, weights))


def run_call(
    dc: DataCenter, nb: Neighborhood, weights: Weights, solver: str, limits: Limits, select_s: float = 0.0
) -> Work:
    """Solve the restricted BILP of `nb`, plan, decide; return the Work for the simulator to apply."""
    t0 = time.perf_counter()
    sol = solve_region(dc, nb.pms, nb.pending, weights, solver=solver, limits=limits)
    t_solved = time.perf_counter()
    changed = {v: pl for v, pl in sol.target.items() if dc.placement.get(v) != pl}
    stats: dict[str, object] = {
        "select_s": select_s,
        **sol.timings,
        "termination": sol.result.termination,
        "proved_optimal": sol.result.proved_optimal,
        "gpu_class": nb.gpu_class,
        "pms": len(nb.pms),
        "vms": nb.vm_count(dc),
    }
    plan = None
    applied = False
    outcome, reason = "no_change", "the solution keeps every VM where it is"
    if changed:
        plan = plan_migrations(dc, changed)
        if isinstance(plan, Infeasible):
            outcome, reason = "plan_infeasible", plan.reason
            plan = None
        else:
            decision = decide(dc, nb, changed, weights, plan.to_json())
            applied = decision.apply
            outcome = "applied" if applied else "not_better"
            reason = f"gain {decision.gain:.3g} after a parking cost of {decision.parking_cost:g}"
            stats["gain"] = decision.gain
    stats["plan_s"] = time.perf_counter() - t_solved
    stats["outcome"] = outcome  # applied | not_better | plan_infeasible | no_change
    stats["outcome_detail"] = reason
    admitted = tuple(v for v in nb.pending if v in changed) if applied else ()
    rejected = tuple(v for v in nb.pending if v not in admitted) + nb.rejected
    wall = select_s + (time.perf_counter() - t0)
    return Work(
        kind=nb.kind,
        pms=frozenset(nb.pms),
        target=changed if applied else {},
        admitted=admitted,
        rejected=rejected,
        plan=plan if applied else None,
        wall_s=wall,
        modeled_s=sol.modeled_s,
        applied=applied,
        stats=stats,
    )
