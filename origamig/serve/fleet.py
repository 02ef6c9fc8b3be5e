"""The fleet as it changes (docs/service.md#the-fleet-as-it-changes): servers read, added, cordoned,
uncordoned, drained and removed while the service runs, each change committed before it is reported.

- A server is added in place (`fleet_growth.grow`): it goes after the others, and the live state is
  the one a restart would read. Its entry joins the seed's PMs in the store.
- A cordoned server is marked `"cordoned": true` in the seed; the runtime keeps everything new off it
  (`Runtime.cordon`).
- A drain cordons the server and adopts, as a call of kind `drain`, the target a rule computes for
  its VMs (`policies/drain.py`): the plan runs as every plan does. Pinned VMs stay, with why.
- A server is removed only when nothing is on it or bound to it; the seed then loses it and the live
  state is read back from the store (`Live.refleet`): PMs are numbered anew.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from origamig.call.kinds import CallKind
from origamig.errors import UserError
from origamig.policies.drain import drain
from origamig.runtime.plan_run import PlanRun
from origamig.serve.arrivals import Conflict
from origamig.serve.events_log import EVENTS
from origamig.serve.fit import arrival_fit
from origamig.serve.fleet_growth import grow, read_server
from origamig.serve.live import Live
from origamig.serve.live_load import FROZEN_VIEW
from origamig.serve.plans import plan_json, to_store
from origamig.wording import count

SHOWN = 10  # ids listed in one line before "..."


class UnknownPm(UserError):
    """A server id the service does not have (HTTP 404)."""


def _ids(ids: list[str] | list[int]) -> str:
    shown = ", ".join(map(str, ids[:SHOWN]))
    return shown + (f", ... ({len(ids)} in all)" if len(ids) > SHOWN else "")


class Fleet:
    """The fleet's routes over `live` (module doc)."""

    def __init__(self, live: Live) -> None:
        self.live = live

    def _index(self, pm_id: str) -> int:
        j = self.live.dc.index.get(pm_id)
        if j is None:
            raise UnknownPm(f"pm: {pm_id!r} is not a server of the service")
        return j

    # --- reading ---------------------------------------------------------------------------------
    def view(self, pm_id: str) -> dict[str, Any]:
        """`GET /v1/pms/{id}`: the server's entry, whether it is cordoned or drained, what runs and
        what is held on it, and what keeps it from being removed."""
        live = self.live
        with live.lock:
            return self._json(self._index(pm_id))

    def _json(self, j: int) -> dict[str, Any]:
        live = self.live
        dc, book = live.dc, live.runtime.plans
        in_the_way = obstacles(live, j)
        return {
            "id": dc.pms[j].id,
            "entry": live.seed.document["pms"][j],
            "cordoned": j in book.cordoned,
            "draining": [p.id for p in draining(live, j)],
            "vms": dc.vms_on(j),
            "plans": [p.id for p in book.running() if j in p.pms()],
            "orphan_gis": orphans_on(live, j),
            "free": {
                "cpu": dc.free_cpu_m(j) / 1000,
                "ram_gb": dc.free_ram_mb(j) / 1000,
                "gpu_slices": dc.free_memory_slices(j),
            },
            "removable": not in_the_way,
            "in_the_way": in_the_way,
        }

    # --- changes ---------------------------------------------------------------------------------
    def add(self, pm_id: str, raw: Any) -> dict[str, Any]:
        """`PUT /v1/pms/{id}`: add the server of snapshot PM entry `raw` (201); `Conflict` (409) when
        the id is known, `UserError` (400) naming the field on bad input."""
        live = self.live
        with live.writing:
            with live.lock:
                if pm_id in live.dc.index:
                    raise Conflict(f"pm: {pm_id!r} is already a server of the service")
                spec, entry = read_server(live, pm_id, raw)
                j = grow(live, spec, entry)
                live.dirty.seed = True
            live.commit()
            EVENTS.emit(
                "pm.added", pm=pm_id, gpus=[g.name for g in spec.gpus], cordoned=j in live.runtime.cordoned
            )
            with live.lock:
                return self._json(j)

    def cordon(self, pm_id: str) -> dict[str, Any]:
        """`POST /v1/pms/{id}/cordon`: nothing new lands on the server from now on; the answer lists
        the running plans that still land VMs there (adopted before: they run on)."""
        live = self.live
        with live.writing:
            with live.lock:
                j = self._index(pm_id)
                self._cordon(j)
            live.commit()
            with live.lock:
                landing = [p.id for p in live.runtime.plans.running() if _lands_on(p, j)]
                return self._json(j) | {"plans_landing": landing}

    def _cordon(self, j: int) -> None:
        live = self.live
        if j not in live.runtime.cordoned:
            live.runtime.cordon(j)
            _mark(live, j, True)
            EVENTS.emit("pm.cordoned", pm=live.dc.pms[j].id)

    def uncordon(self, pm_id: str) -> dict[str, Any]:
        """`POST /v1/pms/{id}/uncordon`: new VMs may land on the server again; `Conflict` (409) while
        a drain of it runs."""
        live = self.live
        with live.writing:
            with live.lock:
                j = self._index(pm_id)
                if running := draining(live, j):
                    raise Conflict(
                        f"pm: {pm_id!r} is being drained (plan {running[0].id}): cancel the drain "
                        f"(DELETE /v1/plans/{running[0].id}) before uncordoning it"
                    )
                if j in live.runtime.cordoned:
                    live.runtime.uncordon(j)
                    _mark(live, j, False)
                    EVENTS.emit("pm.uncordoned", pm=pm_id)
            live.commit()
            with live.lock:
                return self._json(j)

    def drain(self, pm_id: str) -> dict[str, Any]:
        """`POST /v1/pms/{id}/drain`: cordon the server and run a plan that moves its VMs off
        (`policies/drain.py`), as a call of kind `drain`; the answer says where each VM goes and
        which stay, and why. `Conflict` (409) while a running plan touches the server."""
        live = self.live
        with live.writing:
            with live.lock:
                j = self._index(pm_id)
                book = live.runtime.plans
                if touching := [p.id for p in book.running() if j in p.pms()]:
                    raise Conflict(
                        f"pm: {pm_id!r} is touched by running plan {_ids(touching)}: wait for it to end, "
                        f"or cancel it (DELETE /v1/plans/{touching[0]}), then drain"
                    )
                now = live.now()
                self._cordon(j)
                dc = live.dc
                result = drain(dc, j, live.runtime.locked(now), arrival_fit(live.policy))
                staying = [{"vm": v, "reason": self._pinned(v)} for v in result.pinned]
                staying += [{"vm": v, "reason": why} for v, why in result.no_room.items()]
                moving = [{"vm": v, "to": dc.pms[pl.pm].id} for v, pl in result.target.items()]
                plans: list[int] = []
                if result.work is not None:
                    live.runtime.start_call(result.work, now)
                    plans = [p.id for p in live.runtime.end_call(result.work, now).plans]
                live.loop.settle(now)
            live.commit()
            EVENTS.emit("pm.drain", pm=pm_id, plans=plans, moving=len(moving), staying=len(staying))
            with live.lock:
                return self._json(j) | {"moving": moving, "staying": staying, "drain_plans": plans}

    def _pinned(self, vm_id: str) -> str:
        """Why the platform cannot move VM `vm_id` (it is pinned)."""
        why = self.live.move_rules.pin_reason(self.live.dc.vms[vm_id])
        return f"pinned: {why}" if why else 'pinned: "migratable": false in its entry'

    def remove(self, pm_id: str) -> None:
        """`DELETE /v1/pms/{id}`: remove the server, once nothing is on it or bound to it; `Conflict`
        (409) naming what is still there. The live state is then read back from the store (PMs are
        numbered anew); ended plans that touched the server are kept as they were last shown."""
        live = self.live
        with live.writing:
            with live.lock:
                j = self._index(pm_id)
                if in_the_way := obstacles(live, j):
                    raise Conflict([f"pm: {pm_id!r} cannot be removed: {why}" for why in in_the_way])
                dc = live.dc
                doc = dict(live.seed.document)
                doc["pms"] = [e for k, e in enumerate(doc["pms"]) if k != j]
                frozen = {
                    run.id: to_store(run, dc, live.modeled_s.get(run.id, 0.0))
                    | {FROZEN_VIEW: plan_json(run, dc, live.modeled_s.get(run.id, 0.0))}
                    for run in live.plans.values()
                    if j in run.all_pms()
                }

            def write(db: Any) -> None:
                live.store.put_meta(db, "seed", doc)
                for i, stored in frozen.items():
                    live.store.put_plan(db, i, stored)

            live.refleet(write, live.now())
        EVENTS.emit("pm.removed", pm=pm_id, plans_kept_as_shown=sorted(frozen))


# --- what is on a server ----------------------------------------------------------------------------
def draining(live: Live, j: int) -> list[PlanRun]:
    """The running drains of PM j (plans of kind `drain` that move VMs off it)."""
    return [
        p
        for p in live.runtime.plans.running()
        if p.kind == CallKind.DRAIN and any(m.source is not None and m.source.pm == j for m in p.moves)
    ]


def _lands_on(run: PlanRun, j: int) -> bool:
    """Running plan `run` has a move not ended that brings a VM onto PM j (from elsewhere)."""
    return any(
        m.target is not None and m.target.pm == j and (m.source is None or m.source.pm != j)
        for m in run.live_moves()
    )


def orphans_on(live: Live, j: int) -> list[dict[str, Any]]:
    """The GIs left on PM j that no VM owns: those of ended plans (`plan`, `step`) and those found on
    the host (`found`)."""
    pm_id = live.dc.pms[j].id
    out = [
        o.to_json() | {"plan": p.id} for p in live.plans.values() for o in p.orphans.values() if o.pm == pm_id
    ]
    out += [g.to_json() | {"found": True} for g in live.found.values() if g.pm == pm_id]
    return out


def obstacles(live: Live, j: int) -> list[str]:
    """What keeps PM j from being removed, one line each (none: it may be removed)."""
    dc, book = live.dc, live.runtime.plans
    pm_id = dc.pms[j].id
    out = []
    if vms := dc.vms_on(j):
        out.append(f"{count(len(vms), 'VM')} on it ({_ids(vms)}): drain it (POST /v1/pms/{pm_id}/drain)")
    if touching := [p.id for p in book.running() if j in p.all_pms()]:
        out.append(
            f"running plan {_ids(touching)} touches it: wait for it to end, or cancel it "
            f"(DELETE /v1/plans/{touching[0]})"
        )
    left = [o for o in orphans_on(live, j) if "plan" in o]
    if left:
        shown = _ids(
            [f"plan {o['plan']} step {o['step']} (GPU {o['gpu']}, start {o['start']})" for o in left]
        )
        first = left[0]
        out.append(
            f"GIs left on it by ended plans: {shown}: destroy them, then confirm each gone "
            f"(DELETE /v1/plans/{first['plan']}/orphan-gis/{first['step']}) or post the server's "
            f"listing (POST /v1/pms/{pm_id}/lgi)"
        )
    found = [g for g in live.found.values() if g.pm == pm_id]
    if found:
        shown = _ids([f"GPU {g.gpu}, start {g.start} ({g.profile})" for g in found])
        out.append(
            f"GIs found on the host: {shown}: destroy them, then post its listing again "
            f"(POST /v1/pms/{pm_id}/lgi)"
        )
    elsewhere = [
        p.id
        for p in live.plans.values()
        if not p.running and j in p.all_pms() and any(o.pm != pm_id for o in p.orphans.values())
    ]
    if elsewhere:
        out.append(
            f"ended plan {_ids(elsewhere)}, which touched it, left GIs on other servers: confirm them "
            "gone first"
        )
    return out


def _mark(live: Live, j: int, cordoned: bool) -> None:
    """Mark PM j cordoned or not in the seed (stored at the next commit) and the snapshot's view."""
    doc = dict(live.seed.document)
    pms = list(doc["pms"])
    entry: Mapping[str, Any] = {k: v for k, v in pms[j].items() if k != "cordoned"}
    pms[j] = {**entry, "cordoned": True} if cordoned else entry
    doc["pms"] = pms
    live.seed = dataclasses.replace(live.seed, document=doc)
    live.view.put_pm(j, pms[j], live.dc.pms)
    live.dirty.seed = True
