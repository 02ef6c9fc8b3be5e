"""Successive calls: admit every pending VM that can be admitted, then consolidate (docs/solving.md).

One OrigaMIG call optimizes one Algorithm 1 neighborhood (`neighborhood.py`), so it can admit only
the pending VMs of that neighborhood. `run_calls` makes admission calls one after another, each on
a neighborhood built by Algorithm 1 from the state the previous applied plan leaves and for the
pending VMs still queued, until every pending VM is admitted or retired; then up to
`consolidation_rounds` rounds of consolidation calls (one per GPU class with Γ_h ≥ 1, largest Γ_h
first; the rounds stop once one changes nothing).
Each call is decided as every call is (`decision.decide`: applied only when strictly better) and its
plan starts where the previous one ends, so the plans chain into one always-valid plan
(`executor.chain_plans`). A call that admits some of its pending VMs leaves the others queued; one
that admits none retires them. So every call admits or retires at least one VM, there are at most
(pending VMs) admission calls, and `max_calls` bounds the total.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from origamig.bilp import Limits
from origamig.call.decision import Decision, Status, decide
from origamig.call.neighborhood import Bounds, Neighborhood, select_admission, select_consolidation
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Weights
from origamig.plan.steps import DEFAULT_BANDWIDTH_GBIT_S


@dataclass(frozen=True)
class CallOptions:
    """How each call is decided beyond its solver and limits (`decision.decide`): how many targets
    without a valid move order it excludes and solves again, the bandwidth its plan's moves copy
    memory at, and whether its LP bound runs beside the solver (a one-shot process)."""

    no_good_limit: int = 0
    bandwidth_gbit_s: float = DEFAULT_BANDWIDTH_GBIT_S
    bound_alongside: bool = False


@dataclass(frozen=True)
class Call:
    """One call of the sequence: its neighborhood and its decision (on the state before it)."""

    neighborhood: Neighborhood
    decision: Decision


@dataclass(frozen=True)
class CallSequence:
    """The calls made, the state they end in, and where each pending VM stands."""

    calls: tuple[Call, ...]
    final: DataCenter
    tried: dict[str, int]  # pending VM → index of the last admission call that held it
    outright: tuple[str, ...]  # pending VMs Algorithm 1 found no PM for (count test)
    untried: tuple[str, ...]  # pending VMs no call reached (call budget spent)

    @property
    def applied(self) -> tuple[Call, ...]:
        return tuple(c for c in self.calls if c.decision.applied)


def run_calls(
    dc: DataCenter,
    weights: Weights,
    bounds: Bounds,
    solver: str,
    limits: Limits,
    *,
    max_calls: int | None = None,
    consolidation_rounds: int = 1,
    options: CallOptions = CallOptions(),
) -> CallSequence:
    """Admission calls until every pending VM is admitted or retired, then consolidation calls, each
    decided with `options`."""
    state = dc.copy()
    calls: list[Call] = []
    tried: dict[str, int] = {}
    outright: list[str] = []
    queue = list(state.pending)

    def budget_left() -> bool:
        return max_calls is None or len(calls) < max_calls

    while queue and budget_left():
        nb = select_admission(state, queue, bounds)
        outright += [v for v in nb.rejected if v not in outright]
        queue = [v for v in queue if v not in nb.rejected]
        if not nb.pending:
            break
        _call(state, nb, weights, solver, limits, options, calls)
        for v in nb.pending:
            tried[v] = len(calls) - 1
        admitted = [v for v in nb.pending if v in state.placement]
        # A call that admits some of its VMs leaves the others queued: the state changed, and the
        # next neighborhood is built for them on it. A call that admits none retires them all.
        queue = [v for v in queue if v not in (admitted or nb.pending)]
    for _ in range(consolidation_rounds):
        changed = False
        for h in _classes_worth_a_call(state):
            if not budget_left():
                break
            nb = select_consolidation(state, h, weights, bounds)
            if nb.pms:
                changed |= _call(state, nb, weights, solver, limits, options, calls)
        if not changed:
            break
    return CallSequence(tuple(calls), state, tried, tuple(outright), tuple(queue))


def _classes_worth_a_call(dc: DataCenter) -> list[str]:
    """GPU classes with Γ_h ≥ 1 (an active GPU more than their slices need), largest Γ_h first."""
    gammas = sorted(((dc.gamma(h), h) for h in dc.classes), key=lambda t: (-t[0], t[1]))
    return [h for gamma, h in gammas if gamma >= 1]


def _call(
    state: DataCenter,
    nb: Neighborhood,
    weights: Weights,
    solver: str,
    limits: Limits,
    options: CallOptions,
    calls: list[Call],
) -> bool:
    """Decide one call on `state`; apply its plan to `state` when it is applied. True if applied."""
    decision = decide(
        state,
        nb.pms,
        nb.pending,
        weights,
        solver,
        limits,
        options.no_good_limit,
        options.bandwidth_gbit_s,
        bound_alongside=options.bound_alongside,
    )
    calls.append(Call(nb, decision))
    if not decision.applied or decision.plan is None:
        return False
    final = decision.plan.final_placement
    state.apply_placement({v: pl for v, pl in final.items() if state.placement.get(v) != pl})
    return True


def first_status(calls: Sequence[Call]) -> Status:
    """The sequence's status: improved when some call applied a plan, else the first call's status."""
    if any(c.decision.applied for c in calls):
        return Status.IMPROVED
    return calls[0].decision.status if calls else Status.UNCHANGED
