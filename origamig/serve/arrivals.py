"""A VM request to the service (`POST /v1/vms`): its fields, what became of it, and where a VM that
others placed runs — given whole (`"placement"`), or on the node it is bound to (`"pm"`), where the
arrival rule chooses its GIs' starts, off the slices that moves still waiting there will take when
it has the choice (docs/service.md#routes)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import GiSlot, Placement, VmSpec
from origamig.errors import PlacementError, UserError
from origamig.runtime.lifecycle import Runtime
from origamig.serve.fit import arrival_fit, fit_on_pm, start_problems
from origamig.serve.requests import RequestError


class DuplicateVm(UserError):
    """A request whose VM id the service already knows (HTTP 409)."""


class Conflict(UserError):
    """A request that the live state refuses as it is (HTTP 409): a VM placed by others that does
    not fit where it is said to run."""


# The fields of a VM request: a snapshot VM entry (docs/formats.md#snapshot) and, for a VM placed by
# others, the node it is bound to (`pm`) or its whole placement.
REQUEST_KEYS = (
    "id",
    "cpu",
    "ram_gb",
    "gis",
    "gpu_model",
    "accept_weight",
    "migration_penalty",
    "migratable",
    "pm",
    "placement",
)


class ArrivalStatus(StrEnum):
    """What became of a VM request."""

    PLACED = "placed"  # with its snapshot placement
    PENDING = "pending"  # waits for the optimizer
    REJECTED = "rejected"  # fits nowhere and will not wait


@dataclass(frozen=True)
class Arrival:
    """What became of a VM request, where it runs when placed, and why it was not."""

    vm: str
    status: ArrivalStatus
    placement: Mapping[str, Any] | None = None
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.vm, "status": self.status}
        if self.placement is not None:
            out["placement"] = self.placement
        if self.reason:
            out["reason"] = self.reason
        return out


def check_request_keys(raw: Any) -> None:
    """Refuse fields that are no field of a VM request, and `pm` with `placement`."""
    if not isinstance(raw, dict):
        return
    unknown = sorted(k for k in raw if k not in REQUEST_KEYS)
    if unknown:
        known = ", ".join(REQUEST_KEYS)
        raise RequestError([f"{k}: not a field of a VM request (fields: {known})" for k in unknown])
    if "pm" in raw and "placement" in raw:
        raise RequestError('pm: give "pm" (the node it is bound to) or "placement", not both')


def placed_by_others(runtime: Runtime, raw: dict[str, Any], vm: VmSpec) -> Placement:
    """Where a VM placed by others runs: at `raw["placement"]` as given, or on `raw["pm"]` where the
    arrival rule puts its GIs (off the slices moves still waiting there need, when it can); moves under
    way that hold its place yield to it (`Runtime.record`). `RequestError` (400) for a malformed field,
    `Conflict` (409) when it does not fit the live state there even so."""
    dc = runtime.dc
    if "pm" in raw:
        j = pm_index(dc, raw["pm"], "pm")
        fit = arrival_fit(runtime.policy)
        probe = _with_needs_held(runtime, j)
        hit = fit_on_pm(probe, j, vm, fit) if probe is not None else "no probe"
        if isinstance(hit, str):
            hit = fit_on_pm(_without_yieldable(runtime), j, vm, fit)
        if isinstance(hit, str):
            raise Conflict(f"pm: {vm.id} does not fit {dc.pms[j].id} now: {hit}")
        return hit[1]
    pl = read_placement(dc, raw["placement"], vm)
    try:
        _without_yieldable(runtime).place(vm, pl)
    except PlacementError as exc:
        if bad_starts := start_problems(dc, vm, pl):  # never valid: bad input, with the starts it takes
            raise RequestError(bad_starts) from None
        raise Conflict([f"placement: {line}" for line in exc.problems]) from None
    return pl


def _with_needs_held(runtime: Runtime, j: int) -> DataCenter | None:
    """A copy of the state with what moves still waiting for PM j will take there held (None when
    they take nothing there)."""
    needs = runtime.plans.waiting_needs(j)
    if not needs:
        return None
    probe = runtime.dc.copy()
    for n, (spec, where) in enumerate(needs):
        if probe.fits(spec, where):
            probe.hold(f"needed {n}", spec, where)
    return probe


def _without_yieldable(runtime: Runtime) -> DataCenter:
    """A copy of the state without the holds of moves that would yield to a VM placed by others."""
    probe = runtime.dc.copy()
    for key in runtime.plans.yieldable():
        probe.unhold(key)
    return probe


def pm_index(dc: DataCenter, name: Any, where: str) -> int:
    if not isinstance(name, str) or name not in dc.index:
        raise RequestError(f"{where}: {name!r} is not a PM of the service")
    return dc.index[name]


def read_placement(dc: DataCenter, raw: Any, vm: VmSpec) -> Placement:
    """`{"pm": <id>, "gis": [{"gpu", "start"}, ...]}` (docs/formats.md#snapshot) as a Placement."""
    if not isinstance(raw, dict) or not isinstance(raw.get("gis"), list):
        raise RequestError('placement: expected {"pm": <PM id>, "gis": [{"gpu": .., "start": ..}]}')
    j = pm_index(dc, raw.get("pm"), "placement.pm")
    if len(raw["gis"]) != len(vm.gis):
        raise RequestError(f"placement.gis: {len(raw['gis'])} slots for the VM's {len(vm.gis)} GIs")
    slots = []
    for n, slot in enumerate(raw["gis"]):
        gpu = slot.get("gpu") if isinstance(slot, dict) else None
        start = slot.get("start") if isinstance(slot, dict) else None
        if not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= 1024 for x in (gpu, start)):
            raise RequestError(f'placement.gis[{n}]: expected {{"gpu": <index>, "start": <slice>}}')
        slots.append(GiSlot(gpu, start))  # type: ignore[arg-type]
    return Placement(j, tuple(slots))
