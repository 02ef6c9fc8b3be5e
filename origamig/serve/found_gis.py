"""GIs found on a host that no VM owns (`POST /v1/pms/{id}/lgi`, docs/service.md#a-servers-real-gis): the
service holds their slices, as it holds a plan's orphan GIs, until a later listing of that host lacks
them. Stored in the state (`meta` entry `found_gis`) and held again when the state is read back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import GiSlot, Placement, VmSpec

META_KEY = "found_gis"


@dataclass(frozen=True)
class HostGi:
    """A GI a host listed that the state did not have, on slices the state left free: held until a
    later listing of the host lacks it."""

    pm: str
    gpu: int
    start: int
    profile: str
    gi_id: int | None = None  # the host's GI ID (`nvidia-smi mig -i <gpu> -dgi -gi <id>` destroys it)

    @property
    def key(self) -> str:
        """Its hold in the data center."""
        return f"found {self.pm} gpu {self.gpu} start {self.start}"

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def of(cls, doc: Mapping[str, Any]) -> HostGi:
        return cls(doc["pm"], doc["gpu"], doc["start"], doc["profile"], doc.get("gi_id"))


def hold(dc: DataCenter, gi: HostGi) -> None:
    """Hold the slices of `gi` on `dc` (its PM must be one of `dc`'s)."""
    j = dc.index[gi.pm]
    prof = dc.gpu_model(j, gi.gpu).profile(gi.profile)
    dc.hold(gi.key, VmSpec(gi.key, 0, 0, (prof,)), Placement(j, (GiSlot(gi.gpu, gi.start),)))


def stored(found: Iterable[HostGi]) -> list[dict[str, Any]]:
    """The `meta` value of `found`, in a stable order."""
    return [g.to_json() for g in sorted(found, key=lambda g: (g.pm, g.gpu, g.start))]


def under(found: Iterable[HostGi], placement: Any, vm: VmSpec) -> list[HostGi]:
    """The GIs of `found` at exactly the slots of `placement` (a VM request's, not yet checked) with
    `vm`'s profiles there: a VM recorded there takes them over."""
    if not isinstance(placement, dict) or not isinstance(placement.get("gis"), list):
        return []
    slots = placement["gis"][: len(vm.gis)]
    wanted = {
        (placement.get("pm"), s.get("gpu"), s.get("start"), prof.name)
        for s, prof in zip(slots, vm.gis, strict=False)
        if isinstance(s, dict)
    }
    return [g for g in found if (g.pm, g.gpu, g.start, g.profile) in wanted]
