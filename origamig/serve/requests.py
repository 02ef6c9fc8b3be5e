"""VM requests as the service reads them: a snapshot VM entry without `placement`, read by the
snapshot reader's own entry reader (docs/formats.md#snapshot), and a Kubernetes pod turned into such
an entry.

The reader resolves profile names against the GPU models on the snapshot's PMs, in order of first
appearance (`EntryContext`, worked out once), so an entry reads exactly as it would inside the whole
snapshot.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from origamig.cluster.catalog import Catalog, GpuModel, default_catalog
from origamig.cluster.records import PmSpec, VmSpec
from origamig.errors import UserError
from origamig.serve.door import MAX_NAME, MAX_NAMESPACE, id_problem
from origamig.serve.vgpu import vgpu_table
from origamig.snapshot.document import Snapshot
from origamig.snapshot.reader import read_vm_entry as read_one_entry

ENTRY_PATH = "vm"  # the path the entry reader names fields under (taken off: `cpu: missing`)
MIG_RESOURCE = "nvidia.com/mig-"  # container resources `nvidia.com/mig-<profile>` (the mixed strategy)


class RequestError(UserError):
    """A request the service refuses (HTTP 400): one line per problem, naming the field and value."""


@dataclass(frozen=True)
class EntryContext:
    """What a VM entry is read against: the GPU models on the PMs (order of first appearance) and the
    catalog with the snapshot's inline models."""

    present: tuple[GpuModel, ...]
    catalog: Catalog
    pin: Callable[[VmSpec], VmSpec] | None = None  # the platform's pin of what it cannot move

    @classmethod
    def of(cls, snap: Snapshot) -> EntryContext:
        return cls(snap.present_models, default_catalog().with_gpus(snap.gpu_models))


def most_gis(pms: Sequence[PmSpec]) -> int:
    """The most GIs any PM can hold (one per memory slice): a request for more fits nowhere."""
    return max((sum(g.memory_slices for g in pm.gpus) for pm in pms), default=0)


def gi_count_problem(count: int, limit: int, where: str = "gis") -> str | None:
    """Why `count` GIs are refused at once (more than any PM holds), or None."""
    if count > limit:
        return f"{where}: {count} GIs is more than any PM holds (at most {limit})"
    return None


def read_vm_entry(raw: Any, context: EntryContext, limit: int | None = None) -> VmSpec:
    """The VM of request entry `raw` (its `placement`, if any, is read by the caller); `RequestError`
    names every bad field (`gis[0]: ...`). A request for more than `limit` GIs is refused before it is
    read."""
    if not isinstance(raw, dict):
        raise RequestError(f"body: expected a VM object, got {type(raw).__name__}")
    if not isinstance(raw.get("id"), str) or not raw["id"].strip():
        raise RequestError(f"id: {raw.get('id')!r} is not a non-empty string")
    problem = id_problem(raw["id"])
    if problem is not None:
        raise RequestError(problem)
    gis = raw.get("gis")
    problem = gi_count_problem(len(gis), limit) if isinstance(gis, list) and limit is not None else None
    if problem is not None:
        raise RequestError(problem)
    raw = {k: v for k, v in raw.items() if k != "placement"}
    vm, problems = read_one_entry(raw, context.present, context.catalog, ENTRY_PATH)
    if vm is None:
        raise RequestError([line.removeprefix(f"{ENTRY_PATH}.") for line in problems])
    return context.pin(vm) if context.pin is not None else vm


# --- Kubernetes pods ---------------------------------------------------------------------------
_QUANTITY = re.compile(r"^([+]?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")
_SUFFIX = {
    "": 1.0,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
    "Pi": 2.0**50,
    "Ei": 2.0**60,
}


def quantity(value: Any, where: str) -> float:
    """A Kubernetes resource quantity (`500m`, `2`, `16Gi`, `1e9`) as a plain number."""
    match = _QUANTITY.match(str(value).strip())
    if match is None or match.group(2) not in _SUFFIX:
        raise RequestError(f"{where}: {value!r} is not a Kubernetes quantity")
    return float(match.group(1)) * _SUFFIX[match.group(2)]


def pod_entry(pod: Any, limit: int | None = None) -> dict[str, Any]:
    """The VM request entry of `pod`: its GIs (limits, else requests, of every container:
    `nvidia.com/mig-<profile>`, or a MIG-backed vGPU type, which names the GPU model too), its CPU
    requests in cores and its memory requests in GB; id `namespace/name`. A pod asking for more
    than `limit` GIs in all is refused before any list is built."""
    if not isinstance(pod, dict):
        raise RequestError("Pod: expected an object")
    meta = pod.get("metadata") or {}
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(name, str) or not name:
        raise RequestError(f"Pod.metadata.name: {name!r} is not a non-empty string")
    namespace = meta.get("namespace") or "default"
    if not isinstance(namespace, str):
        raise RequestError(f"Pod.metadata.namespace: {namespace!r} is not a string")
    if len(name) > MAX_NAME or len(namespace) > MAX_NAMESPACE:
        raise RequestError(
            f"Pod.metadata: {namespace[:40]!r}/{name[:40]!r}… is longer than Kubernetes allows "
            f"(namespace {MAX_NAMESPACE}, name {MAX_NAME} characters)"
        )
    spec = pod.get("spec") or {}
    containers = spec.get("containers") if isinstance(spec, dict) else None
    if not isinstance(containers, list):
        raise RequestError("Pod.spec.containers: expected a list")
    gis: list[str] = []
    models: dict[str, str] = {}  # GPU model → the vGPU resource that named it
    cpu = ram_bytes = 0.0
    for n, container in enumerate(containers):
        where = f"Pod.spec.containers[{n}].resources"
        resources = container.get("resources") or {} if isinstance(container, dict) else {}
        limits = resources.get("limits") or {}
        requests = resources.get("requests") or {}
        for key in sorted({*limits, *requests}):
            asked = gi_resource(key)
            if asked is None:
                continue
            profile, model = asked
            count = quantity(limits.get(key, requests.get(key)), f"{where}.limits.{key}")
            if count != int(count) or count < 0:
                raise RequestError(f"{where}.limits.{key}: {count:g} is not a whole number of GIs")
            total = len(gis) + count
            problem = gi_count_problem(int(total), limit, "Pod") if limit is not None else None
            if problem is not None:
                raise RequestError(problem)
            gis += [profile] * int(count)
            if model is not None and count:
                models.setdefault(model, key)
        if "cpu" in requests:
            cpu += quantity(requests["cpu"], f"{where}.requests.cpu")
        if "memory" in requests:
            ram_bytes += quantity(requests["memory"], f"{where}.requests.memory")
    # A virt-launcher pod is its VirtualMachineInstance: the VM keeps its id from pod to pod (a live
    # migration's target pod, a restart), and the KubeVirt flow names the VMI (`serve/kubevirt.py`).
    vm_id = f"{namespace}/{vmi_of(meta) or name}"
    entry: dict[str, Any] = {"id": vm_id, "cpu": cpu, "ram_gb": ram_bytes / 1e9, "gis": gis}
    if len(models) > 1:
        named = ", ".join(f"{key} ({model})" for model, key in models.items())
        raise RequestError(f"Pod: asks for vGPU types of {len(models)} GPU models ({named}): give one")
    if models:
        entry["gpu_model"] = next(iter(models))
    return entry


def vmi_of(meta: dict[str, Any]) -> str | None:
    """The name of the VirtualMachineInstance that owns a pod (KubeVirt's virt-launcher), or None."""
    for owner in meta.get("ownerReferences") or ():
        if isinstance(owner, dict) and owner.get("kind") == "VirtualMachineInstance":
            name = owner.get("name")
            if isinstance(name, str) and name and len(name) <= MAX_NAME:
                return name
    return None


def gi_resource(key: str) -> tuple[str, str | None] | None:
    """The GI profile a container resource asks for, and the GPU model it names (a vGPU type names
    one; `nvidia.com/mig-<profile>` none), or None for a resource that is not a GI."""
    if key.startswith(MIG_RESOURCE):
        return key.removeprefix(MIG_RESOURCE), None
    vgpu = vgpu_table().of_resource(key)
    return (vgpu.profile, vgpu.gpu_model) if vgpu is not None else None
