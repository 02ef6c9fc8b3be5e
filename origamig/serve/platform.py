"""What the VM platform can live-migrate (`origamig serve --platform`,
docs/service.md#what-the-platform-can-move).

`generic` moves every VM not marked `"migratable": false`. `kubevirt` also pins what KubeVirt cannot
live-migrate: VMs with several GIs (KubeVirt v1.9 migrates one mediated-device vGPU per VM, alpha) and
VMs on GPU models whose MIG-backed vGPUs are SR-IOV functions (H100, H200 with vGPU 17 and later;
`devices` of `models/vgpu/nvidia-c-series.toml`). A pinned VM is one with `migratable` false, so the
optimizer's own machinery keeps it where it runs: no plan moves or parks it.

A VM that names no GPU model is pinned when any model it may run on is pinned: where it lands is
known only then, and a plan must not count on moving it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import VmSpec
from origamig.errors import UserError
from origamig.runtime.lifecycle import Runtime
from origamig.serve.requests import EntryContext
from origamig.serve.vgpu import vgpu_table
from origamig.snapshot.document import Snapshot

PLATFORM_FIELD = "platform"  # the seed snapshot's field


class Platform(StrEnum):
    """The VM platform the service's plans run on."""

    GENERIC = "generic"
    KUBEVIRT = "kubevirt"


SEVERAL_GIS = "several GIs"
SEVERAL_GIS_REASON = (
    "KubeVirt live-migrates at most one mediated-device vGPU per VM (alpha in v1.9, "
    "kubevirt/enhancements VEP 109)"
)
SR_IOV_REASON = (
    "its MIG-backed vGPUs are SR-IOV functions (vGPU 17 and later), which KubeVirt does not live-migrate "
    "(cozystack/cozystack#2608)"
)


@dataclass(frozen=True)
class MoveRules:
    """What the platform cannot move: VMs with several GIs, and VMs on `pinned_models`."""

    platform: Platform = Platform.GENERIC
    pinned_models: frozenset[str] = frozenset()

    @property
    def pins_several_gis(self) -> bool:
        return self.platform == Platform.KUBEVIRT

    def pin_reason(self, vm: VmSpec) -> str | None:
        """Why the platform cannot move `vm`, or None."""
        if self.platform == Platform.GENERIC:
            return None
        if self.pins_several_gis and len(vm.gis) > 1:
            return f"{len(vm.gis)} GIs: {SEVERAL_GIS_REASON}"
        models = sorted({choice[0].gpu_model for choice in vm.gi_choices if choice} & self.pinned_models)
        if models:
            return f"it may run on {' or '.join(models)}: {SR_IOV_REASON}"
        return None

    def applied(self, vm: VmSpec) -> VmSpec:
        """`vm` pinned (`migratable` false) when the platform cannot move it."""
        if vm.migratable and self.pin_reason(vm) is not None:
            return dataclasses.replace(vm, migratable=False)
        return vm

    def to_json(self) -> dict[str, Any]:
        """The rules for `GET /v1/status`: what is never moved, and why."""
        never: dict[str, str] = {}
        if self.pins_several_gis:
            never[SEVERAL_GIS] = SEVERAL_GIS_REASON
        for model in sorted(self.pinned_models):
            never[model] = SR_IOV_REASON
        return {"name": self.platform.value, "never_moved": never}


def move_rules(platform: Platform, present_models: Iterable[str]) -> MoveRules:
    """The rules of `platform` for a fleet of `present_models`."""
    if platform == Platform.GENERIC:
        return MoveRules()
    sr_iov = vgpu_table().models_with("sr-iov")
    return MoveRules(platform, frozenset(m for m in present_models if m in sr_iov))


def seed_platform(document: Mapping[str, Any]) -> Platform:
    """The seed snapshot's `platform` (generic when absent); `UserError` for another value."""
    raw = document.get(PLATFORM_FIELD, Platform.GENERIC.value)
    try:
        return Platform(raw)
    except ValueError:
        known = " or ".join(p.value for p in Platform)
        raise UserError(f"{PLATFORM_FIELD}: {raw!r} is not {known}") from None


def pin_all(vms: dict[str, VmSpec], rules: MoveRules) -> int:
    """Pin, in place, every VM of `vms` the platform cannot move; how many VMs are pinned by it."""
    count = 0
    for v, vm in vms.items():
        pinned = rules.applied(vm)
        if pinned is not vm:
            vms[v] = pinned
        count += rules.pin_reason(vm) is not None
    return count


class _Ruled(Protocol):
    """What `apply_platform` changes: the live state (`serve/live.py:Live`)."""

    dc: DataCenter
    seed: Snapshot
    request_context: EntryContext
    move_rules: MoveRules
    runtime: Runtime


def apply_platform(live: _Ruled, platform: Platform | None) -> MoveRules:
    """Put the rules of `platform` (None: the seed's `platform` field) in force on `live`: every VM it
    holds and every request it reads is pinned where the platform cannot move it. Call before the
    optimizer starts."""
    chosen = platform if platform is not None else seed_platform(live.seed.document)
    rules = move_rules(chosen, [m.name for m in live.request_context.present])
    enforce(live, rules)
    return rules


def enforce(live: _Ruled, rules: MoveRules) -> None:
    """Put `rules` in force on `live` (again, after its state was read back from the store)."""
    live.move_rules = rules
    live.request_context = dataclasses.replace(live.request_context, pin=rules.applied)
    pin_all(live.dc.vms, rules)
    pin_all(live.dc.pending, rules)
    for run in live.runtime.plans.running():  # the VMs a plan is to start, too
        pin_all(run.reserved, rules)
