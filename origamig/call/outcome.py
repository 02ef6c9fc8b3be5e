"""What `origamig solve` reports, an `Outcome`, and its `--json` document (docs/formats.md#solve-document)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from origamig.bilp import RegionSolution
from origamig.call import reasons
from origamig.call.decision import Status
from origamig.call.goals import DEFAULT_GOAL, Goal
from origamig.call.kinds import ScopeMode
from origamig.call.solve_time import SolveTime
from origamig.call.successive import Call
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, PmSpec
from origamig.judge.objective import Objective
from origamig.plan.explain import MoveNote
from origamig.plan.steps import Plan
from origamig.snapshot.document import placement_json


@dataclass(frozen=True)
class SolveScope:
    """The PMs and pending VMs the calls optimized, and how they were chosen."""

    mode: ScopeMode
    pms: tuple[int, ...]
    pending: tuple[str, ...]
    rejected: tuple[str, ...] = ()  # pending VMs Algorithm 1 rejects outright (fit no PM by counts)
    note: str = ""


@dataclass(frozen=True)
class Outcome:
    """What `origamig solve` reports; `to_json()` is the solve document (docs/formats.md#solve-document).

    The objectives cover the whole snapshot, under the weights the goal reports with
    (`goals.CallWeights.consolidation`): the calls judge their neighborhoods only, and the rest adds
    the same constant to both sides.
    """

    status: Status
    scope: SolveScope
    admitted: tuple[str, ...]
    rejected: tuple[str, ...]
    waiting: tuple[str, ...]
    before: Objective
    after: Objective  # of the output state
    proposed: Objective | None  # of the calls' end state (of the first solution when none applied)
    parking_cost: float
    solution: RegionSolution | None  # the first call's
    plan: Plan | None
    infeasible_reason: str | None
    placement: Mapping[str, Placement]  # the output state (every running VM)
    pms_out: tuple[PmSpec, ...]  # PMs with `powered_off` as after the plan
    start_state: DataCenter = field(repr=False, compare=False)  # the snapshot's
    end_state: DataCenter = field(repr=False, compare=False)  # after the plan
    reasons: Mapping[str, str] = field(default_factory=dict)  # why each rejected or waiting VM is so
    note: str = ""  # the status in one sentence (what happened, and what it means for the state)
    moves: tuple[MoveNote, ...] = ()  # each migrate/start of the plan: from where to where, and why
    calls: tuple[Call, ...] = ()  # the calls made, in order
    goal: Goal = DEFAULT_GOAL
    dropped: tuple[str, ...] = ()  # VMs whose moves the calls made and nobody needed (put back)
    direct: bool = True  # the plan was made in one go (else: the calls' plans one after another)
    time: SolveTime | None = None  # how the wall time was spent

    @property
    def gain(self) -> float:
        return (self.after.value - self.parking_cost - self.before.value) if self.plan else 0.0

    def to_json(self) -> dict[str, Any]:
        """The `solve --json` document (docs/formats.md#solve-document)."""
        return solve_document(self)


def solve_document(out: Outcome) -> dict[str, Any]:
    """The document: status, admitted/rejected/waiting, objective, solver, plan, plan_cost,
    plan_infeasible_reason, placement, neighborhood, calls and time."""
    solver = _calls_solver_json(out.calls) if len(out.calls) > 1 else _solver_json(out.solution)
    return {
        "status": out.status,
        "status_reason": out.note,
        "goal": out.goal,
        "admitted": list(out.admitted),
        "rejected": list(out.rejected),
        "waiting": list(out.waiting),
        "rejected_reasons": {v: out.reasons[v] for v in out.rejected},
        "waiting_reasons": {v: out.reasons[v] for v in out.waiting},
        "objective": {
            "before": _num(out.before.value),
            "after": _num(out.after.value),
            "terms_before": {k: _num(v) for k, v in out.before.as_dict().items()},
            "terms_after": {k: _num(v) for k, v in out.after.as_dict().items()},
            "proposed": _num(out.proposed.value) if out.proposed else None,
            "parking_cost": _num(out.parking_cost),
            "gain": _num(out.gain),
        },
        "solver": solver,
        "plan": out.plan.to_json() if out.plan else [],
        "moves": [m.to_dict() for m in out.moves],
        "dropped_moves": list(out.dropped),
        "plan_cost": out.plan.cost.to_dict() if out.plan else None,
        "plan_infeasible_reason": out.infeasible_reason,
        "placement": placement_json(out.pms_out, out.placement),
        "neighborhood": {
            "mode": out.scope.mode,
            "pms": [out.pms_out[j].id for j in out.scope.pms],
            "pending": list(out.scope.pending),
            "note": out.scope.note,
        },
        "calls": [_call_json(out.pms_out, c) for c in out.calls],
        "time": out.time.to_json() if out.time is not None else None,
    }


def _solver_json(sol: RegionSolution | None) -> dict[str, Any]:
    """The `solver` object of one call (docs/formats.md#solve-document)."""
    res = sol.result if sol else None
    out: dict[str, Any] = {
        "name": res.solver if res else None,
        "termination": res.termination if res else "not_run",
        "proved_optimal": bool(res and res.proved_optimal),
        "objective": _num(res.objective) if res else None,
        "bound": _num(res.bound) if res else None,
        "gap": res.gap if res else None,
        "wall_s": res.wall_s if res else 0.0,
        "stopped_at_limit": bool(res and res.termination in reasons.STOPPED_AT),
        "guard": res.guard if res else "",
        "reason": res.reason if res else "",
        "winner": res.winner if res else "",
    }
    if sol:
        out |= {"timings": sol.timings, "work": sol.work, "size": sol.size}
    return out


def _calls_solver_json(calls: tuple[Call, ...]) -> dict[str, Any]:
    """The `solver` object over several calls: proved optimal when every call was; the first
    unproved call's termination; wall time summed; objective, bound and gap are per call (`calls`)."""
    results = [c.decision.solution.result for c in calls]
    unproved = [r for r in results if not r.proved_optimal]
    first = unproved[0] if unproved else results[0]
    return {
        "name": first.solver,
        "termination": first.termination,
        "proved_optimal": not unproved,
        "objective": None,
        "bound": None,
        "gap": None,
        "wall_s": sum(r.wall_s for r in results),
        "stopped_at_limit": any(r.termination in reasons.STOPPED_AT for r in results),
        "guard": first.guard,
        "reason": first.reason,
        "winner": ",".join(sorted({r.winner for r in results if r.winner})),
    }


def _call_json(pms: tuple[PmSpec, ...], call: Call) -> dict[str, Any]:
    """One entry of `calls`: its neighborhood, what it decided and its solver."""
    nb, d = call.neighborhood, call.decision
    return {
        "kind": nb.kind,
        "gpu_class": nb.gpu_class,
        "pms": [pms[j].id for j in nb.pms],
        "pending": list(nb.pending),
        "admitted": list(call.admitted),
        "status": d.status,
        "reason": d.reason,
        "no_goods": d.no_goods,
        "solver": _solver_json(d.solution),
    }


def _num(x: float | None) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return int(x) if float(x).is_integer() else x
