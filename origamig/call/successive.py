"""Successive calls: admit every pending VM that can be admitted, then consolidate (docs/solving.md).

One OrigaMIG call optimizes one neighborhood, so it can admit only the pending VMs of that
neighborhood. `run_calls` makes admission calls one after another, each on a neighborhood built by
Algorithm 1 (`admission_neighborhood.py`) from the state the previous applied plan leaves and for the
pending VMs still queued, until every pending VM is admitted or retired. Under a goal that admits first
(`goals.CallWeights.admits_first`), each admission call also holds, for each of its pending VMs, the
first server where it fits as the cluster now is (so a way to admit it without moving anything is
in view), and a retired VM that fits some server as the cluster now is gets one more call, on that
server. Then up to `rounds` rounds of consolidation calls follow (one per GPU
class with Γ_h ≥ 1, largest Γ_h first; the rounds stop once one changes nothing).

With a `scope` (the PMs `--neighborhood all` or a list names), every call runs on those PMs: one
call for a goal that trades admission against cost (`paper`, `consolidate`), else an admission call
for every pending VM and then the consolidation rounds.

Each call decides as every call does (`decision.decide`: applied only when strictly better) with
the weights its goal gives its kind of call, and starts from the state the previous applied call
left. A call that admits some of its pending VMs leaves the others queued; one that admits none
retires them. So every admission call admits or retires at least one VM, there are at most
(pending VMs) of them plus the retries, and `max_calls` bounds the total.

With a `Deadline` (a wall-clock limit on the whole solve), the calls share it: each call's solver may
use all the time left (the first calls take what they need, the last what is left; `call_limit_s`
caps each one), and no call after the first starts once the time left is less than what the
previous call spent outside its solver (building its model, the LP bound, the repair, planning). The
calls made so far stand; the pending VMs no call reached wait (`CallSequence.out_of_time`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from origamig.bilp import Limits
from origamig.call.admission_neighborhood import select_admission
from origamig.call.consolidation_neighborhood import select_consolidation
from origamig.call.decision import Decision, Status, decide
from origamig.call.goals import CallWeights
from origamig.call.kinds import CallKind, ScopeMode
from origamig.call.neighborhood import Neighborhood
from origamig.call.neighborhood_bounds import Bounds
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import VmSpec, Weights
from origamig.judge.fit import fits_beside
from origamig.plan.steps import DEFAULT_BANDWIDTH_GBIT_S


@dataclass(frozen=True)
class CallOptions:
    """How each call is decided beyond its solver and limits (`decision.decide`): how many targets
    without a valid move order it excludes and solves again, the bandwidth its plan's moves copy
    memory at, whether its LP bound runs beside the solver (a one-shot process), and whether the
    fast primal answer is the solver's start; work of the caller's to do while a solver works (a
    one-shot command's imports: `backends.base.Once`)."""

    no_good_limit: int = 0
    bandwidth_gbit_s: float = DEFAULT_BANDWIDTH_GBIT_S
    bound_alongside: bool = False
    primal: bool = False
    while_waiting: Callable[[], object] | None = None


@dataclass(frozen=True)
class Deadline:
    """When the calls of a solve must have ended: `limit_s` seconds of `clock` after `started`, and the
    most one call's solver may take (`call_limit_s`, None: whatever is left)."""

    started: float
    limit_s: float
    call_limit_s: float | None = None
    clock: Callable[[], float] = field(default=time.perf_counter, compare=False)

    @classmethod
    def after(
        cls, limit_s: float, call_limit_s: float | None = None, started: float | None = None
    ) -> Deadline:
        """`limit_s` seconds of `time.perf_counter()` from `started` (default: now)."""
        return cls(time.perf_counter() if started is None else started, limit_s, call_limit_s)

    def left(self) -> float:
        return self.started + self.limit_s - self.clock()


@dataclass(frozen=True)
class Call:
    """One call of the sequence: its neighborhood, the weights it decided with, its decision (on the
    state before it)."""

    neighborhood: Neighborhood
    decision: Decision
    weights: Weights

    @property
    def admitted(self) -> tuple[str, ...]:
        d = self.decision
        return tuple(v for v in self.neighborhood.pending if d.applied and v in d.changed)


@dataclass(frozen=True)
class CallSequence:
    """The calls made, the state they end in, and where each pending VM stands."""

    calls: tuple[Call, ...]
    final: DataCenter
    tried: dict[str, int]  # pending VM → index of the last admission call that held it
    outright: tuple[str, ...]  # pending VMs Algorithm 1 found no PM for (count test)
    untried: tuple[str, ...]  # pending VMs no call reached (call budget or time spent)
    out_of_time: bool = False  # a call was not made because the deadline was (nearly) reached

    @property
    def applied(self) -> tuple[Call, ...]:
        return tuple(c for c in self.calls if c.decision.applied)


class _Run:
    """The state the calls share: the state they change, the calls made, the budget."""

    def __init__(
        self,
        dc: DataCenter,
        goal: CallWeights,
        solver: str,
        limits: Limits,
        options: CallOptions,
        max_calls: int | None,
        deadline: Deadline | None = None,
    ) -> None:
        self.state = dc.copy()
        self.goal, self.solver, self.limits, self.options = goal, solver, limits, options
        self.max_calls = max_calls
        self.deadline = deadline
        self.calls: list[Call] = []
        self.tried: dict[str, int] = {}
        self.out_of_time = False

    def budget_left(self) -> bool:
        """Whether one more call may start: within `max_calls`, and with a deadline, more time left
        than the previous call spent outside its solver."""
        if self.max_calls is not None and len(self.calls) >= self.max_calls:
            return False
        if self.deadline is None or not self.calls:  # the first call is always made
            return True
        before = self.calls[-1].decision.timings if self.calls else {}
        overhead = sum(s for phase, s in before.items() if phase != "solve_s")
        if self.deadline.left() > overhead:
            return True
        self.out_of_time = True
        return False

    def call(self, nb: Neighborhood, weights: Weights) -> bool:
        """Decide one call on the state; apply its plan to the state when it is applied."""
        o = self.options
        limits, deadline = self.limits, None
        if self.deadline is not None:  # this call may take what is left (at most its own limit)
            left = max(0.0, self.deadline.left())
            cap = self.deadline.call_limit_s
            limits = replace(limits, time_limit_s=left if cap is None else min(cap, left))
            deadline = time.perf_counter() + left
        decision = decide(
            self.state,
            nb.pms,
            nb.pending,
            weights,
            self.solver,
            limits,
            o.no_good_limit,
            o.bandwidth_gbit_s,
            bound_alongside=o.bound_alongside,
            primal=o.primal,
            while_waiting=o.while_waiting,
            deadline=deadline,
        )
        self.calls.append(Call(nb, decision, weights))
        for v in nb.pending:
            self.tried[v] = len(self.calls) - 1
        if not decision.applied or decision.plan is None:
            return False
        final = decision.plan.final_placement  # its order: the one the plan left the VMs in
        changed = decision.changed  # the VMs whose place the plan changes
        self.state.apply_placement({v: pl for v, pl in final.items() if v in changed})
        return True

    def admission(self, nb: Neighborhood) -> list[str]:
        """One admission call; the pending VMs it admitted."""
        self.call(nb, self.goal.admission(self.state, nb.pms))
        return [v for v in nb.pending if v in self.state.placement]


def run_calls(
    dc: DataCenter,
    goal: CallWeights,
    bounds: Bounds,
    solver: str,
    limits: Limits,
    *,
    max_calls: int | None = None,
    scope: Sequence[int] | None = None,
    scope_kind: ScopeMode = ScopeMode.ALL,
    options: CallOptions = CallOptions(),
    deadline: Deadline | None = None,
) -> CallSequence:
    """Admission calls until every pending VM is admitted or retired, then consolidation calls, each
    decided with the weights of `goal`; on the PMs of `scope` when given (kind `scope_kind`). With a
    `deadline`, the calls share it (see the module docstring)."""
    run = _Run(dc, goal, solver, limits, options, max_calls, deadline)
    if scope is not None:
        queue = _scoped(run, tuple(dict.fromkeys(scope)), scope_kind)
        return CallSequence(tuple(run.calls), run.state, run.tried, (), tuple(queue), run.out_of_time)
    outright: list[str] = []
    queue = list(run.state.pending)
    retired: list[str] = []
    while queue and run.budget_left():
        nb = select_admission(run.state, queue, bounds)
        if goal.admits_first:
            nb = _with_hosts_as_is(run.state, nb)
        outright += [v for v in nb.rejected if v not in outright]
        queue = [v for v in queue if v not in nb.rejected]
        if not nb.pending:
            break
        admitted = run.admission(nb)
        # A call that admits some of its VMs leaves the others queued: the state changed, and the
        # next neighborhood is built for them on it. A call that admits none retires them all.
        retired += [v for v in nb.pending if not admitted]
        queue = [v for v in queue if v not in (admitted or nb.pending)]
    if goal.admits_first:
        _second_chance(run, retired)
    _consolidate(run, bounds)
    return CallSequence(
        tuple(run.calls), run.state, run.tried, tuple(outright), tuple(queue), run.out_of_time
    )


def _with_hosts_as_is(dc: DataCenter, nb: Neighborhood) -> Neighborhood:
    """`nb` with, for each of its pending VMs, the first server where the VM fits as the cluster now
    is (when Algorithm 1 left it out): a goal that admits with the fewest moves then sees a way to
    admit each VM without moving any other, however far from the call's other servers it lies."""
    extra = [j for v in nb.pending if (j := fits_now(dc, dc.pending[v])) is not None]
    pms = tuple(dict.fromkeys((*nb.pms, *extra)))
    return nb if pms == nb.pms else replace(nb, pms=pms)


def _second_chance(run: _Run, retired: Sequence[str]) -> None:
    """A retired VM that fits some server as the cluster now is (the arrival rule finds a place)
    gets one call on that server: no VM that fits is turned away because its first call did not
    hold the right servers."""
    for v in retired:
        if not run.budget_left() or v not in run.state.pending:
            continue
        j = fits_now(run.state, run.state.pending[v])
        if j is not None:
            run.admission(Neighborhood((j,), (v,), (), CallKind.ADMISSION))


def fits_now(dc: DataCenter, vm: VmSpec) -> int | None:
    """The first PM (data-center order) where `vm` fits as the cluster is now — CPU, RAM and every GI
    at a permitted start beside the GIs there (an exact search, `judge.fit`) — or None."""
    for j in range(len(dc.pms)):
        if dc.fits_resources(vm, j):
            used = [dc.occupancy(j, k) for k in range(dc.gpu_count(j))]
            if fits_beside(dc.pms[j], vm, used):
                return j
    return None


def _consolidate(run: _Run, bounds: Bounds, scope: tuple[int, ...] | None = None) -> None:
    """Up to `rounds` rounds of consolidation calls (on `scope`, or per class with Γ_h ≥ 1)."""
    for _ in range(run.goal.rounds):
        changed = False
        if scope is not None:
            if run.budget_left():
                weights = run.goal.consolidation(run.state.pms)
                changed = run.call(Neighborhood(scope, (), (), CallKind.CONSOLIDATION), weights)
        else:
            for h in _classes_worth_a_call(run.state):
                if not run.budget_left():
                    break
                nb = select_consolidation(run.state, h, run.goal.consolidation(run.state.pms), bounds)
                if nb.pms:
                    changed |= run.call(nb, run.goal.consolidation(run.state.pms))
        if not changed:
            break


def _scoped(run: _Run, pms: tuple[int, ...], kind: ScopeMode) -> list[str]:
    """Calls on the PMs `pms` only; the pending VMs no call reached (budget spent)."""
    pending = tuple(run.state.pending)
    if not run.goal.admits_first:  # one call trades admission against everything else
        if pms and run.budget_left():
            run.call(Neighborhood(pms, pending, (), kind), run.goal.consolidation(run.state.pms))
        return [] if run.calls else list(pending)
    if pending and pms and run.budget_left():
        run.admission(Neighborhood(pms, pending, (), kind))
    if pms:
        _consolidate(run, Bounds(), pms)
    return [v for v in pending if v not in run.tried]


def _classes_worth_a_call(dc: DataCenter) -> list[str]:
    """GPU classes with Γ_h ≥ 1 (an active GPU more than their slices need), largest Γ_h first."""
    gammas = sorted(((dc.gamma(h), h) for h in dc.classes), key=lambda t: (-t[0], t[1]))
    return [h for gamma, h in gammas if gamma >= 1]


def first_status(calls: Sequence[Call]) -> Status:
    """The sequence's status: improved when some call applied a plan, else the first call's status."""
    if any(c.decision.applied for c in calls):
        return Status.IMPROVED
    return calls[0].decision.status if calls else Status.UNCHANGED
