"""The moves a rule-based policy decides (TC's compaction, FGD's descheduler, GRMU's stages), planned
by the migration executor and handed to the driver as a `Work`, and counted when it ends.

One definition for every policy, OrigaMIG's calls included: the call lasts its decision time
(`wall_s`; nothing in deterministic mode: `modeled_s` is 0 for a rule), then its plan runs in time on
the runtime's one migration model, each move holding only what it uses (docs/plans.md#in-time).
`Work.pms` are the PMs its VMs leave and reach and every PM a step of its plan touches.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement
from origamig.policies.base import Work

if TYPE_CHECKING:
    from origamig.call.kinds import CallKind
    from origamig.plan.steps import Plan


def plan_moves(dc: DataCenter, target: Mapping[str, Placement]) -> Plan | None:
    """The executor's plan for `target` on `dc`, or None when it finds none.

    The executor (networkx) is imported on first use, so that FF and MFI stay light to import."""
    from origamig.plan.executor import Infeasible, plan_migrations

    plan = plan_migrations(dc, dict(target))
    return None if isinstance(plan, Infeasible) else plan


def moves_work(
    kind: CallKind,
    dc: DataCenter,
    target: Mapping[str, Placement],
    plan: Plan | None,
    decide_s: float,
    admitted: Sequence[str] = (),
    rejected: Sequence[str] = (),
    reasons: Mapping[str, str] | None = None,
) -> Work:
    """The Work of a call that moves (and may start) the VMs of `target` by `plan`."""
    pms = {pl.pm for pl in target.values()} | {dc.placement[v].pm for v in target if v in dc.placement}
    if plan is not None:
        pms |= {dc.index[m.to_pm] for m in plan.moves} | {
            dc.index[m.from_pm] for m in plan.moves if m.from_pm
        }
    return Work(
        kind=kind,
        pms=frozenset(pms),
        target=target,
        admitted=tuple(admitted),
        rejected=tuple(rejected),
        plan=plan,
        wall_s=decide_s,
        modeled_s=0.0,
        phases_s={"decide_s": decide_s},
        reasons=reasons or {},
    )


def count_moves(counters: MutableMapping[str, float], plan: Plan) -> None:
    """Add a finished plan's live migrations, parking moves and bytes copied to `counters`."""
    cost = plan.cost
    counters["migrations"] += cost.migrations
    counters["parking_moves"] += cost.parking
    counters["bytes_moved"] += cost.bytes_copied
