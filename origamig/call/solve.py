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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from origamig.bilp import Limits, RegionSolution, SolveResult
from origamig.bilp.backends.base import GAP_LIMIT, GUARD_KILLED, INTERRUPTED, TIME_LIMIT, WORK_LIMIT
from origamig.call.decision import Decision, Status, decide
from origamig.call.neighborhood import (
    Bounds,
    Neighborhood,
    derived_bounds,
    select_admission,
    select_consolidation,
)
from origamig.call.successive import Call, CallOptions, CallSequence, first_status, run_calls
from origamig.call.why_waiting import not_admitted_reason
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, PmSpec, Weights
from origamig.errors import UserError
from origamig.judge.check import check_placement
from origamig.judge.fit import no_fit_reason
from origamig.judge.objective import Objective, evaluate
from origamig.plan.executor import chain_plans
from origamig.plan.explain import MoveNote, explain
from origamig.plan.steps import DEFAULT_BANDWIDTH_GBIT_S, Plan, PowerOff
from origamig.snapshot.document import Snapshot, placement_json, snapshot_document
from origamig.wording import count

FITS_NO_PM = "fits no PM even when empty"
OUTRIGHT = "left out by Algorithm 1 (its count test found no PM for it); try --neighborhood all"


NO_GOOD_LIMIT = 5  # re-solves per call after a target whose moves have no valid order


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
    calls: tuple[Call, ...] = ()  # the successive calls made (empty for a single call)

    @property
    def gain(self) -> float:
        return (self.proposed.value - self.parking_cost - self.before.value) if self.proposed else 0.0

    def to_json(self) -> dict[str, Any]:
        """The `solve --json` document: status, admitted/rejected/waiting, objective, solver, plan,
        plan_cost, plan_infeasible_reason, placement and neighborhood."""
        many = len(self.calls) > 1
        solver = _calls_solver_json(self.calls) if many else _solver_json(self.solution)
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
            "calls": [_call_json(self.pms_out, c) for c in self.calls],
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


def _single_neighborhood(scope: SolveScope) -> Neighborhood:
    """The one call's neighborhood; its kind is `all` / `list` for a `--neighborhood` given by hand."""
    kind = ("admission" if scope.pending else "consolidation") if scope.mode == "auto" else scope.mode
    return Neighborhood(scope.pms, scope.pending, scope.rejected, kind)


def solve_snapshot(
    snap: Snapshot,
    weights: Weights | None = None,
    solver: str = "highs",
    limits: Limits = Limits(),  # noqa: B008 — frozen record
    neighborhood: str = "auto",
    calls: int | None = None,
    consolidation_rounds: int = 1,
    no_good_limit: int = NO_GOOD_LIMIT,
    bandwidth_gbit_s: float = DEFAULT_BANDWIDTH_GBIT_S,
    bound_alongside: bool = False,
) -> Outcome:
    """Optimize `snap` and decide; never mutates `snap`.

    With `neighborhood="auto"` and `calls` ≠ 1: successive calls (`successive.run_calls`, at most
    `calls`), admission first, then up to `consolidation_rounds` rounds of consolidation calls.
    Otherwise one call (`decision.decide`) on the chosen scope. A target whose moves have no valid
    order is excluded and solved again up to `no_good_limit` times per call. `bound_alongside`: each
    call's LP bound runs while its solver already solves (`decision.decide`), for a one-shot process."""
    w = weights or snap.weights
    dc = snap.datacenter()
    if neighborhood == "auto" and calls != 1:
        options = CallOptions(no_good_limit, bandwidth_gbit_s, bound_alongside)
        return _solve_successive(snap, dc, w, solver, limits, calls, consolidation_rounds, options)
    scope = choose_scope(dc, neighborhood, w)
    if not consolidation_rounds and not scope.pending:
        scope = SolveScope(
            scope.mode, (), (), scope.rejected, "no pending VM, and the goal is admission only"
        )
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
    decision = decide(
        dc,
        scope.pms,
        scope.pending,
        w,
        solver,
        limits,
        no_good_limit,
        bandwidth_gbit_s,
        bound_alongside=bound_alongside,
    )
    sol = decision.solution
    proposed_placement = {**current, **sol.target}
    tried = replace(
        unchanged,
        status=decision.status,
        proposed=evaluate(dc.pms, vms, proposed_placement, current, w),
        parking_cost=decision.parking_cost,
        solution=sol,
        calls=(Call(_single_neighborhood(scope), decision),),
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


def _solve_successive(
    snap: Snapshot,
    dc: DataCenter,
    w: Weights,
    solver: str,
    limits: Limits,
    calls: int | None,
    consolidation_rounds: int,
    options: CallOptions,
) -> Outcome:
    """Successive calls from `dc` (the snapshot's state), their plans chained into one."""
    bounds = Bounds(*derived_bounds(dc.pms))
    seq = run_calls(
        dc,
        w,
        bounds,
        solver,
        limits,
        max_calls=calls,
        consolidation_rounds=consolidation_rounds,
        options=options,
    )
    current = dict(dc.placement)
    vms = dict(snap.vms)
    before = evaluate(dc.pms, vms, current, current, w)
    applied = seq.applied
    final = dict(seq.final.placement)
    plan = (
        chain_plans(dc, [c.decision.plan for c in applied if c.decision.plan], seq.final) if applied else None
    )
    off = {s.pm for s in plan.steps if isinstance(s, PowerOff)} if plan else set()
    hosts = {pl.pm for pl in final.values()}
    pms = tuple(dict.fromkeys(j for c in seq.calls for j in c.neighborhood.pms))
    kinds = [c.neighborhood.kind for c in seq.calls]
    note = (
        f"{len(kinds)} calls ({kinds.count('admission')} admission, {kinds.count('consolidation')} "
        "consolidation), each on an Algorithm 1 neighborhood of the state the previous one left"
    )
    scope = SolveScope("auto", pms, tuple(seq.tried), seq.outright, note)
    status = first_status(seq.calls)
    first = seq.calls[0].decision if seq.calls else None
    after = evaluate(dc.pms, vms, final, current, w)
    outcome = Outcome(
        status=status,
        scope=scope,
        admitted=tuple(v for v in snap.pending if v in final),
        rejected=(),
        waiting=(),
        before=before,
        after=after,
        proposed=after if seq.calls else None,
        parking_cost=sum(c.decision.parking_cost for c in applied),
        solution=first.solution if first else None,
        plan=plan,
        infeasible_reason=first.reason if first and status is Status.PLAN_INFEASIBLE else None,
        placement=final,
        pms_out=tuple(
            replace(pm, powered_off=(pm.id in off or pm.powered_off) and j not in hosts)
            for j, pm in enumerate(snap.pms)
        ),
        moves=explain(dc, plan, final) if plan else (),
        calls=seq.calls,
    )
    outcome = _sequence_pending(snap, outcome, seq, w, calls)
    _guard(snap, outcome)
    return outcome


def _sequence_note(out: Outcome, seq: CallSequence) -> str:
    """What the calls did, in one sentence."""
    n = len(out.admitted + out.rejected + out.waiting)
    head = f"admitted {len(out.admitted)} of {n} pending" if n else "no pending VM"
    if out.status is Status.IMPROVED:
        gain = f"gain {out.gain:+g} after a parking cost of {out.parking_cost:g}"
        return f"{head}; {gain} over {count(len(seq.calls), 'call')}"
    if not seq.calls:
        return "nothing to optimize: no pending VM that fits and no class with Γ_h ≥ 1 worth a call"
    first = seq.calls[0].decision
    return f"{head}; {_status_note(out, first)}"


def _sequence_pending(
    snap: Snapshot, out: Outcome, seq: CallSequence, w: Weights, calls: int | None
) -> Outcome:
    """Rejected (certain) and waiting pending VMs of a call sequence, each with its reason."""

    def why(v: str) -> tuple[bool, str]:
        if v in seq.outright:
            return False, OUTRIGHT
        if v not in seq.tried:
            return False, f"outside the call budget (--calls {calls}): no call reached it"
        call = seq.calls[seq.tried[v]]
        d = call.decision
        res = d.solution.result
        if d.status is Status.SOLVER_ERROR:
            return False, f"the solver failed in its call: {d.reason}"
        if d.status is Status.PLAN_INFEASIBLE:
            return False, (
                f"every solution found for its call has no valid migration order ({d.no_goods} "
                f"excluded and solved again): {d.reason}"
            )
        if v in d.solution.target:
            return (
                False,
                "admitted by its call's solution, whose plan is not strictly better once parking is counted",
            )
        if res.proved_optimal:
            return True, not_admitted_reason(seq.final, snap.vms[v], w, len(call.neighborhood.pms))
        return False, f"not admitted by its call's solution, not proved optimal ({_stop_words(res)})"

    counted = _sort_pending(snap, out, why, "")
    return replace(counted, note=_sequence_note(counted, seq))


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
    if decision.no_goods:
        stays += (
            f" ({decision.no_goods} solution(s) excluded first: their moves have no valid order;"
            " docs/solving.md#no-good-cuts)"
        )
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
    res = decision.solution.result if decision is not None else None
    target = decision.solution.target if decision is not None else {}
    region = "the whole cluster" if out.scope.mode == "all" else "this neighborhood"
    proved = res is not None and res.proved_optimal and out.status is not Status.SOLVER_ERROR

    def why(v: str) -> tuple[bool, str]:
        if v in out.scope.pending and proved and v not in target:
            reason = f"not admitted by the proved optimum of {region}"
            if decision is not None and decision.no_goods:
                reason += (
                    f" once the {decision.no_goods} solution(s) whose moves have no valid order are excluded"
                )
            return True, reason
        return False, _waiting_reason(v, out, decision, target)

    return _sort_pending(snap, out, why, note)


def _sort_pending(snap: Snapshot, out: Outcome, why: Callable[[str], tuple[bool, str]], note: str) -> Outcome:
    """`out` with its pending VMs that are not admitted sorted: rejected (certain) when they fit no
    PM even empty or when `why(v)` says certain, else waiting; each with its reason."""
    admitted = set(out.admitted)
    rejected: list[str] = []
    waiting: list[str] = []
    reasons: dict[str, str] = {}
    for v in snap.pending:
        if v in admitted:
            continue
        unfit = no_fit_reason(snap.pms, snap.vms[v])
        certain, reasons[v] = (True, f"{FITS_NO_PM}: {unfit}") if unfit is not None else why(v)
        (rejected if certain else waiting).append(v)
    return replace(out, rejected=tuple(rejected), waiting=tuple(waiting), reasons=reasons, note=note)


def _waiting_reason(v: str, out: Outcome, decision: Decision | None, target: Mapping[str, Placement]) -> str:
    if v not in out.scope.pending:
        if v in out.scope.rejected:
            return OUTRIGHT
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
        "stopped_at_limit": bool(res and res.termination in STOPPED_AT),
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
        "stopped_at_limit": any(r.termination in STOPPED_AT for r in results),
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
        "admitted": [v for v in nb.pending if d.applied and v in d.changed],
        "status": d.status,
        "reason": d.reason,
        "no_goods": d.no_goods,
        "solver": _solver_json(d.solution),
    }


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
