"""One call's decision, shared by the OrigaMIG policy and `origamig solve` (docs/policies.md#decision).

A call optimizes a neighborhood — its PMs M̂ and the pending VMs it may admit — without touching the
state it reads:
1. the restricted BILP (`bilp.solve_region`) proposes a placement of the VMs of M̂ and the pending ones;
2. when some VM changes place, the executor orders the moves into a plan (`executor.plan_migrations`);
   when it finds none, the status is `plan_infeasible`;
3. the referee (`objective.evaluate`, Eq. 5 over M̂ and N̂, the VMs of M̂ plus the pending ones) scores
   the proposed and the current placement; the plan's parking moves cost δ_i each inside a PM and
   2δ_i between PMs (`parking_cost`, from the plan's typed moves);
4. the plan is applied only when proposed − parking cost − current exceeds `STRICTLY_BETTER`.
When nothing is applied, the status says whether that is known: `unchanged` when the solver proved
its answer optimal, `stopped_at_limit` when it stopped at a limit first (a better plan may exist),
`solver_error` when it failed (its answer is not used at all).
Everything outside the neighborhood keeps its place, so it adds the same constant to both sides:
the decision over M̂ and N̂ is the decision over the whole data center.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from origamig.bilp import Limits, NoGood, RegionSolution, solve_region
from origamig.bilp.backends.base import ERROR, INFEASIBLE
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import GiSlot, Placement, VmSpec, Weights
from origamig.judge.objective import ChangeRegion, Objective
from origamig.plan.executor import plan_migrations
from origamig.plan.steps import DEFAULT_BANDWIDTH_GBIT_S, Infeasible, Plan

STRICTLY_BETTER = 1e-6  # the gain in Eq. (5) units a plan must exceed to be applied


class Status(StrEnum):
    """What a call did: applied a strictly better plan, found nothing strictly better (with proof, or
    because the solver stopped at a limit first), found no valid plan, or the solver failed."""

    IMPROVED = "improved"  # applied, proved optimal or not (the solution says which)
    UNCHANGED = "unchanged"  # the proved optimum keeps every VM in place, or it is not strictly better
    STOPPED_AT_LIMIT = "stopped_at_limit"  # stopped at a time/work/gap limit without proof, nothing better
    SOLVER_ERROR = "solver_error"  # the solver failed; its answer is not used (reason in `reason`)
    PLAN_INFEASIBLE = "plan_infeasible"


@dataclass(frozen=True)
class Decision:
    """One decided call: the solver's answer, its plan, both sides of the referee and the status.

    `changed` holds the VMs the solution moves or admits, at their new place. `before`/`after` (Eq. 5
    over the neighborhood for the current and the proposed placement) are None unless a plan was found.
    """

    status: Status
    solution: RegionSolution
    changed: Mapping[str, Placement]
    plan: Plan | None = None
    before: Objective | None = None
    after: Objective | None = None
    parking_cost: float = 0.0
    reason: str = ""
    timings: Mapping[str, float] = field(default_factory=dict)  # build_s … decode_s, plan_s
    blocked: tuple[str, ...] = ()  # with PLAN_INFEASIBLE: the VMs whose moves could not be ordered
    no_goods: int = 0  # targets excluded because their moves had no valid order (then re-solved)

    @property
    def applied(self) -> bool:
        return self.status is Status.IMPROVED

    @property
    def gain(self) -> float | None:
        """Eq. (5) after − parking cost − Eq. (5) before (None when no plan was found)."""
        if self.before is None or self.after is None:
            return None
        return self.after.value - self.parking_cost - self.before.value


def parking_cost(plan: Plan, vms: Mapping[str, VmSpec], weights: Weights) -> float:
    """δ_i per parking move inside a PM, 2δ_i per parking move between PMs (`vms`: the running VMs)."""
    return sum(weights.delta(vms[m.vm]) * (2 if m.inter_pm else 1) for m in plan.moves if m.parking)


def referee(
    dc: DataCenter,
    pms: Sequence[int],
    pending: Sequence[str],
    changed: Mapping[str, Placement],
    weights: Weights,
) -> tuple[Objective, Objective]:
    """Eq. (5) over the neighborhood (PMs `pms`, their VMs and `pending`) now and after `changed`.
    Reads the neighborhood's VMs and `changed` only: its cost does not grow with the cluster."""
    region = ChangeRegion.of(dc, pms, (*pending, *changed))
    return region.evaluate({}, weights), region.evaluate(changed, weights)


def decide(
    dc: DataCenter,
    pms: Sequence[int],
    pending: Sequence[str],
    weights: Weights,
    solver: str = "highs",
    limits: Limits = Limits(),  # noqa: B008 — frozen record
    no_good_limit: int = 0,
    bandwidth_gbit_s: float = DEFAULT_BANDWIDTH_GBIT_S,
    *,
    bound_alongside: bool = False,
    gpu_order: bool = True,
    primal: bool = False,
    while_waiting: Callable[[], object] | None = None,
    deadline: float | None = None,
) -> Decision:
    """Solve the neighborhood (`pms`, `pending`), plan, referee, decide; never mutates `dc`.

    `bound_alongside`: the LP bound runs while the solver already solves (`bilp.solve_region`), for
    a process that waits for the answer (a one-shot `origamig solve`), not for a long-lived caller.
    `gpu_order`: the GIs of a VM that starts or moves to another PM are numbered in GPU order
    (`in_gpu_order`), so that its plan creates them GPU by GPU; off, the solver's order (the stored
    simulation results were made with it).
    `primal`: the fast primal answer is the solver's start (`bilp.solve_region`): where it is the
    call's optimum, a solver with a small budget has it from the first node. `while_waiting`: work
    of the caller's done while the solver works (`bilp.solve_region`). `deadline`: the
    `time.perf_counter()` instant by which every solve of the call ends (`bilp.solve_region`).

    When the solution's moves have no valid order, up to `no_good_limit` times: exclude it by a
    no-good cut on the VMs that could not be ordered (`bilp.nogood`) and solve again, so that an
    equally good (or the next best) reachable target is found. The simulator's calls keep 0."""
    cuts: list[NoGood] = []
    while True:
        raw = solve_region(
            dc,
            pms,
            pending,
            weights,
            solver,
            limits,
            no_goods=cuts,
            bound_alongside=bound_alongside,
            primal=primal,
            while_waiting=while_waiting,
            deadline=deadline,
        )
        sol = (
            replace(raw, target={v: _ordered(dc, v, pl) for v, pl in raw.target.items()})
            if gpu_order
            else raw
        )
        t_solved = time.perf_counter()
        decision = _judge(dc, pms, pending, weights, sol, bandwidth_gbit_s)
        timings = {**sol.timings, "plan_s": time.perf_counter() - t_solved}
        decision = replace(decision, timings=timings, no_goods=len(cuts))
        if decision.status is not Status.PLAN_INFEASIBLE or len(cuts) >= no_good_limit:
            return decision
        cuts.append(NoGood(dict(raw.target), decision.blocked or tuple(decision.changed)))


def _ordered(dc: DataCenter, v: str, pl: Placement) -> Placement:
    """`pl` in GPU order when VM `v` starts there or moves there from another PM (every GI is new)."""
    before = dc.placement.get(v)
    if before is not None and before.pm == pl.pm:
        return pl
    vm = dc.vms[v] if v in dc.vms else dc.pending[v]
    return Placement(pl.pm, in_gpu_order([p.name for p in vm.gis], pl.gis))


def in_gpu_order(names: Sequence[str], slots: tuple[GiSlot, ...]) -> tuple[GiSlot, ...]:
    """`slots` with the GIs of each profile name in GPU order (then start): GIs of one profile are
    interchangeable where every GI is new, and an 8-GI VM's GIs then list and start GPU by GPU."""
    out = list(slots)
    for name in dict.fromkeys(names):
        idx = [n for n, nm in enumerate(names) if nm == name]
        for n, slot in zip(idx, sorted((slots[n] for n in idx), key=lambda s: (s.gpu, s.start)), strict=True):
            out[n] = slot
    return tuple(out)


def _judge(
    dc: DataCenter,
    pms: Sequence[int],
    pending: Sequence[str],
    weights: Weights,
    sol: RegionSolution,
    bandwidth_gbit_s: float = DEFAULT_BANDWIDTH_GBIT_S,
) -> Decision:
    result = sol.result
    if result.termination in (ERROR, INFEASIBLE):  # the start is always feasible: "infeasible" is a failure
        why = result.reason or f"the solver ended with termination {result.termination!r}"
        return Decision(Status.SOLVER_ERROR, sol, {}, reason=why)
    not_better = Status.UNCHANGED if result.proved_optimal else Status.STOPPED_AT_LIMIT
    changed = dc.changes_to(sol.target)
    if not changed:
        return Decision(not_better, sol, changed, reason="the solution keeps every VM where it is")
    plan = plan_migrations(dc, changed, bandwidth_gbit_s=bandwidth_gbit_s)
    if isinstance(plan, Infeasible):
        return Decision(Status.PLAN_INFEASIBLE, sol, changed, reason=plan.reason, blocked=plan.blocked)
    before, after = referee(dc, pms, pending, changed, weights)
    cost = parking_cost(plan, dc.vms, weights)
    gain = after.value - cost - before.value
    status = Status.IMPROVED if gain > STRICTLY_BETTER else not_better
    return Decision(
        status, sol, changed, plan, before, after, cost, f"gain {gain:.3g} after a parking cost of {cost:g}"
    )
