"""OrigaMIG (paper §5): a greedy arrival rule, triggers, Algorithm 1 and restricted BILP calls.

Rule: an arriving VM goes where TC's best-fit rule puts it (`arrival="tc"`, the default), where
first fit does (`arrival="ff"`, the paper's rule: first PM in data-center order with the CPU/RAM,
each GI largest first on the lowest GPU of its class where the default GI placement finds a start)
or where FGD's rule does (`arrival="fgd"`, its typical VMs read from the arrivals so far: FGD's
placement with OrigaMIG's calls); otherwise it joins the pending queue Q. Every `check_interval_s`
(10 s), if no call is running: an admission call when Q is non-empty, else a consolidation call for
the first class whose gap Γ_h ≥ θ (O(1) counters); with `calls_per_step` > 1, further consolidation
calls beside it on PMs no call of the check holds. A call selects its neighborhood with Algorithm 1
(or at random), solves the restricted BILP, plans the migrations, and applies only a strictly better
plan (`call/decision.py`; one call as a Work: `call_work.py`, the reuse of unchanged calls:
`reuse.py`, the counters: `call_counters.py`).
Complexity: an arrival is one pass over the PMs O(|M|·|K|); a check is O(#classes); a call is one pass
over the PMs plus a bounded BILP. Ties: lowest PM, GPU and start, oldest pending VM first.
"""

from __future__ import annotations

import math
import random
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from origamig.bilp.backends.base import make_limits
from origamig.call.admission_neighborhood import select_admission
from origamig.call.consolidation_neighborhood import Consolidation, select_consolidation
from origamig.call.goals import CallWeights
from origamig.call.kinds import CallKind
from origamig.call.neighborhood import Neighborhood
from origamig.call.neighborhood_bounds import Bounds
from origamig.call.random_neighborhood import select_random
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import NO_GPU_CLASS, VmSpec, Weights
from origamig.memo import remember
from origamig.policies.arrival_rule import choose_pm, first_fit
from origamig.policies.base import ArrivalDecision, Deferred, Placed, Rejection, Work, register
from origamig.policies.fgd import FgdRule
from origamig.policies.optimizer.call_counters import CallCounters
from origamig.policies.optimizer.call_work import outright, run_call
from origamig.policies.optimizer.options import Arrival, OrigaMIGOptions
from origamig.policies.optimizer.reuse import REUSE_CAPACITY, region_key, reusable
from origamig.policies.optimizer.solve_pool import CallJob, solve_calls
from origamig.policies.optimizer.triggers import Triggers
from origamig.policies.tc.rule import tc_fit_on_pm


@register("origamig")
class OrigaMIG:
    """The OrigaMIG policy; every parameter of the paper's Table 11 is an option."""

    name = "origamig"

    options_type = OrigaMIGOptions  # the policy registry reads the option names from it

    def __init__(
        self, options: OrigaMIGOptions | None = None, *, weights: Weights | None = None, **keywords: Any
    ) -> None:
        """The policy with `options`, or with the defaults changed by `keywords` (the option names:
        `OrigaMIGOptions`, validated there); `weights` are the objective's (default: the paper's)."""
        self.options = o = OrigaMIGOptions.of(keywords, options)
        base = weights or Weights()
        if o.delta is not None:
            base = replace(base, migration=o.delta)
        if o.delta_per_gb is not None:
            base = replace(base, migration_per_gb=o.delta_per_gb)
        self.weights = base
        self.call_weights = CallWeights(o.goal, base)  # the weights of each kind of call
        self.solver = o.solver
        self.limits = make_limits(
            o.solver, o.time_limit_s, o.threads, o.deterministic, o.work_limit, o.safety_net_s, o.effort_limit
        )
        self.bounds = Bounds(m_max=o.m_max, n_max=o.n_max, bound=o.bound)
        self.triggers = Triggers(theta=o.theta, timer_s=o.timer_s)
        self.random = random.Random(o.seed) if o.random_neighborhoods else None
        self.admission_calls = o.admission_calls
        self.consolidation_calls = o.consolidation_calls
        self.check_interval_s = o.check_interval_s
        self.consolidation = o.consolidation
        self.arrival = o.arrival
        self.fgd_rule = FgdRule() if o.arrival is Arrival.FGD else None  # FGD's rule and its typical VMs
        # Rotating consolidation (an extension): a call that changes nothing marks its PMs visited
        # and the next call of the class takes receivers not visited yet; the class is silenced
        # only when no unvisited receiver is left. Any applied change or departure starts over.
        self.rotate = o.rotate
        self._visited: dict[str, set[int]] = {}
        self.spill = o.spill  # sources not kept in S may receive (an extension)
        # Adaptive neighborhoods (an extension): a consolidation call proved to change nothing is
        # retried at the next check on twice as many PMs (N_max scaled alike), up to `grow_to`, before
        # its class is silenced; a call stopped by its budget halves the class's size again.
        self.grow_to = o.grow_to
        self._m_max: dict[str, int] = {}
        # Side-by-side calls (an extension): one check may start up to `calls_per_step` calls on
        # disjoint PMs (the simulator locks each call's PMs before asking again) — at most one
        # admission call, then consolidation calls, several per class on the class's PMs not yet
        # held. A class is silenced only when every call of it started at that check changed nothing.
        self.calls_per_step = o.calls_per_step
        # ... chosen in turn and, with `solve_workers` > 1, solved together in worker processes
        # (`solve_pool`): the same calls and outcomes as solving each before choosing the next.
        self.solve_workers = o.solve_workers
        self._ready: deque[Work] = deque()  # calls of this check solved, not yet handed out
        self._step_over = False  # the batch's last choice found no call (answered at the next ask)
        self._step_t: float | None = None  # the check whose calls are counted below
        self._step_calls = 0
        self._step_exhausted: set[str] = set()  # classes with no PM left to call on at this check
        self._class_running: dict[str, tuple[int, bool]] = {}  # class → (calls running, any applied)
        # A consolidation call proved to change nothing is not solved again on the same state of the
        # same PMs (its BILP would be the same model): the stored outcome is reused, duration and all.
        self.reuse_unchanged = o.reuse_unchanged
        self._unchanged: dict[tuple[Any, ...], Work] = {}
        self._vm_class: dict[str, str] = {}
        # Told the PMs of each call as soon as its neighborhood is chosen, before it solves (the
        # service holds them meanwhile, as the simulator holds a call's PMs for its duration).
        self.on_select: Callable[[frozenset[int]], None] | None = None
        # Told each call on PMs as it starts: the state it was chosen on, its neighborhood, its outcome
        # and the check's time (benchmarks record calls with it).
        self.on_call: Callable[[DataCenter, Neighborhood, Work, float], None] | None = None
        self._counters = CallCounters()

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (a run's checkpoint) without the reuse cache (it only saves solver time) and
        without its observers (a process's own)."""
        return {**self.__dict__, "_unchanged": {}, "on_select": None, "on_call": None}

    # --- arrivals and departures ----------------------------------------------------------------
    def arrive(self, dc: DataCenter, vm: VmSpec, now: float, locked: frozenset[int]) -> ArrivalDecision:
        self._vm_class[vm.id] = vm.gpu_class
        if self.fgd_rule is not None:
            self.fgd_rule.observe(vm)
            fit = self.fgd_rule.place(dc, vm, locked)
        elif self.arrival is Arrival.FF:
            fit = first_fit(dc, vm, locked)
        else:
            fit = choose_pm(dc, vm, locked, tc_fit_on_pm)
        if not isinstance(fit, Rejection):
            return Placed(fit)
        if self.admission_calls:
            return Deferred(f"first fit failed ({fit.reason}); waits for an admission call")
        return fit

    def depart(self, dc: DataCenter, vm_id: str, now: float) -> None:
        h = self._vm_class.pop(vm_id, None)
        # A VM with GIs ran on a PM of its class; one without GIs may have run anywhere.
        self.triggers.departed(None if h is None or not h or h == NO_GPU_CLASS else frozenset({h}))
        self._visited.clear()

    # --- calls ------------------------------------------------------------------------------
    def next_check(self, now: float) -> float | None:
        if not (self.admission_calls or self.consolidation_calls):
            return None
        step = self.check_interval_s
        return (math.floor(now / step + 1e-9) + 1) * step

    def work(self, dc: DataCenter, now: float, locked: frozenset[int] = frozenset()) -> Work | None:
        if now != self._step_t:
            self._step_t, self._step_calls, self._step_exhausted = now, 0, set()
            self._ready.clear()
            self._step_over = False
        if self._ready:
            return self._ready.popleft()
        if self._step_over:  # the batch's last choice found no call: this ask's answer
            self._step_over = False
            return None
        self._ready.extend(self._start_calls(dc, now, locked))
        return self._ready.popleft() if self._ready else None

    def _start_calls(self, dc: DataCenter, now: float, locked: frozenset[int]) -> list[Work]:
        """The next call of this check, or with `solve_workers` > 1 all the calls left to start at it,
        chosen in turn (each off the PMs of those before) and then solved together."""
        wanted = 1 if self.solve_workers == 1 else self.calls_per_step
        chosen: list[Work | _Chosen] = []
        held = locked
        while len(chosen) < wanted and self._step_calls < self.calls_per_step:
            pick = self._next_call(dc, now, held)
            if pick is None:
                self._step_over = bool(chosen)  # answered at the next ask, as if asked in turn
                break
            if self._step_calls:
                self._counters.count["calls_side_by_side"] += 1
            self._step_calls += 1
            chosen.append(pick)
            held = held | (pick.pms if isinstance(pick, Work) else frozenset(pick.nb.pms))
        jobs = [c.job for c in chosen if isinstance(c, _Chosen) and c.job is not None]
        solved = iter(solve_calls(dc, jobs, self.solve_workers))
        out: list[Work] = []
        for c in chosen:
            if isinstance(c, Work):
                out.append(c)
                continue
            work = next(solved) if c.job is not None else c.ready
            assert work is not None
            out.append(self._started(dc, c, work, now))
        return out

    def _next_call(self, dc: DataCenter, now: float, locked: frozenset[int]) -> Work | _Chosen | None:
        """The next call of this check off the `locked` PMs, chosen (solved later) or settled at once
        (no PM to call on): admission first, then consolidation."""
        t0 = time.perf_counter()
        if dc.pending and not self._step_calls:  # one admission call per check, the first one
            if not self.admission_calls:
                return Work(CallKind.ADMISSION, frozenset(), {}, rejected=tuple(dc.pending), applied=False)
            queue = list(dc.pending)
            if self.random is not None:
                nb = select_random(dc, self.random, self.bounds, queue=queue, locked=locked)
            else:
                nb = select_admission(dc, queue, self.bounds, locked)
            return self._choose(dc, nb, time.perf_counter() - t0)
        if not self.consolidation_calls:
            return None
        for h in self.triggers.due(dc, now):
            if h in self._step_exhausted:
                continue
            self.triggers.called(h, now)
            if self.random is not None:
                nb = select_random(dc, self.random, self.bounds, gpu_class=h, locked=locked)
            else:
                visited = frozenset(self._visited.get(h, ()))
                nb = select_consolidation(
                    dc,
                    h,
                    self.call_weights.consolidation(dc.pms),
                    self._bounds_of(h),
                    locked=locked,
                    reading=self.consolidation,
                    visited=visited,
                    spill=self.spill,
                )
            too_small = len(nb.pms) < (1 if self.consolidation is Consolidation.FILL else 2)
            if too_small and not locked.isdisjoint(dc.class_pms.get(h, ())):
                # The class's other PMs are held by calls of this check: no call, no verdict on h.
                self._step_exhausted.add(h)
                continue
            fresh = not self.rotate or any(j not in self._visited.get(h, ()) for j in nb.pms)
            if too_small or not fresh:
                # No PM to optimize, or (earlier reading) nothing to empty or nowhere to put it, or
                # (rotating) every receiver already held by a call that changed nothing.
                self.triggers.unchanged(dc, h)
                self._visited.pop(h, None)
                self._counters.calls["consolidation_skipped"] += 1
                continue
            return self._choose(dc, nb, time.perf_counter() - t0)
        return None

    def _bounds_of(self, h: str) -> Bounds:
        """Class h's neighborhood bounds: the configured ones, or larger ones grown by `grow_to`."""
        m = self._m_max.get(h, self.bounds.m_max)
        if m == self.bounds.m_max:
            return self.bounds
        return replace(self.bounds, m_max=m, n_max=self.bounds.n_max * m // self.bounds.m_max)

    def _grown(self, h: str, work: Work) -> bool:
        """After an unchanged call of class h: grow h's neighborhood for a retry (True) or settle it."""
        if self.grow_to is None or work.call is None:
            return False
        base, m = self.bounds.m_max, self._m_max.get(h, self.bounds.m_max)
        if work.call.proved_optimal and m < self.grow_to:
            self._m_max[h] = min(2 * m, self.grow_to)
            self._counters.count["neighborhoods_grown"] += 1
            return True
        # Proved at the largest size: start small again when h wakes; stopped by the budget: halve.
        self._m_max[h] = base if work.call.proved_optimal else max(base, m // 2)
        return False

    def _choose(self, dc: DataCenter, nb: Neighborhood, select_s: float) -> Work | _Chosen:
        """The call on `nb`: settled at once when it has no PM, its stored outcome when one is known
        (`reuse_unchanged`), else the job that solves it."""
        if nb.pms and self.on_select is not None:
            self.on_select(frozenset(nb.pms))
        if not nb.pms:
            why = {v: outright(dc, v).reason for v in nb.rejected}
            kind = CallKind(nb.kind)
            return Work(
                kind, frozenset(), {}, rejected=nb.rejected, applied=False, wall_s=select_s, reasons=why
            )
        key = region_key(dc, nb) if self.reuse_unchanged and nb.kind == CallKind.CONSOLIDATION else None
        known = self._unchanged.get(key) if key is not None else None
        if known is not None:
            self._counters.calls["reused"] += 1
            return _Chosen(nb, key, ready=replace(known, phases_s={"select_s": select_s}))
        weights = (
            self.call_weights.admission(dc, nb.pms)
            if nb.kind == CallKind.ADMISSION
            else self.call_weights.consolidation(dc.pms)
        )
        arguments = (
            nb,
            weights,
            self.solver,
            self.limits,
            select_s,
            self.call_weights.admits_first,
            self.options.gpu_order,
            self.options.primal,
        )
        return _Chosen(nb, key, job=CallJob(run_call, arguments))

    def _started(self, dc: DataCenter, chosen: _Chosen, work: Work, now: float) -> Work:
        """`work`, the outcome of the call chosen on `dc` at the check at `now`, counted (and
        remembered when proved unchanged); `on_call` is told."""
        nb = chosen.nb
        if chosen.job is not None and self.options.call_time_scale != 1:  # a reused outcome is scaled
            work = replace(work, modeled_s=work.modeled_s * self.options.call_time_scale)
        if self.on_call is not None:
            self.on_call(dc, nb, work, now)
        if chosen.job is not None and chosen.key is not None and reusable(work, self.limits.budget_only):
            remember(self._unchanged, chosen.key, work, REUSE_CAPACITY)
        assert work.call is not None
        if nb.kind == CallKind.CONSOLIDATION and nb.gpu_class is not None:
            running, applied = self._class_running.get(nb.gpu_class, (0, False))
            self._class_running[nb.gpu_class] = (running + 1, applied)
        self._counters.started(nb.kind, work)
        return work

    def finished(self, dc: DataCenter, work: Work, now: float) -> None:
        h = _class_of(work, dc) if work.kind == CallKind.CONSOLIDATION else None
        # An unchanged call silences its class (or, rotating, marks its PMs visited) unless its
        # neighborhood grew: then the next check calls the class again, on more PMs. With calls side
        # by side, the class's last call to end decides, and only if none of them changed anything.
        if h is not None and self._last_of_class(h, work) and not self._grown(h, work):
            if self.rotate:
                self._visited.setdefault(h, set()).update(work.pms)
            else:
                self.triggers.unchanged(dc, h)
        if work.applied:
            self._visited.clear()
        self._counters.finished(work)

    def _last_of_class(self, h: str, work: Work) -> bool:
        """Count `work`, a call of class h, as ended: True when it was h's last call running and no
        call of h since the check that started them changed anything."""
        running, applied = self._class_running.pop(h, (1, False))
        applied = applied or work.applied
        if running > 1:
            self._class_running[h] = (running - 1, applied)
            return False
        return not applied

    def counters(self) -> dict[str, float]:
        return self._counters.report()


@dataclass(frozen=True)
class _Chosen:
    """A call chosen at a check: its neighborhood, its reuse key, and its known outcome or its job."""

    nb: Neighborhood
    key: tuple[Any, ...] | None
    ready: Work | None = None
    job: CallJob | None = None


def _class_of(work: Work, dc: DataCenter) -> str | None:
    """The class a consolidation Work was for (recorded by the neighborhood in its call stats)."""
    return work.call.gpu_class if work.call is not None else None
