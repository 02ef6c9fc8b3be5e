"""Adopting a target on the live state (docs/plans.md#in-time): whether a plan still runs on it, a plan
for what of a target still fits, a plan cut into its independent parts, and a target refitted on
its PMs when some of its slots were taken."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement
from origamig.errors import PlacementError
from origamig.plan.executor import plan_migrations
from origamig.plan.steps import Plan, Step
from origamig.policies.arrival_rule import default_fit_on_pm, gi_order
from origamig.runtime.migration import MigrationModel, held_at_destination, moves_of


def runs_now(dc: DataCenter, plan: Plan, model: MigrationModel) -> bool:
    """Whether `plan` runs step by step on `dc` as it is (each move's destination free while its VM
    still holds its source)."""
    probe = dc.copy()
    try:
        for move in moves_of(plan.steps, probe, model):
            if move.vm is None or move.target is None:
                continue
            if move.source is None:
                vm = probe.pending[move.vm].placed_on(probe.pms[move.target.pm], move.target)
            else:
                vm = probe.vms[move.vm]
            probe.hold("probe", *held_at_destination(vm, move))
            probe.unhold("probe")
            if move.source is None:
                probe.place(vm, move.target)
            else:
                probe.move(move.vm, move.target)
    except (PlacementError, KeyError):
        return False
    return True


def plans_for(
    dc: DataCenter,
    target: Mapping[str, Placement],
    model: MigrationModel,
    keep_off: frozenset[int] = frozenset(),
) -> list[Plan]:
    """A plan for `target` on `dc`; when it has none as a whole, one for each of its parts (VMs
    connected by the PMs they leave and reach) that has one. No VM parks on a PM of `keep_off`."""
    whole = _plan(dc, target, model, keep_off)
    if whole is not None:
        return [whole]
    out = []
    for part in target_parts(target, dc):
        plan = _plan(dc, part, model, keep_off)
        if plan is not None:
            out.append(plan)
    return out


def replan(
    dc: DataCenter,
    target: Mapping[str, Placement],
    model: MigrationModel,
    keep_off: frozenset[int] = frozenset(),
) -> list[Plan]:
    """Plans for the rest of a stale plan: `target` where it still fits (`plans_for`), and a VM whose
    target no longer fits refitted on its target PM (the default GI placement, on the state the
    other plans leave), for a VM that changes PM or starts. No VM parks on a PM of `keep_off`."""
    plans = plans_for(dc, target, model, keep_off)
    covered = {s.vm for p in plans for s in p.steps if hasattr(s, "vm")}
    missing = [v for v in target if v not in covered]
    if not missing:
        return plans
    probe = dc.copy()
    probe.apply_placement({v: target[v] for v in target if v in covered})
    refitted: dict[str, Placement] = {}
    for v in missing:
        here = probe.placement.get(v)
        if here is not None and here.pm == target[v].pm:
            continue  # a move inside one PM is not refitted
        vm = probe.vms.get(v) or probe.pending[v]
        if not probe.fits_resources(vm, target[v].pm) and here is None:
            continue
        for variant in vm.variants():
            pl = default_fit_on_pm(probe, target[v].pm, variant, gi_order(variant))
            if pl is not None and pl != target[v]:
                refitted[v] = pl
                break
    return plans + plans_for(dc, refitted, model, keep_off) if refitted else plans


def _plan(
    dc: DataCenter, target: Mapping[str, Placement], model: MigrationModel, keep_off: frozenset[int]
) -> Plan | None:
    try:
        plan = plan_migrations(dc, dict(target), bandwidth_gbit_s=model.bandwidth_gbit_s, keep_off=keep_off)
    except PlacementError:
        return None
    return plan if isinstance(plan, Plan) else None


def _components(pm_sets: Sequence[Iterable[int]]) -> list[int]:
    """For each set of PMs, a label shared by exactly the sets connected to it through common PMs."""
    parent: dict[int, int] = {}

    def root(j: int) -> int:
        while parent.setdefault(j, j) != j:
            parent[j] = parent[parent[j]]
            j = parent[j]
        return j

    listed = [sorted(pms) for pms in pm_sets]
    for pms in listed:
        for j in pms[1:]:
            parent[root(j)] = root(pms[0])
    return [root(pms[0]) for pms in listed]


def parts(steps: Sequence[Step], dc: DataCenter) -> list[list[Step]]:
    """`steps` cut into the parts whose moves share no PM (each in the plan's order)."""
    moves = moves_of(steps, dc, MigrationModel())
    groups: dict[int, list[Step]] = {}
    for m, label in zip(moves, _components([m.pms for m in moves]), strict=True):
        groups.setdefault(label, []).extend(steps[i] for i in m.steps)
    return list(groups.values())


def target_parts(target: Mapping[str, Placement], dc: DataCenter) -> list[dict[str, Placement]]:
    """`target` cut into the parts whose VMs share no PM (the one each leaves or reaches)."""
    here = dc.placement.get
    touched = [{pl.pm} | ({here(v).pm} if v in dc.placement else set()) for v, pl in target.items()]  # type: ignore[union-attr]
    groups: dict[int, dict[str, Placement]] = {}
    for (v, pl), label in zip(target.items(), _components(touched), strict=True):
        groups.setdefault(label, {})[v] = pl
    return list(groups.values())
