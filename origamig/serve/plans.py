"""Plans the service hands out step by step (docs/service.md#plans): their record, and each step
judged against the live state by the independent replay (`judge/replay.py`).

A plan starts from the placement its VMs had when it was made (`base`). The state of the cluster
after its first n acknowledged steps is the replay of those steps from that base, with every VM the
plan does not name where it runs *now*: VMs that arrived or left meanwhile are judged too. A step is
handed out, and applied when acknowledged, only if that replay accepts it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from origamig.call.kinds import CallKind
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import GiSlot, Placement
from origamig.judge.replay import ReplayResult, replay_plan
from origamig.plan.steps import StepOp
from origamig.snapshot.document import placement_json


class PlanStatus(StrEnum):
    """A plan's life: running (steps being handed out) → done (every step acknowledged), failed (a
    step was reported failed: the rest is aborted), aborted (a step no longer fits the live state, or
    was not acknowledged in time) or cancelled (by a client)."""

    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    ABORTED = "aborted"
    CANCELLED = "cancelled"


class StepStatus(StrEnum):
    """A step of a plan: acknowledged done, reported failed, pending while the plan runs, or aborted
    when the plan ended before it."""

    DONE = "done"
    FAILED = "failed"
    PENDING = "pending"
    ABORTED = "aborted"


ACKNOWLEDGED = (StepStatus.DONE, StepStatus.FAILED)  # what a client reports a step as


class AbortCause(StrEnum):
    """Why a plan was aborted: its next step was not acknowledged in time, or no longer fit the live
    state (none for a plan not aborted)."""

    NONE = ""
    TIMEOUT = "timeout"
    STALE = "stale"


@dataclass(frozen=True)
class LivePlan:
    """A plan of the background optimizer and how far it got."""

    id: int
    kind: CallKind  # the call that made it
    created_s: float
    steps: tuple[Mapping[str, Any], ...]  # docs/formats.md#plan objects
    base: Mapping[str, Placement]  # where the VMs the plan moves ran when it was made
    admitted: tuple[str, ...] = ()  # pending VMs the plan starts
    rejected: tuple[str, ...] = ()  # pending VMs the call gave up on (removed from the queue)
    pms: frozenset[int] = frozenset()  # PMs held while it runs: no arrival goes there
    status: PlanStatus = PlanStatus.RUNNING
    done: int = 0  # steps acknowledged done
    reason: str = ""
    cause: AbortCause = AbortCause.NONE
    gain: float | None = None
    modeled_s: float = 0.0  # the call's deterministic time (docs/simulator.md); when a replay acknowledges it
    rejected_reasons: Mapping[str, str] = field(default_factory=dict)  # why each of `rejected` is
    step_since_s: float = 0.0  # when its next step became next (made, or the last acknowledgement)
    # Once ended short of done: GIs its acknowledged create_gi steps made that no VM runs on (destroy
    # them on the hosts), and the PMs it switched on or was to switch off that host nothing now.
    orphan_gis: tuple[Mapping[str, Any], ...] = ()
    idle_pms: tuple[str, ...] = ()

    @property
    def next_step(self) -> int | None:
        return self.done if self.status == PlanStatus.RUNNING and self.done < len(self.steps) else None

    def step_status(self, n: int) -> StepStatus:
        if n < self.done:
            return StepStatus.DONE
        if n == self.done and self.status == PlanStatus.FAILED:
            return StepStatus.FAILED
        return StepStatus.PENDING if self.status == PlanStatus.RUNNING else StepStatus.ABORTED

    def to_json(self, pm_ids: Sequence[str]) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "created_s": self.created_s,
            "status": self.status,
            "reason": self.reason,
            "cause": self.cause,
            "next_step": self.next_step,
            "steps": [{"n": n, "status": self.step_status(n), **step} for n, step in enumerate(self.steps)],
            # Once a plan ended short of done, only the VMs its acknowledged steps started.
            "admitted": list(self.admitted)
            if self.status in (PlanStatus.RUNNING, PlanStatus.DONE)
            else started(self),
            "rejected": list(self.rejected),
            "rejected_reasons": {v: self.rejected_reasons.get(v, "") for v in self.rejected},
            "pms": sorted(pm_ids[j] for j in self.pms),
            "gain": self.gain,
            "modeled_s": self.modeled_s,
            "step_since_s": self.step_since_s,
            "orphan_gis": [dict(g) for g in self.orphan_gis],
            "idle_pms": list(self.idle_pms),
        }

    def to_store(self, dc: DataCenter) -> dict[str, Any]:
        """Everything needed to resume the plan after a restart (PMs by id)."""
        return {
            **self.to_json([pm.id for pm in dc.pms]),
            "steps": [dict(s) for s in self.steps],
            "admitted": list(self.admitted),  # as planned: what the plan's call decided
            "done": self.done,
            "base": placement_json(dc.pms, self.base),
        }

    @classmethod
    def from_store(cls, doc: Mapping[str, Any], dc: DataCenter) -> LivePlan:
        base = {
            v: Placement(dc.index[pl["pm"]], tuple(GiSlot(g["gpu"], g["start"]) for g in pl["gis"]))
            for v, pl in doc["base"].items()
        }
        return cls(
            id=doc["id"],
            kind=CallKind(doc["kind"]),
            created_s=doc["created_s"],
            steps=tuple(doc["steps"]),
            base=base,
            admitted=tuple(doc["admitted"]),
            rejected=tuple(doc["rejected"]),
            pms=frozenset(dc.index[p] for p in doc["pms"]),
            status=PlanStatus(doc["status"]),
            done=doc["done"],
            reason=doc["reason"],
            cause=AbortCause(doc.get("cause", "")),
            gain=doc["gain"],
            modeled_s=doc.get("modeled_s", 0.0),
            rejected_reasons=dict(doc.get("rejected_reasons", {})),
            step_since_s=doc.get("step_since_s", doc["created_s"]),
            orphan_gis=tuple(doc.get("orphan_gis", ())),
            idle_pms=tuple(doc.get("idle_pms", ())),
        )


def started(plan: LivePlan) -> list[str]:
    """The VMs the plan's acknowledged steps started, in its order of `admitted`."""
    done = {str(s["vm"]) for s in plan.steps[: plan.done] if s["op"] == StepOp.START}
    return [v for v in plan.admitted if v in done]


def plan_vms(steps: Sequence[Mapping[str, Any]]) -> set[str]:
    return {str(s["vm"]) for s in steps if "vm" in s}


def replay_on_live(dc: DataCenter, plan: LivePlan, upto: int) -> ReplayResult:
    """The replay of the plan's first `upto` steps from its base, every other VM where it runs now.

    Only the plan's own PMs are replayed (those it holds, its steps name and its VMs ran on), with
    every VM on them: no other PM can change whether a step fits, and a check costs the plan's size,
    not the cluster's. The result's placements are in the live state's PM indices.

    A prefix may leave GIs created but not used yet, or old GIs not destroyed yet: only a failure
    at one of its steps (`failed_step < upto`) or a broken start counts."""
    named = plan_vms(plan.steps)
    own = set(plan.pms) | {pl.pm for pl in plan.base.values()}
    own |= {dc.index[s[k]] for s in plan.steps for k in ("pm", "from", "to") if s.get(k) in dc.index}
    order = sorted(own)
    local = {j: n for n, j in enumerate(order)}
    placement: dict[str, Placement] = {}
    for j in order:
        for v in dc.vms_on(j):
            if v not in named:
                placement[v] = replace(dc.placement[v], pm=local[j])
    for v, pl in plan.base.items():
        if v in dc.vms:
            placement[v] = replace(pl, pm=local[pl.pm])
    vms = {v: dc.vms[v] for v in placement}
    pending = {v: dc.pending.get(v) or dc.vms[v] for v in plan.admitted if v in dc.pending or v in dc.vms}
    pms = [dc.pms[j] for j in order]
    result = replay_plan(pms, vms, placement, pending, plan.steps[:upto], intra_pm_moves=dc.intra_pm_moves)
    final = {v: replace(pl, pm=order[pl.pm]) for v, pl in result.final_placement.items()}
    return replace(result, final_placement=final)


def step_problem(dc: DataCenter, plan: LivePlan, n: int) -> str | None:
    """Why step n of `plan` cannot run on the live state now (None: it can)."""
    result = replay_on_live(dc, plan, n + 1)
    if result.failed_step is None and not result.ok:
        return result.reason or "the live state no longer matches the plan's start"
    if result.failed_step is not None and result.failed_step <= n:
        return result.reason
    return None


def placement_after(dc: DataCenter, plan: LivePlan, upto: int) -> dict[str, Placement]:
    """Where the plan's VMs run after its first `upto` steps (admitted VMs once started)."""
    final = replay_on_live(dc, plan, upto).final_placement
    return {v: final[v] for v in plan_vms(plan.steps) if v in final}


def finished(
    plan: LivePlan, status: PlanStatus, reason: str = "", cause: AbortCause = AbortCause.NONE
) -> LivePlan:
    return replace(plan, status=status, reason=reason, cause=cause)


def end_counts(plans: Iterable[LivePlan]) -> tuple[dict[PlanStatus, int], dict[str, int]]:
    """How many plans are in each state, and why those aborted were: `timeout`, `stale` before their
    first step (the cluster changed while the plan was made) or `stale` later."""
    states = dict.fromkeys(PlanStatus, 0)
    causes = {"timeout": 0, "stale_before_first_step": 0, "stale_later": 0}
    for plan in plans:
        states[plan.status] = states.get(plan.status, 0) + 1
        if plan.status == PlanStatus.ABORTED:
            if plan.cause == AbortCause.TIMEOUT:
                causes["timeout"] += 1
            else:
                causes["stale_before_first_step" if plan.done == 0 else "stale_later"] += 1
    return states, causes


def leftovers(dc: DataCenter, plan: LivePlan) -> tuple[tuple[dict[str, Any], ...], tuple[str, ...]]:
    """What a plan that ended short of done leaves on the hosts: the GIs its acknowledged `create_gi`
    steps made that no VM runs on (and no acknowledged `destroy_gi` removed), and the PMs it switched
    on or was to switch off that host no VM now."""
    done = plan.steps[: plan.done]
    destroyed = {
        (s["vm"], s["gi"], s["pm"], s["gpu"], s["start"]) for s in done if s["op"] == StepOp.DESTROY_GI
    }
    orphans = []
    for n, s in enumerate(done):
        if s["op"] != StepOp.CREATE_GI or (s["vm"], s["gi"], s["pm"], s["gpu"], s["start"]) in destroyed:
            continue
        pl = dc.placement.get(str(s["vm"]))
        runs_on = (
            pl is not None
            and dc.pms[pl.pm].id == s["pm"]
            and 0 <= s["gi"] < len(pl.gis)
            and pl.gis[s["gi"]] == GiSlot(s["gpu"], s["start"])
        )
        if not runs_on:
            orphans.append({k: s[k] for k in ("vm", "gi", "pm", "gpu", "start")} | {"step": n})
    power = {str(s["pm"]) for s in plan.steps if s["op"] in (StepOp.POWER_ON, StepOp.POWER_OFF)}
    idle = tuple(sorted(pm for pm in power if pm in dc.index and not dc.is_active(dc.index[pm])))
    return tuple(orphans), idle
