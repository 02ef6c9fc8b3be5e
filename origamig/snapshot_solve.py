"""`origamig solve` as a library call: neighborhood → restricted BILP → plan → decision → outcome.

The decision is the OrigaMIG rule (SPEC §3): Eq. (5) of the solver's placement minus δ_i per
parking move inside a PM and 2δ_i per parking move between PMs must beat Eq. (5) of the current
placement strictly, else nothing changes. Both sides are computed by `objective.evaluate` over the
whole snapshot (the part outside the neighborhood adds the same constant to both). The outcome's
`placement` is the state after the plan — the input state when the status is `unchanged` or
`plan_infeasible` — and it is checked by the independent checker before it is returned.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from origamig.bilp import Limits, RegionSolution, solve_region
from origamig.check import check_placement
from origamig.datacenter import DataCenter
from origamig.errors import UserError
from origamig.executor import plan_migrations
from origamig.objective import Objective, evaluate
from origamig.plan import Infeasible, Plan, PowerOff
from origamig.records import Placement, PmSpec, Weights
from origamig.snapshot import Snapshot, placement_json, snapshot_document

EPSILON = 1e-6  # "strictly better" tolerance on Eq. (5)
IMPROVED, UNCHANGED, PLAN_INFEASIBLE = "improved", "unchanged", "plan_infeasible"


class NeighborhoodError(UserError):
    """A `--neighborhood` value that names no PM of the snapshot."""


@dataclass(frozen=True)
class Region:
    """The PMs and pending VMs one solve optimizes, and how they were chosen."""

    mode: str  # all | auto | list
    pms: tuple[int, ...]
    pending: tuple[str, ...]
    rejected: tuple[str, ...] = ()  # pending VMs Algorithm 1 rejects outright (fit no PM even empty)
    note: str = ""


@dataclass(frozen=True)
class Outcome:
    """Everything `origamig solve` reports (see `to_json` for the SPEC §8 document)."""

    status: str
    region: Region
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

    @property
    def gain(self) -> float:
        return (self.proposed.value - self.parking_cost - self.before.value) if self.proposed else 0.0


def choose_region(dc: DataCenter, spec: str, weights: Weights) -> Region:
    """`all`, `auto` (Algorithm 1: admission if VMs are pending, else consolidation of the class
    with the largest Γ_h ≥ 1) or a comma-separated list of PM ids."""
    pending = tuple(dc.pending)
    if spec == "all":
        return Region("all", tuple(range(len(dc.pms))), pending)
    if spec == "auto":
        return _auto_region(dc, weights)
    ids = [s.strip() for s in spec.split(",") if s.strip()]
    unknown = [s for s in ids if s not in dc.index]
    if unknown or not ids:
        known = ", ".join(p.id for p in dc.pms[:8]) + (", ..." if len(dc.pms) > 8 else "")
        raise NeighborhoodError(
            [f"--neighborhood: {s!r} is not a PM id (PMs: {known})" for s in unknown]
            or ["--neighborhood: give auto, all, or a comma-separated list of PM ids"]
        )
    return Region("list", tuple(dict.fromkeys(dc.index[s] for s in ids)), pending)


def _auto_region(dc: DataCenter, weights: Weights) -> Region:
    from origamig.neighborhood import Bounds, select_admission, select_consolidation

    if dc.pending:
        nb = select_admission(dc, list(dc.pending), Bounds())
        note = "Algorithm 1 admission neighborhood"
        return Region("auto", nb.pms, nb.pending, nb.rejected, note)
    gammas = sorted(((dc.gamma(h), h) for h in dc.classes), key=lambda t: (-t[0], t[1]))
    for gamma, h in gammas:
        if gamma < 1:
            break
        nb = select_consolidation(dc, h, weights, Bounds())
        if nb.pms:
            return Region(
                "auto", nb.pms, (), (), f"Algorithm 1 consolidation neighborhood of class {h} (Γ_h={gamma})"
            )
    return Region("auto", (), (), (), "nothing to do: no pending VM and no class with Γ_h ≥ 1 worth a call")


def _parking_cost(plan: Plan, vms: Mapping[str, Any], weights: Weights) -> float:
    """δ_i per parking move inside a PM, 2δ_i per parking move between PMs (SPEC §3)."""
    return sum(weights.delta(vms[m.vm]) * (2 if m.inter_pm else 1) for m in plan.moves if m.parking)


def solve_snapshot(
    snap: Snapshot,
    weights: Weights | None = None,
    solver: str = "highs",
    limits: Limits = Limits(),  # noqa: B008 — frozen record
    neighborhood: str = "auto",
) -> Outcome:
    """Optimize `snap` and decide; never mutates `snap`."""
    w = weights or snap.weights
    dc = snap.datacenter()
    region = choose_region(dc, neighborhood, w)
    current = dict(dc.placement)
    vms = dict(snap.vms)
    before = evaluate(dc.pms, vms, current, current, w)
    waiting = tuple(v for v in dc.pending if v not in region.pending and v not in region.rejected)
    not_admitted = tuple(region.pending) + region.rejected
    keep: dict[str, Any] = {
        "region": region,
        "admitted": (),
        "rejected": not_admitted,
        "waiting": waiting,
        "before": before,
        "after": before,
        "proposed": None,
        "parking_cost": 0.0,
        "solution": None,
        "plan": None,
        "infeasible_reason": None,
        "placement": current,
        "pms_out": snap.pms,
    }
    if not region.pms and not region.pending:
        return Outcome(UNCHANGED, **keep)
    sol = solve_region(dc, region.pms, region.pending, w, solver=solver, limits=limits)
    proposed_placement = {**current, **sol.target}
    keep["proposed"] = evaluate(dc.pms, vms, proposed_placement, current, w)
    keep["solution"] = sol
    changed = {v: pl for v, pl in sol.target.items() if current.get(v) != pl}
    if not changed:
        return Outcome(UNCHANGED, **keep)
    plan = plan_migrations(dc, changed)
    if isinstance(plan, Infeasible):
        return Outcome(PLAN_INFEASIBLE, **{**keep, "infeasible_reason": plan.reason})
    keep["parking_cost"] = _parking_cost(plan, vms, w)
    if not keep["proposed"].value - keep["parking_cost"] > before.value + EPSILON:
        return Outcome(UNCHANGED, **keep)
    final = dict(plan.final_placement) or proposed_placement
    off = {s.pm for s in plan.steps if isinstance(s, PowerOff)}
    hosts = {pl.pm for pl in final.values()}
    keep["pms_out"] = tuple(
        replace(pm, powered_off=(pm.id in off or pm.powered_off) and j not in hosts)
        for j, pm in enumerate(snap.pms)
    )
    keep["admitted"] = tuple(v for v in region.pending if v in final)
    keep["rejected"] = tuple(v for v in region.pending if v not in final) + region.rejected
    keep.update(after=evaluate(dc.pms, vms, final, current, w), plan=plan, placement=final)
    outcome = Outcome(IMPROVED, **keep)
    _guard(snap, outcome)
    return outcome


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


def outcome_json(snap: Snapshot, out: Outcome) -> dict[str, Any]:
    """The `solve --json` document: exactly the SPEC §8 keys, plus details under other keys."""
    res = out.solution.result if out.solution else None
    solver = {
        "name": res.solver if res else None,
        "termination": res.termination if res else "not_run",
        "proved_optimal": bool(res and res.proved_optimal),
        "objective": _num(res.objective) if res else None,
        "bound": _num(res.bound) if res else None,
        "gap": res.gap if res else None,
        "wall_s": res.wall_s if res else 0.0,
    }
    if out.solution:
        solver |= {"timings": out.solution.timings, "work": out.solution.work, "size": out.solution.size}
    return {
        "status": out.status,
        "admitted": list(out.admitted),
        "rejected": list(out.rejected),
        "waiting": list(out.waiting),
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
        "plan_cost": out.plan.cost.to_dict() if out.plan else None,
        "plan_infeasible_reason": out.infeasible_reason,
        "placement": placement_json(snap.pms, out.placement),
        "neighborhood": {
            "mode": out.region.mode,
            "pms": [snap.pms[j].id for j in out.region.pms],
            "pending": list(out.region.pending),
            "note": out.region.note,
        },
    }


def output_document(snap: Snapshot, out: Outcome) -> dict[str, Any]:
    """The snapshot `--out` writes: the output state, every other field of the input kept."""
    off = [pm.id for pm in out.pms_out if pm.powered_off]
    return snapshot_document(snap, out.placement, powered_off=off)
