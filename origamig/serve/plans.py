"""The service's plans (docs/service.md#plans): a plan running in time (`runtime/plan_run.py`) as the
API shows it, and as the state stores it so that a restart picks it up where it was.

The JSON of a plan lists every step (docs/formats.md#plan) with its status — `ready` steps may be
carried out now (`ready_steps`; `next_step` is the first of them), `pending` ones come later — its
moves with their times, what it admitted, and once it ended short of done what it left on the hosts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from origamig.call.kinds import CallKind
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import GiSlot, Placement, VmSpec
from origamig.plan.steps import CreateGi, DestroyGi, Migrate, PowerOff, PowerOn, Start, Step, StepOp
from origamig.runtime.migration import Move
from origamig.runtime.plan_run import AbortCause, MoveState, OrphanGi, PlanRun, PlanStatus

GAIN_UNIT = "objective points (docs/model.md#objective)"


def step_from_json(d: Mapping[str, Any]) -> Step:
    """A plan step from its JSON object (docs/formats.md#plan)."""
    op, parking = d["op"], bool(d.get("parking", False))
    if op == StepOp.POWER_ON:
        return PowerOn(d["pm"], parking)
    if op == StepOp.POWER_OFF:
        return PowerOff(d["pm"], parking)
    if op == StepOp.CREATE_GI:
        return CreateGi(d["vm"], d["gi"], d["pm"], d["gpu"], d["start"], parking)
    if op == StepOp.DESTROY_GI:
        return DestroyGi(d["vm"], d["gi"], d["pm"], d["gpu"], d["start"], parking)
    if op == StepOp.MIGRATE:
        return Migrate(d["vm"], d["from"], d["to"], parking)
    if op == StepOp.START:
        return Start(d["vm"], d["pm"], parking)
    raise ValueError(f"not a plan step: {op!r}")


def _placement_json(dc: DataCenter, pl: Placement | None) -> dict[str, Any] | None:
    if pl is None:
        return None
    return {"pm": dc.pms[pl.pm].id, "gis": [{"gpu": s.gpu, "start": s.start} for s in pl.gis]}


def _placement_of(dc: DataCenter, doc: Mapping[str, Any] | None) -> Placement | None:
    if doc is None:
        return None
    return Placement(dc.index[doc["pm"]], tuple(GiSlot(g["gpu"], g["start"]) for g in doc["gis"]))


def _move_json(dc: DataCenter, run: PlanRun, m: Move) -> dict[str, Any]:
    return {
        "n": m.n,
        "steps": list(m.steps),
        "vm": m.vm,
        "from": _placement_json(dc, m.source),
        "to": _placement_json(dc, m.target),
        "created": list(m.created),
        "parking": m.parking,
        "pms": sorted(dc.pms[j].id for j in m.pms),
        "duration_s": m.duration_s,
        "network_bytes": m.network_bytes,
        "after": list(m.after),
        "state": run.state[m.n],
        "acked": run.acked[m.n],
        "started_s": run.started_s[m.n],
        "ended_s": run.ended_s_of[m.n],
    }


def plan_json(run: PlanRun, dc: DataCenter, modeled_s: float = 0.0) -> dict[str, Any]:
    """The plan as `GET /v1/plans/{id}` shows it (docs/service.md#plans)."""
    ready = sorted(run.next_steps()) if run.running else []
    steps = [{"n": i, "status": run.step_status(i), **s.to_dict()} for i, s in enumerate(run.steps)]
    return {
        "id": run.id,
        "kind": run.kind,
        "created_s": run.created_s,
        "status": run.status,
        "reason": run.reason,
        "cause": run.cause,
        "next_step": ready[0] if ready else None,
        "ready_steps": ready,
        "steps": steps,
        "moves": [_move_json(dc, run, m) for m in run.moves],
        "admitted": list(run.started) if not run.running else list(run.admitted),
        "to_admit": list(run.reserved),
        "rejected": list(run.rejected),
        "rejected_reasons": {v: run.rejected_reasons.get(v, "") for v in run.rejected},
        "pms": sorted(dc.pms[j].id for j in run.pms()),
        "gain": run.gain,
        "gain_unit": GAIN_UNIT,
        "modeled_s": modeled_s,
        "replans": run.replans,
        "step_since_s": run.step_since_s,
        "ended_s": run.ended_s,
        "orphan_gis": [o.to_json() for o in run.orphans.values()],
        "idle_pms": idle_pms(run, dc) if not run.running else [],
    }


def idle_pms(run: PlanRun, dc: DataCenter) -> list[str]:
    """The servers a plan switched on or was to switch off that host no VM now and hold nothing but
    the GIs it left there (destroy those, then switch them off)."""
    named = {s.pm for s in run.steps if isinstance(s, PowerOn | PowerOff)}
    out = []
    for pm in sorted(named):
        j = dc.index.get(pm)
        if j is not None and not dc.vm_count(j) and all(k in run.orphans for k in dc.holds_on(j)):
            out.append(pm)
    return out


def to_store(run: PlanRun, dc: DataCenter, modeled_s: float = 0.0) -> dict[str, Any]:
    """Everything needed to pick the plan up after a restart (PMs by id)."""
    return {
        **plan_json(run, dc, modeled_s),
        "steps": [s.to_dict() for s in run.steps],
        "admitted": list(run.admitted),
        "started": list(run.started),
        "reserved": list(run.reserved),
        "failed_step": run.failed_step,
        "stale": run.stale,
        "orphans": {k: {**o.to_json(), "key": k} for k, o in run.orphans.items()},
    }


def from_store(doc: Mapping[str, Any], dc: DataCenter, pending: Mapping[str, VmSpec]) -> PlanRun:
    """A stored plan, on the state read back (its reserved VMs taken from `pending`, the stored queue)."""
    moves = [
        Move(
            n=m["n"],
            steps=tuple(m["steps"]),
            vm=m["vm"],
            source=_placement_of(dc, m["from"]),
            target=_placement_of(dc, m["to"]),
            created=tuple(m["created"]),
            parking=m["parking"],
            pms=frozenset(dc.index[p] for p in m["pms"]),
            duration_s=m["duration_s"],
            network_bytes=m["network_bytes"],
            after=tuple(m["after"]),
        )
        for m in doc["moves"]
    ]
    orphans = {
        k: OrphanGi(k, o["vm"], o["gi"], o["profile"], o["pm"], o["gpu"], o["start"], o["step"])
        for k, o in doc.get("orphans", {}).items()
    }
    return PlanRun(
        id=doc["id"],
        kind=CallKind(doc["kind"]),
        created_s=doc["created_s"],
        steps=[step_from_json(s) for s in doc["steps"]],
        moves=moves,
        state=[MoveState(m["state"]) for m in doc["moves"]],
        acked=[m["acked"] for m in doc["moves"]],
        started_s=[m["started_s"] for m in doc["moves"]],
        ended_s_of=[m["ended_s"] for m in doc["moves"]],
        admitted=tuple(doc["admitted"]),
        reserved={v: pending[v] for v in doc.get("reserved", ()) if v in pending},
        rejected=tuple(doc["rejected"]),
        rejected_reasons=dict(doc.get("rejected_reasons", {})),
        gain=doc["gain"],
        status=PlanStatus(doc["status"]),
        reason=doc["reason"],
        cause=AbortCause(doc.get("cause", "")),
        stale=bool(doc.get("stale", False)),
        replans=doc.get("replans", 0),
        failed_step=doc.get("failed_step"),
        ended_s=doc.get("ended_s"),
        step_since_s=doc.get("step_since_s", doc["created_s"]),
        orphans=orphans,
        started=list(doc.get("started", ())),
    )


def end_counts(
    plans: Iterable[PlanRun], shown: Iterable[Mapping[str, Any]] = ()
) -> tuple[dict[PlanStatus, int], dict[str, int]]:
    """How many plans are in each state, and why those aborted were: `timeout`, `stale` before their
    first step (the cluster changed while the plan was made) or `stale` later; `shown`: ended plans
    kept as last shown (their JSON, `serve/live_load.py`)."""
    rows = [(p.status, p.cause, any(p.acked)) for p in plans]
    rows += [
        (PlanStatus(v["status"]), AbortCause(v.get("cause", "")), any(m.get("acked") for m in v["moves"]))
        for v in shown
    ]
    states = dict.fromkeys(PlanStatus, 0)
    causes = {"timeout": 0, "stale_before_first_step": 0, "stale_later": 0}
    for status, cause, acked in rows:
        states[status] = states.get(status, 0) + 1
        if status == PlanStatus.ABORTED:
            if cause == AbortCause.TIMEOUT:
                causes["timeout"] += 1
            else:
                causes["stale_later" if acked else "stale_before_first_step"] += 1
    return states, causes


def held_resources(dc: DataCenter, book_plans: Sequence[PlanRun]) -> dict[str, Any]:
    """What moves under way and GIs left on hosts hold now (`GET /v1/status`)."""
    slices = sum(p.memory_slices for spec, _ in dc.holds.values() for p in spec.gis)
    return {
        "pms": len({pl.pm for _, pl in dc.holds.values()}),
        "cpu": sum(spec.cpu_m for spec, _ in dc.holds.values()) / 1000,
        "ram_gb": sum(spec.ram_mb for spec, _ in dc.holds.values()) / 1000,
        "gpu_slices": slices,
        "moves_running": sum(len(p.running_moves()) for p in book_plans if p.running),
        "orphan_gis": sum(len(p.orphans) for p in book_plans),
    }
