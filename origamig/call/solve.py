"""`origamig solve` as a library call: choose the neighborhood, decide, report the outcome.

The decision is the one every OrigaMIG call makes (`decision.decide`, docs/policies.md#decision):
restricted BILP, plan, and Eq. (5) of the solver's placement minus the plan's parking cost must beat
Eq. (5) of the current placement strictly, else nothing changes. The outcome reports Eq. (5) over the
whole snapshot (the part outside the neighborhood adds the same constant to both sides). Its
`placement` is the state after the plan — the input state when the status is `unchanged` or
`plan_infeasible` — and it is checked by the independent checker before it is returned.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from origamig.bilp import Limits, RegionSolution, SolveResult
from origamig.bilp.backends.base import GAP_LIMIT, GUARD_KILLED, INTERRUPTED, TIME_LIMIT, WORK_LIMIT
from origamig.call.decision import Decision, Status, decide
from origamig.call.neighborhood import Bounds, derived_bounds, select_admission, select_consolidation
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, PmSpec, Weights
from origamig.errors import UserError
from origamig.judge.check import check_placement
from origamig.judge.fit import no_fit_reason
from origamig.judge.objective import Objective, evaluate
from origamig.plan.explain import MoveNote, explain
from origamig.plan.steps import Plan, PowerOff
from origamig.snapshot.document import Snapshot, placement_json, snapshot_document


class NeighborhoodError(UserError):
    """A `--neighborhood` value that names no PM of the snapshot."""


@dataclass(frozen=True)
class SolveScope:
    """The PMs and pending VMs one solve optimizes, and how they were chosen."""

    mode: str  # all | auto | list
    pms: tuple[int, ...]
    pending: tuple[str, ...]
    rejected: tuple[str, ...] = ()  # pending VMs Algorithm 1 rejects outright (fit no PM even empty)
    note: str = ""


@dataclass(frozen=True)
class Outcome:
    """What `origamig solve` reports; `to_json()` is the solve document (docs/formats.md#solve-document).

    The objectives here cover the whole snapshot (`decision` judges the neighborhood only; the rest
    adds the same constant to both sides), so `gain` is the decision's gain.
    """

    status: Status
    scope: SolveScope
    admitted: tuple[str, ...]
    rejected: tuple[str, ...]
    waiting: tuple[str, ...]  # pending VMs outside this call (auto neighborhoods)
    before: Objective
    after: Objective  # of the output state
    proposed: Objective | None  # of the solver's placement
    parking_cost: float
    solution: RegionSolution | None
    plan: Plan | None
    infeasible_reason: str | None
    placement: Mapping[str, Placement]  # the output state (every running VM)
    pms_out: tuple[PmSpec, ...]  # PMs with `powered_off` as after the plan
    reasons: Mapping[str, str] = field(default_factory=dict)  # why each rejected or waiting VM is so
    note: str = ""  # the status in one sentence (what happened, and what it means for the state)
    moves: tuple[MoveNote, ...] = ()  # each migrate/start of the plan: from where to where, and why

    @property
    def gain(self) -> float:
        return (self.proposed.value - self.parking_cost - self.before.value) if self.proposed else 0.0

    def to_json(self) -> dict[str, Any]:
        """The `solve --json` document: status, admitted/rejected/waiting, objective, solver, plan,
        plan_cost, plan_infeasible_reason, placement and neighborhood."""
        res = self.solution.result if self.solution else None
        solver: dict[str, Any] = {
            "name": res.solver if res else None,
            "termination": res.termination if res else "not_run",
            "proved_optimal": bool(res and res.proved_optimal),
            "objective": _num(res.objective) if res else None,
            "bound": _num(res.bound) if res else None,
            "gap": res.gap if res else None,
            "wall_s": res.wall_s if res else 0.0,
            "stopped_at_limit": bool(res and res.termination in STOPPED_AT),
            "guard": res.guard if res else "",
            "reason": res.reason if res else "",
        }
        if self.solution:
            solver |= {
                "timings": self.solution.timings,
                "work": self.solution.work,
                "size": self.solution.size,
            }
        return {
            "status": self.status,
            "status_reason": self.note,
            "admitted": list(self.admitted),
            "rejected": list(self.rejected),
            "waiting": list(self.waiting),
            "rejected_reasons": {v: self.reasons[v] for v in self.rejected},
            "waiting_reasons": {v: self.reasons[v] for v in self.waiting},
            "objective": {
                "before": _num(self.before.value),
                "after": _num(self.after.value),
                "terms_before": {k: _num(v) for k, v in self.before.as_dict().items()},
                "terms_after": {k: _num(v) for k, v in self.after.as_dict().items()},
                "proposed": _num(self.proposed.value) if self.proposed else None,
                "parking_cost": _num(self.parking_cost),
                "gain": _num(self.gain),
            },
            "solver": solver,
            "plan": self.plan.to_json() if self.plan else [],
            "moves": [m.to_dict() for m in self.moves],
            "plan_cost": self.plan.cost.to_dict() if self.plan else None,
            "plan_infeasible_reason": self.infeasible_reason,
            "placement": placement_json(self.pms_out, self.placement),
            "neighborhood": {
                "mode": self.scope.mode,
                "pms": [self.pms_out[j].id for j in self.scope.pms],
                "pending": list(self.scope.pending),
                "note": self.scope.note,
            },
        }


def choose_scope(dc: DataCenter, spec: str, weights: Weights) -> SolveScope:
    """`all`, `auto` (Algorithm 1: admission if VMs are pending, else consolidation of the class
    with the largest Γ_h ≥ 1) or a comma-separated list of PM ids."""
    pending = tuple(dc.pending)
    if spec == "all":
        return SolveScope("all", tuple(range(len(dc.pms))), pending)
    if spec == "auto":
        return _auto_scope(dc, weights)
    ids = [s.strip() for s in spec.split(",") if s.strip()]
    unknown = [s for s in ids if s not in dc.index]
    if unknown or not ids:
        known = ", ".join(p.id for p in dc.pms[:8]) + (", ..." if len(dc.pms) > 8 else "")
        raise NeighborhoodError(
            [f"--neighborhood: {s!r} is not a PM id (PMs: {known})" for s in unknown]
            or ["--neighborhood: give auto, all, or a comma-separated list of PM ids"]
        )
    return SolveScope("list", tuple(dict.fromkeys(dc.index[s] for s in ids)), pending)


def _auto_scope(dc: DataCenter, weights: Weights) -> SolveScope:
    bounds = Bounds(*derived_bounds(dc.pms))  # the paper's 16 PMs / 64 VMs on 2-GPU servers
    if dc.pending:
        nb = select_admission(dc, list(dc.pending), bounds)
        note = "Algorithm 1 admission neighborhood"
        return SolveScope("auto", nb.pms, nb.pending, nb.rejected, note)
    gammas = sorted(((dc.gamma(h), h) for h in dc.classes), key=lambda t: (-t[0], t[1]))
    for gamma, h in gammas:
        if gamma < 1:
            break
        nb = select_consolidation(dc, h, weights, bounds)
        if nb.pms:
            return SolveScope(
                "auto", nb.pms, (), (), f"Algorithm 1 consolidation neighborhood of class {h} (Γ_h={gamma})"
            )
    return SolveScope("auto", (), (), (), "no pending VM and no class with Γ_h ≥ 1 worth a call")


def solve_snapshot(
    snap: Snapshot,
    weights: Weights | None = None,
    solver: str = "highs",
    limits: Limits = Limits(),  # noqa: B008 — frozen record
    neighborhood: str = "auto",
) -> Outcome:
    """Optimize `snap` and decide (`decision.decide`); never mutates `snap`."""
    w = weights or snap.weights
    dc = snap.datacenter()
    scope = choose_scope(dc, neighborhood, w)
    current = dict(dc.placement)
    vms = dict(snap.vms)
    before = evaluate(dc.pms, vms, current, current, w)
    unchanged = Outcome(
        status=Status.UNCHANGED,
        scope=scope,
        admitted=(),
        rejected=(),
        waiting=(),
        before=before,
        after=before,
        proposed=None,
        parking_cost=0.0,
        solution=None,
        plan=None,
        infeasible_reason=None,
        placement=current,
        pms_out=snap.pms,
    )
    if not scope.pms and not scope.pending:
        return _with_pending(snap, unchanged, None, f"nothing to optimize: {scope.note}")
    decision = decide(dc, scope.pms, scope.pending, w, solver, limits)
    sol = decision.solution
    proposed_placement = {**current, **sol.target}
    tried = replace(
        unchanged,
        status=decision.status,
        proposed=evaluate(dc.pms, vms, proposed_placement, current, w),
        parking_cost=decision.parking_cost,
        solution=sol,
    )
    if decision.status is Status.PLAN_INFEASIBLE:
        tried = replace(tried, infeasible_reason=decision.reason)
    if decision.plan is None or not decision.applied:
        return _with_pending(snap, tried, decision, _status_note(tried, decision))
    plan = decision.plan
    final = dict(plan.final_placement) or proposed_placement
    off = {s.pm for s in plan.steps if isinstance(s, PowerOff)}
    hosts = {pl.pm for pl in final.values()}
    outcome = replace(
        tried,
        status=Status.IMPROVED,
        admitted=tuple(v for v in scope.pending if v in final),
        after=evaluate(dc.pms, vms, final, current, w),
        plan=plan,
        placement=final,
        pms_out=tuple(
            replace(pm, powered_off=(pm.id in off or pm.powered_off) and j not in hosts)
            for j, pm in enumerate(snap.pms)
        ),
        moves=explain(dc, plan, final),
    )
    outcome = _with_pending(snap, outcome, decision, _status_note(outcome, decision))
    _guard(snap, outcome)
    return outcome


# Terminations of a solve that stopped at a limit, without proof, in words.
STOPPED_AT = {
    TIME_LIMIT: "its time limit",
    INTERRUPTED: "its time limit",
    WORK_LIMIT: "its work limit",
    GAP_LIMIT: "its gap limit",
}


def _stop_words(res: SolveResult) -> str:
    words = STOPPED_AT.get(res.termination, f"termination {res.termination!r}")
    if res.guard == GUARD_KILLED:
        words += " (its process was ended at the deadline)"
    gap = "unknown" if res.gap is None else f"{100 * res.gap:.2f}%"
    return f"the solver stopped at {words} after {res.wall_s:.1f} s without proving optimality (gap {gap})"


def _status_note(out: Outcome, decision: Decision) -> str:
    """What happened, in one sentence (the `status_reason` of the solve document)."""
    res = decision.solution.result
    stays = "; the state stays as it is"
    if decision.status is Status.IMPROVED:
        note = f"gain {out.gain:+g} after a parking cost of {out.parking_cost:g}"
        if not res.proved_optimal:
            note += f"; not proved optimal: {_stop_words(res)}, so a better plan may exist"
        return note
    if decision.status is Status.UNCHANGED:
        if not decision.changed:
            return "the proved optimum keeps every VM where it is" + stays
        return (
            f"the proved optimum is not strictly better once parking is counted (gain {out.gain:+g})" + stays
        )
    if decision.status is Status.STOPPED_AT_LIMIT:
        return f"{_stop_words(res)} and found nothing strictly better" + stays
    if decision.status is Status.SOLVER_ERROR:
        return f"the solver failed: {decision.reason}" + stays
    return f"no valid migration order: {decision.reason}" + stays


def _with_pending(snap: Snapshot, out: Outcome, decision: Decision | None, note: str) -> Outcome:
    """Sort the pending VMs that are not admitted into rejected and waiting, each with its reason.

    Rejected means certain: the VM fits no PM even when that PM is empty, or the solver *proved*
    that the optimum of this neighborhood does not admit it. Every other one waits."""
    admitted = set(out.admitted)
    res = decision.solution.result if decision is not None else None
    target = decision.solution.target if decision is not None else {}
    region = "the whole cluster" if out.scope.mode == "all" else "this neighborhood"
    rejected: list[str] = []
    waiting: list[str] = []
    reasons: dict[str, str] = {}
    for v in snap.pending:
        if v in admitted:
            continue
        unfit = no_fit_reason(snap.pms, snap.vms[v])
        proved = res is not None and res.proved_optimal and out.status is not Status.SOLVER_ERROR
        if unfit is not None:
            rejected.append(v)
            reasons[v] = f"fits no PM even when empty: {unfit}"
        elif v in out.scope.pending and proved and v not in target:
            rejected.append(v)
            reasons[v] = f"not admitted by the proved optimum of {region}"
        else:
            waiting.append(v)
            reasons[v] = _waiting_reason(v, out, decision, target)
    return replace(out, rejected=tuple(rejected), waiting=tuple(waiting), reasons=reasons, note=note)


def _waiting_reason(v: str, out: Outcome, decision: Decision | None, target: Mapping[str, Placement]) -> str:
    if v not in out.scope.pending:
        if v in out.scope.rejected:
            return "left out by Algorithm 1 (its count test found no PM for it); try --neighborhood all"
        return "outside this call's neighborhood"
    if decision is None:
        return "nothing was solved"
    res = decision.solution.result
    if out.status is Status.SOLVER_ERROR:
        return f"the solver failed: {decision.reason}"
    if out.status is Status.PLAN_INFEASIBLE:
        return "the solution found has no valid migration order"
    if v in target and out.status is not Status.IMPROVED:
        return "admitted by the solution, whose plan is not strictly better once parking is counted"
    return f"not admitted by the solution, which is not proved optimal ({_stop_words(res)})"


def _guard(snap: Snapshot, outcome: Outcome) -> None:
    """The output state must pass the independent checker; anything else is a bug, not user error."""
    violations = check_placement(outcome.pms_out, snap.vms, outcome.placement)
    if violations:
        lines = "; ".join(str(v) for v in violations[:5])
        raise RuntimeError(f"internal error: the solution breaks constraints: {lines}")


def _num(x: float | None) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return int(x) if float(x).is_integer() else x


def output_document(snap: Snapshot, out: Outcome) -> dict[str, Any]:
    """The snapshot `--out` writes: the output state, every other field of the input kept."""
    off = [pm.id for pm in out.pms_out if pm.powered_off]
    return snapshot_document(snap, out.placement, powered_off=off)
