"""`origamig solve` as a library call: the calls of a goal, one plan for their end state, the outcome.

There is one path: the calls (`successive.run_calls`: Algorithm 1's neighborhoods one after another,
or one scope given by hand; a single call is a sequence of one), each decided as every OrigaMIG call
is (`decision.decide`), then one plan from the snapshot's state to the calls' end state with the
moves nobody needs dropped (`final_plan.final_plan`), then a verdict for every pending VM that is not
admitted (`reasons`). The outcome reports Eq. (5) over the whole snapshot under the goal's weights;
its `placement` is the state after the plan, checked by the independent checker before it is
returned.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from origamig.bilp import Limits
from origamig.call import reasons
from origamig.call.decision import Decision, Status, parking_cost
from origamig.call.final_plan import final_plan
from origamig.call.goals import DEFAULT_GOAL, CallWeights, Goal, goal_of
from origamig.call.kinds import CallKind, ScopeMode
from origamig.call.neighborhood_bounds import Bounds, derived_bounds
from origamig.call.outcome import Outcome, SolveScope
from origamig.call.solve_time import SolveTime
from origamig.call.successive import CallOptions, CallSequence, Deadline, first_status, run_calls
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, PmSpec, Weights
from origamig.errors import UserError
from origamig.judge.check import check_placement, moves_refused
from origamig.judge.objective import Objective, evaluate_change, evaluate_state
from origamig.plan.explain import explain
from origamig.plan.steps import DEFAULT_BANDWIDTH_GBIT_S, Plan, PowerOff
from origamig.snapshot.document import Snapshot, snapshot_document
from origamig.wording import count

NO_GOOD_LIMIT = 5  # re-solves per call after a target whose moves have no valid order


class NeighborhoodError(UserError):
    """A `--neighborhood` value that names no PM of the snapshot."""


def scope_pms(dc: DataCenter, spec: str) -> tuple[ScopeMode, tuple[int, ...] | None]:
    """The mode and PMs of `--neighborhood`: `auto` (Algorithm 1's, None), `all`, or a
    comma-separated list of PM ids (`NeighborhoodError` naming any unknown id)."""
    if spec == ScopeMode.AUTO:
        return ScopeMode.AUTO, None
    if spec == ScopeMode.ALL:
        return ScopeMode.ALL, tuple(range(len(dc.pms)))
    ids = [s.strip() for s in spec.split(",") if s.strip()]
    unknown = [s for s in ids if s not in dc.index]
    if unknown or not ids:
        known = ", ".join(p.id for p in dc.pms[:8]) + (", ..." if len(dc.pms) > 8 else "")
        raise NeighborhoodError(
            [f"--neighborhood: {s!r} is not a PM id (PMs: {known})" for s in unknown]
            or ["--neighborhood: give auto, all, or a comma-separated list of PM ids"]
        )
    return ScopeMode.LIST, tuple(dict.fromkeys(dc.index[s] for s in ids))


def solve_snapshot(
    snap: Snapshot,
    weights: Weights | None = None,
    solver: str = "highs",
    limits: Limits = Limits(),  # noqa: B008 — frozen record
    neighborhood: str = "auto",
    calls: int | None = None,
    goal: Goal | str = DEFAULT_GOAL,
    no_good_limit: int = NO_GOOD_LIMIT,
    bandwidth_gbit_s: float = DEFAULT_BANDWIDTH_GBIT_S,
    bound_alongside: bool = False,
    primal: bool = False,
    while_waiting: Callable[[], object] | None = None,
    deadline: Deadline | None = None,
) -> Outcome:
    """Optimize `snap` for `goal` and decide; never mutates `snap`.

    `weights` (default: the snapshot's) are the goal's base (docs/solving.md#goals). With
    `neighborhood="auto"`, calls on Algorithm 1's neighborhoods; with `all` or a list of PM ids,
    calls on those PMs. At most `calls` calls. A target whose moves have no valid order is excluded
    and solved again up to `no_good_limit` times per call. `bound_alongside`: each call's LP bound
    runs while its solver already solves (`decision.decide`), for a one-shot process. `primal`: each
    call's solver starts from the fast primal answer (docs/solving.md#fast-primal-answer).
    `while_waiting`: work of the caller's done while a solver works (`backends.base.Once`).

    The wall-clock limit bounds the whole solve: the calls share one `deadline` (default:
    `limits.time_limit_s` from now; `origamig solve` counts from its process's start), each solver
    stopping by it, its `call_limit_s` capping each call's (docs/solving.md#time-limit). A
    deterministic solve consults no clock: its work budget alone stops each call, and no deadline
    applies (a `deadline` given then only marks where the account of `Outcome.time` starts).
    `Outcome.time` says how the time was spent."""
    t_start = deadline.started if deadline is not None else time.perf_counter()  # the account's start
    whole = limits.wall_limit_s
    if whole is None:
        deadline = None
    elif deadline is None:
        deadline = Deadline.after(whole, started=t_start)
    goal_weights = CallWeights(goal_of(goal), weights or snap.weights)
    dc = snap.datacenter()
    mode, pms = scope_pms(dc, neighborhood)
    t_calls = time.perf_counter()
    seq = run_calls(
        dc,
        goal_weights,
        Bounds(*derived_bounds(dc.pms)),
        solver,
        limits,
        max_calls=calls,
        scope=pms,
        scope_kind=mode,
        options=CallOptions(no_good_limit, bandwidth_gbit_s, bound_alongside, primal, while_waiting),
        deadline=deadline,
    )
    t_end = time.perf_counter()
    outcome = _outcome(snap, dc, seq, goal_weights, mode, calls, bandwidth_gbit_s)
    _guard(snap, dc, outcome)
    marks = (t_start, t_calls, t_end, time.perf_counter())
    limit, call_limit = (deadline.limit_s, deadline.call_limit_s) if deadline else (None, None)
    spent = SolveTime.of(seq.calls, marks, limit, call_limit, seq.out_of_time)
    return replace(outcome, time=spent)


def _outcome(
    snap: Snapshot,
    dc: DataCenter,
    seq: CallSequence,
    goal: CallWeights,
    mode: ScopeMode,
    calls: int | None,
    bandwidth: float,
) -> Outcome:
    """The outcome of the calls of `seq` made from `dc`, the snapshot's state."""
    w = goal.consolidation(dc.pms)  # the goal's own trade-off: the report and the dropped moves
    current = dict(dc.placement)
    before = evaluate_state(dc, w)
    plan: Plan | None = None
    placement: dict[str, Placement] = current
    dropped: tuple[str, ...] = ()
    direct = True
    changes: Mapping[str, Placement] = {}
    if seq.applied:
        call_plans = [c.decision.plan for c in seq.applied if c.decision.plan is not None]
        fp = final_plan(dc, seq.final, call_plans, w, bandwidth)
        changes = fp.target
        placement, dropped, direct = {**current, **fp.target}, fp.dropped, fp.direct
        plan = fp.plan if fp.target else None  # every move dropped and nothing admitted: no plan
    first = seq.calls[0].decision if seq.calls else None
    proposed = _proposed(dc, before, seq, first, w)
    off = {s.pm for s in plan.steps if isinstance(s, PowerOff)} if plan else set()
    end = dc.with_changes(changes)
    status = Status.UNCHANGED if seq.applied and plan is None else first_status(seq.calls)
    scope = SolveScope(
        mode,
        tuple(dict.fromkeys(j for c in seq.calls for j in c.neighborhood.pms)),
        tuple(seq.tried),
        seq.outright,
        _scope_note(mode, seq),
    )
    outcome = Outcome(
        status=status,
        scope=scope,
        admitted=tuple(v for v in snap.pending if v in placement),
        rejected=(),
        waiting=(),
        before=before,
        after=evaluate_change(dc, before, changes, w),
        proposed=proposed,
        parking_cost=_parking(plan, dc, w),
        solution=first.solution if first else None,
        plan=plan,
        infeasible_reason=first.reason if first and status is Status.PLAN_INFEASIBLE else None,
        placement=placement,
        pms_out=tuple(_power_after(pm, pm.id in off, end.is_active(j)) for j, pm in enumerate(snap.pms)),
        moves=explain(dc, plan, end) if plan else (),
        calls=seq.calls,
        goal=goal.goal,
        dropped=dropped,
        direct=direct,
        start_state=dc,
        end_state=end,
    )
    outcome = _with_verdicts(snap, outcome, seq, goal, calls)
    return replace(outcome, note=_note(outcome, seq))


def _power_after(pm: PmSpec, switched_off: bool, hosts_vms: bool) -> PmSpec:
    """`pm` as the plan leaves it: off when it was or the plan switches it off, unless VMs run there."""
    off = (switched_off or pm.powered_off) and not hosts_vms
    return pm if off == pm.powered_off else replace(pm, powered_off=off)


def _proposed(
    dc: DataCenter, before: Objective, seq: CallSequence, first: Decision | None, w: Weights
) -> Objective | None:
    """Eq. (5) of the calls' end state, or, when no call applied a plan, of the first solution."""
    if seq.applied:
        end = seq.final.placement
    elif first is None or first.status is Status.SOLVER_ERROR:
        return None
    else:
        end = first.solution.target
    return evaluate_change(dc, before, dc.changes_to(end), w)


def _parking(plan: Plan | None, dc: DataCenter, w: Weights) -> float:
    return parking_cost(plan, dc.vms, w) if plan is not None else 0.0


def _scope_note(mode: ScopeMode, seq: CallSequence) -> str:
    kinds = [c.neighborhood.kind for c in seq.calls]
    if mode != ScopeMode.AUTO:
        return f"{count(len(kinds), 'call')} on the servers given"
    return (
        f"{count(len(kinds), 'call')} ({kinds.count(CallKind.ADMISSION)} admission, "
        f"{kinds.count(CallKind.CONSOLIDATION)} consolidation), "
        "each on an Algorithm 1 neighborhood of the state the previous one left"
    )


def _with_verdicts(
    snap: Snapshot, out: Outcome, seq: CallSequence, goal: CallWeights, calls: int | None
) -> Outcome:
    """`out` with each pending VM that is not admitted sorted into rejected (certain) or waiting,
    with its reason (`reasons`), judged on the output state."""
    end = out.end_state
    rejected: list[str] = []
    waiting: list[str] = []
    why: dict[str, str] = {}
    for v in snap.pending:
        if v in out.admitted:
            continue
        verdict = reasons.fits_nowhere(snap.pms, snap.vms[v]) or _verdict(end, snap, seq, goal, calls, v)
        (rejected if verdict.rejected else waiting).append(v)
        why[v] = verdict.reason
    return replace(out, rejected=tuple(rejected), waiting=tuple(waiting), reasons=why)


def _verdict(
    end: DataCenter, snap: Snapshot, seq: CallSequence, goal: CallWeights, calls: int | None, v: str
) -> reasons.Verdict:
    if v in seq.outright:
        return reasons.Verdict(False, reasons.OUTRIGHT)
    if v not in seq.tried:
        if seq.out_of_time:
            return reasons.Verdict(False, "the time limit ran out before a call reached it (--time-limit)")
        return reasons.Verdict(False, f"outside the call budget (--calls {calls}): no call reached it")
    call = seq.calls[seq.tried[v]]
    region = "the whole cluster" if call.neighborhood.kind == ScopeMode.ALL else "its call"
    return reasons.of_call(
        end,
        snap.vms[v],
        call.decision,
        call.weights,
        len(call.neighborhood.pms),
        goal.admits_first,
        region,
    )


def _note(out: Outcome, seq: CallSequence) -> str:
    """What the calls did, in one sentence (the `status_reason` of the solve document)."""
    n = len(out.admitted + out.rejected + out.waiting)
    head = f"admitted {len(out.admitted)} of {n} pending" if n else "no pending VM"
    if out.status is Status.IMPROVED:
        calls = count(len(seq.calls), "call")
        note = f"{head}; gain {out.gain:+g} after a parking cost of {out.parking_cost:g} over {calls}"
        unproved = [
            c.decision.solution.result for c in seq.calls if not c.decision.solution.result.proved_optimal
        ]
        if unproved:
            note += f"; not proved optimal: {reasons.stop_words(unproved[0])}, so a better plan may exist"
        return note
    if not seq.calls:
        return "nothing to optimize: no pending VM that fits and no class with Γ_h ≥ 1 worth a call"
    return f"{head}; {_call_note(seq.calls[0].decision)}"


def _call_note(decision: Decision) -> str:
    """What a call that applied nothing found, in one phrase."""
    res = decision.solution.result
    stays = "; the state stays as it is"
    if decision.no_goods:
        stays += (
            f" ({decision.no_goods} solution(s) excluded first: their moves have no valid order;"
            " docs/solving.md#no-good-cuts)"
        )
    if decision.status is Status.UNCHANGED:
        if not decision.changed:
            return "the proved optimum keeps every VM where it is" + stays
        return (
            "the proved optimum is not strictly better once parking is counted "
            f"(gain {decision.gain or 0:+g})" + stays
        )
    if decision.status is Status.STOPPED_AT_LIMIT:
        return f"{reasons.stop_words(res)} and found nothing strictly better" + stays
    if decision.status is Status.SOLVER_ERROR:
        return f"the solver failed: {decision.reason.removeprefix('solver failed: ')}" + stays
    return f"no valid migration order: {decision.reason}" + stays


def _guard(snap: Snapshot, dc: DataCenter, outcome: Outcome) -> None:
    """The output state must pass the independent checker and move no VM the cluster forbids to
    move; anything else is a bug, not user error."""
    violations = check_placement(outcome.pms_out, snap.vms, outcome.placement)
    violations += moves_refused(snap.vms, dc.placement, outcome.placement, snap.intra_pm_moves)
    if violations:
        lines = "; ".join(str(v) for v in violations[:5])
        raise RuntimeError(f"internal error: the solution breaks constraints: {lines}")


def output_document(snap: Snapshot, out: Outcome) -> dict[str, Any]:
    """The snapshot `--out` writes: the output state, every other field of the input kept."""
    off = [pm.id for pm in out.pms_out if pm.powered_off]
    return snapshot_document(snap, out.placement, powered_off=off)
