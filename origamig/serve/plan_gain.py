"""A plan's `gain` in the units of the snapshot's objective (docs/service.md#plans).

A call decides with its goal's weights — under `balanced`, tiers computed for its own neighborhood,
so that one more admitted VM outweighs any number of moves — and its own gain in those weights means
nothing outside the call. A plan reports instead how much Eq. (5) (docs/model.md#objective) with the
seed snapshot's weights rises from the state the plan starts from to the state it ends in: the
objective that `origamig check` and `origamig solve` print, over the PMs the plan touches (the PM and
GPU terms change nowhere else) and the VMs on them or admitted to them.
"""

from __future__ import annotations

from collections.abc import Mapping

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, VmSpec, Weights
from origamig.judge.objective import evaluate
from origamig.policies.base import Work


def snapshot_gain(
    dc: DataCenter, work: Work, weights: Weights, waiting: Mapping[str, VmSpec] | None = None
) -> float | None:
    """Eq. (5) with `weights` after `work`'s target minus before it, on `dc` as the plan starts (None
    for a call without a target); pending VMs are read from `dc` or `waiting` (those a plan holds)."""
    if not work.target:
        return None
    region = set(work.pms) | {pl.pm for pl in work.target.values()}
    region |= {dc.placement[v].pm for v in work.target if v in dc.placement}
    before: dict[str, Placement] = {v: dc.placement[v] for j in region for v in dc.vms_on(j)}
    after = {v: pl for v, pl in before.items() if v not in work.target}
    after.update({v: pl for v, pl in work.target.items() if pl.pm in region})
    more = waiting or {}
    vms = {v: dc.vms.get(v) or dc.pending.get(v) or more[v] for v in {*before, *after}}
    then = evaluate(dc.pms, vms, before, before, weights, region, vms)
    now = evaluate(dc.pms, vms, after, before, weights, region, vms)
    return round(now.value - then.value, 6)
