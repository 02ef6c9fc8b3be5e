"""A server's real GIs (`POST /v1/pms/{id}/lgi`, docs/service.md#a-servers-real-gis): the output of
`nvidia-smi mig -lgi` on one server (read by `snapshot/importer.py:parse_lgi`), compared with the GIs
the state has there, and adopted where the host is right.

The state's GIs on a server: those of the VMs running there, those moves under way hold (the new GIs
at a destination, the old ones until their `destroy_gi`), those ended plans left (orphans) and those
found on the host before. A listed GI matches a GI of the state at the same GPU, start and profile
(`+me` and the like read as their base profile).

- Listed, not in the state (`host_only`): on slices the state leaves free, it is adopted — held as a
  GI found on the host, its slices kept from every placement, until a later listing lacks it; on
  slices the state uses otherwise, or not a GI this server's GPUs can hold, it is only reported.
- In the state, not listed (`state_only`): a GI no VM owns (an orphan, a GI found before) is adopted as
  gone — its slices are free, an orphan confirmed gone as by `DELETE /v1/plans/{id}/orphan-gis/{step}`;
  a running VM's GI, or one a move under way holds, is only reported (the VM may be gone, or its GI
  not created yet: the platform says which, with `DELETE /v1/vms/{id}` or the plan's steps).

With `dry_run` nothing is adopted; the answer says what would be.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from origamig.cluster.catalog import Profile
from origamig.cluster.datacenter import DataCenter
from origamig.errors import SnapshotError
from origamig.runtime.plan_run import dest_key, old_gi_key
from origamig.serve import found_gis
from origamig.serve.events_log import EVENTS
from origamig.serve.fleet import UnknownPm
from origamig.serve.found_gis import HostGi
from origamig.serve.live import Live
from origamig.serve.requests import RequestError
from origamig.snapshot.importer import FoundGi as ListedGi
from origamig.snapshot.importer import parse_lgi as parse_listing
from origamig.snapshot.importer import profile_for

SOURCE = "body"  # how the listing's lines are named in its problems (`body:3: ...`)


@dataclass(frozen=True)
class StateGi:
    """A GI the state has on a server, and what holds it: a running VM (`vm`), a move under way
    (`move`), an ended plan's orphan (`orphan`) or a GI found on the host before (`found`)."""

    gpu: int
    start: int
    profile: Profile
    owner: str
    vm: str | None = None
    plan: int | None = None
    step: int | None = None
    key: str | None = None  # its hold (None for a VM's GI)

    def describe(self) -> str:
        what = f"{self.profile.name} at {self.start}"
        if self.owner == "vm":
            return f"VM {self.vm}'s {what}"
        if self.owner == "move":
            return f"{what} held by a move of plan {self.plan} (VM {self.vm})"
        if self.owner == "orphan":
            return f"{what} left by plan {self.plan} (step {self.step})"
        return f"{what} found on the host before"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"gpu": self.gpu, "start": self.start, "profile": self.profile.name}
        out["owner"] = self.owner
        out |= {k: v for k, v in (("vm", self.vm), ("plan", self.plan), ("step", self.step)) if v is not None}
        return out


def state_gis(live: Live, j: int) -> list[StateGi]:
    """Every GI the state has on PM j (module doc), by GPU and start."""
    dc = live.dc
    owners: dict[str, tuple[str, int | None, int | None, str | None]] = {}
    for run in live.plans.values():
        for key, o in run.orphans.items():
            owners[key] = ("orphan", run.id, o.step, o.vm)
        for m in run.running_moves() if run.running else ():
            owners[dest_key(run, m)] = ("move", run.id, None, m.vm)
            for g in m.created:
                owners[old_gi_key(run, m, g)] = ("move", run.id, None, m.vm)
    for key in live.found:
        owners[key] = ("found", None, None, None)
    out = []
    for k in range(dc.gpu_count(j)):
        for start, (v, n) in dc.gis_on(j, k).items():
            out.append(StateGi(k, start, dc.vms[v].gis[n], "vm", vm=v))
    for key in dc.holds_on(j):
        spec, where = dc.holds[key]
        kind, plan, step, vm = owners.get(key, ("move", None, None, None))
        for prof, slot in zip(spec.gis, where.gis, strict=True):
            out.append(StateGi(slot.gpu, slot.start, prof, kind, vm, plan, step, key))
    return sorted(out, key=lambda g: (g.gpu, g.start))


@dataclass
class Differences:
    """A listing against the state of one server: what matched, each difference (JSON, with whether
    it is adopted and why), and what adopting frees and holds."""

    matched: int = 0
    host_only: list[dict[str, Any]] = field(default_factory=list)
    state_only: list[dict[str, Any]] = field(default_factory=list)
    freed: list[StateGi] = field(default_factory=list)
    held: list[HostGi] = field(default_factory=list)

    @property
    def adopted(self) -> int:
        return sum(e["adopted"] for e in (*self.host_only, *self.state_only))


def compare(live: Live, pm_id: str, text: str, dry_run: bool = False) -> dict[str, Any]:
    """The differences between server `pm_id`'s listing `text` and the state, each adopted where the
    host is right unless `dry_run` (module doc). `RequestError` (400) when `text` is not a listing."""
    try:
        listed = parse_listing(text, SOURCE)
    except SnapshotError as exc:
        raise RequestError(exc.problems) from None
    with live.writing:
        with live.lock:
            j = live.dc.index.get(pm_id)
            if j is None:
                raise UnknownPm(f"pm: {pm_id!r} is not a server of the service")
            found = differences(live, j, listed)
            if not dry_run:
                _adopt(live, j, found.freed, found.held)
            answer = {
                "pm": pm_id,
                "dry_run": dry_run,
                "matched": found.matched,
                "host_only": sorted(found.host_only, key=lambda e: (e["gpu"], e["start"])),
                "state_only": found.state_only,
                "found_gis": [g.to_json() for g in live.found.values() if g.pm == pm_id],
            }
        live.commit()
    EVENTS.emit("pm.lgi", pm=pm_id, dry_run=dry_run, matched=found.matched, host_only=len(found.host_only),
                state_only=len(found.state_only), adopted=0 if dry_run else found.adopted)  # fmt: skip
    return answer


def differences(live: Live, j: int, listed: list[ListedGi]) -> Differences:
    """The GIs `listed` on PM j against the state's there (module doc); nothing is changed."""
    dc, pm_id = live.dc, live.dc.pms[j].id
    theirs = state_gis(live, j)
    unmatched = {(g.gpu, g.start, g.profile.name): g for g in theirs}
    out = Differences()
    readable: list[tuple[dict[str, Any], Profile]] = []
    for gi in listed:
        entry: dict[str, Any] = {"gpu": gi.gpu, "start": gi.start, "profile": gi.name, "gi_id": gi.instance}
        prof, why = _profile(dc, j, gi)
        if prof is None:
            out.host_only.append(entry | {"adopted": False, "reason": why})
        elif unmatched.pop((gi.gpu, gi.start, prof.name), None) is None:
            readable.append((entry | {"profile": prof.name}, prof))
    out.matched = len(theirs) - len(unmatched)
    occupied = {k: dc.occupancy(j, k) for k in range(dc.gpu_count(j))}
    for g in unmatched.values():  # the host lacks them: gone, when no VM owns them
        gone = g.owner in ("orphan", "found")
        if gone:
            out.freed.append(g)
            occupied[g.gpu] &= ~g.profile.mask(g.start)
        out.state_only.append(g.to_json() | {"adopted": gone, "reason": _state_reason(g)})
    for entry, prof in readable:  # the state lacks them: held, on slices it leaves free
        mask = prof.mask(entry["start"])
        if occupied[entry["gpu"]] & mask:
            over = [g.describe() for g in theirs if g.gpu == entry["gpu"] and g not in out.freed
                    and g.profile.mask(g.start) & mask]  # fmt: skip
            why = f"overlaps what the state has there: {'; '.join(over) or 'another listed GI'}"
            out.host_only.append(entry | {"adopted": False, "reason": why})
            continue
        occupied[entry["gpu"]] |= mask
        out.held.append(HostGi(pm_id, entry["gpu"], entry["start"], prof.name, entry["gi_id"]))
        why = "held as a GI found on the host until a later listing lacks it"
        out.host_only.append(entry | {"adopted": True, "reason": why})
    return out


def _profile(dc: DataCenter, j: int, gi: ListedGi) -> tuple[Profile | None, str]:
    """The profile listed GI `gi` is on PM j's GPU, or None and why it cannot be one."""
    count = dc.gpu_count(j)
    if not 0 <= gi.gpu < count:
        return None, f"GPU {gi.gpu}: {dc.pms[j].id} has {count} GPU{'s' if count != 1 else ''} in the state"
    return profile_for(dc.gpu_model(j, gi.gpu), gi)


def _state_reason(g: StateGi) -> str:
    if g.owner == "vm":
        return (
            f"VM {g.vm} runs on it in the state: if the VM is gone, DELETE /v1/vms/{g.vm}; "
            "if its GI is not created yet, create it"
        )
    if g.owner == "move":
        return f"a move of plan {g.plan} under way holds it (its GI steps may not have run yet)"
    if g.owner == "orphan":
        return f"gone: the GI plan {g.plan} left (step {g.step}) is confirmed gone, its slices free"
    return "gone: the GI found on the host before is no longer held"


def _adopt(live: Live, j: int, freed: list[StateGi], held: list[HostGi]) -> None:
    """Free the GIs no VM owns that the host lacks, hold those it has that the state lacked."""
    book, dc = live.runtime.plans, live.dc
    for g in freed:
        assert g.key is not None
        if g.owner == "orphan":
            assert g.plan is not None
            book.confirm_gone(live.plans[g.plan], g.key)
            live.dirty.plans.add(g.plan)
        else:
            dc.unhold(g.key)
            del live.found[g.key]
            live.dirty.found = True
    for gi in held:
        found_gis.hold(dc, gi)
        live.found[gi.key] = gi
        live.dirty.found = True
    if freed or held:
        live.touched([j])
        live.runtime.plans.advance(live.now())  # a move waiting for those slices may start
