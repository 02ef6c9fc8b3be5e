"""One OrigaMIG call run on its neighborhood, as the Work the simulator applies, with why each pending
VM it leaves out is rejected (`call/reasons.py`)."""

from __future__ import annotations

import time

from origamig.bilp.backends.base import Limits
from origamig.call import reasons
from origamig.call.decision import Decision, decide
from origamig.call.kinds import CallKind
from origamig.call.neighborhood import Neighborhood
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Weights
from origamig.policies.base import CallStats, Work

# The phases of a call's wall time (bound_s: the LP bound before the MIP, docs/model.md#no-change-proof).
PHASES = ("select_s", "build_s", "compile_s", "bound_s", "solve_s", "decode_s", "plan_s")


def run_call(
    dc: DataCenter,
    nb: Neighborhood,
    weights: Weights,
    solver: str,
    limits: Limits,
    select_s: float = 0.0,
    admits_first: bool = False,
    gpu_order: bool = False,
    primal: bool = False,
) -> Work:
    """One call on neighborhood `nb` (`decision.decide`), as the Work the simulator applies.

    Pending VMs of the call that an applied plan does not admit are rejected, and so are those
    Algorithm 1 rejected outright; `Work.reasons` says why each is (`call/reasons.py`, judged on the
    state the call leaves; `admits_first`: whether its goal ranks admitting first)."""
    t0 = time.perf_counter()
    decision = decide(dc, nb.pms, nb.pending, weights, solver, limits, gpu_order=gpu_order, primal=primal)
    sol = decision.solution
    applied = decision.applied
    admitted = tuple(v for v in nb.pending if v in decision.changed) if applied else ()
    rejected = tuple(v for v in nb.pending if v not in admitted) + nb.rejected
    why = _reasons(dc, nb, decision, weights, admitted, admits_first) if rejected else {}
    stats = CallStats(
        status=decision.status,
        changed=bool(decision.changed),
        termination=sol.result.termination,
        proved_optimal=sol.result.proved_optimal,
        gpu_class=nb.gpu_class,
        pms=len(nb.pms),
        vms=nb.vm_count(dc),
        gain=decision.gain,
        detail=decision.reason,
    )
    return Work(
        kind=CallKind(nb.kind),  # Algorithm 1's (a scope given by hand is `solve`'s only)
        pms=frozenset(nb.pms),
        target=decision.changed if applied else {},
        admitted=admitted,
        rejected=rejected,
        plan=decision.plan if applied else None,
        wall_s=select_s + (time.perf_counter() - t0),
        modeled_s=sol.modeled_s,
        applied=applied,
        phases_s={"select_s": select_s, **decision.timings},
        call=stats,
        reasons=why,
    )


def _reasons(
    dc: DataCenter,
    nb: Neighborhood,
    decision: Decision,
    weights: Weights,
    admitted: tuple[str, ...],
    admits_first: bool,
) -> dict[str, str]:
    """Why each pending VM of the call that it does not admit is rejected, on the state it leaves."""
    end = dc
    if decision.applied:
        end = dc.copy()
        end.apply_placement(dict(decision.changed))
    out: dict[str, str] = {}
    for v in nb.rejected:
        out[v] = outright(dc, v).reason
    for v in nb.pending:
        if v not in admitted:
            vm = dc.pending[v]
            verdict = reasons.fits_nowhere(dc.pms, vm) or reasons.of_call(
                end, vm, decision, weights, len(nb.pms), admits_first
            )
            out[v] = verdict.reason
    return out


def outright(dc: DataCenter, v: str) -> reasons.Verdict:
    """Why Algorithm 1 left pending VM `v` out of every call (its count test found no PM)."""
    return reasons.fits_nowhere(dc.pms, dc.pending[v]) or reasons.Verdict(True, reasons.OUTRIGHT)
