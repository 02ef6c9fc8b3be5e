"""A Kubernetes pod (kube-scheduler's `ExtenderArgs.Pod`) read strictly into a VM request entry.

Every field on the way to the pod's resources has the type Kubernetes gives it, and every resource
quantity is one Kubernetes would accept (`500m`, `2`, `16Gi`, `1e9`), finite and at most
`MAX_QUANTITY`; anything else is a `RequestError` naming the field and the value — never a pod read
as asking for nothing (which would pass on every node). The pod asks for:

- GIs: container resources `nvidia.com/mig-<profile>` (NVIDIA's mixed strategy) or MIG-backed vGPU
  types (`nvidia.com/NVIDIA_H100-3-40C`, `serve/vgpu.py`: each names its GPU model too, and a pod
  names one model at most), limits else requests, whole numbers;
- CPU and memory: the requests;

each as Kubernetes counts a pod: the larger of the app containers' sum and any one init
container's, plus the pod's `overhead`. A KubeVirt virt-launcher pod is its VirtualMachineInstance
(its `ownerReferences`): the VM keeps its id from pod to pod.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

from origamig.serve.door import MAX_NAME, MAX_NAMESPACE
from origamig.serve.requests import RequestError, gi_count_problem
from origamig.serve.vgpu import vgpu_table

MIG_RESOURCE = "nvidia.com/mig-"  # container resources `nvidia.com/mig-<profile>`
MAX_QUANTITY = 1e18  # a quantity beyond this (an exabyte of memory) is no request
_QUANTITY = re.compile(r"^([+]?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")
_SUFFIX = {
    "": 1.0,
    "n": 1e-9,
    "u": 1e-6,
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
    """A Kubernetes resource quantity (a string or a JSON number) as a plain number."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise RequestError(f'{where}: {_show(value)} is not a Kubernetes quantity (a string such as "2")')
    match = _QUANTITY.match(str(value).strip())
    if match is None or match.group(2) not in _SUFFIX:
        raise RequestError(f"{where}: {_show(value)} is not a Kubernetes quantity")
    number = float(match.group(1)) * _SUFFIX[match.group(2)]
    if not math.isfinite(number) or number > MAX_QUANTITY:
        raise RequestError(f"{where}: {_show(value)} is out of range (at most {MAX_QUANTITY:g})")
    return number


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _object(value: Any, where: str, required: bool = False) -> dict[str, Any]:
    """`value` as a JSON object: an absent (null) one is empty unless `required`."""
    if value is None and not required:
        return {}
    if not isinstance(value, dict):
        raise RequestError(f"{where}: expected an object, got {_kind(value)}")
    return value


def _list(value: Any, where: str, required: bool = False) -> list[Any]:
    if value is None and not required:
        return []
    if not isinstance(value, list):
        raise RequestError(f"{where}: expected a list, got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def gi_resource(key: str) -> tuple[str, str | None] | None:
    """The GI profile a container resource asks for, and the GPU model it names (a vGPU type names
    one; `nvidia.com/mig-<profile>` none), or None for a resource that is not a GI."""
    if key.startswith(MIG_RESOURCE):
        return key.removeprefix(MIG_RESOURCE), None
    vgpu = vgpu_table().of_resource(key)
    return (vgpu.profile, vgpu.gpu_model) if vgpu is not None else None


class _Asks:
    """What one container (or the pod's overhead) asks for: GIs per profile, cores, bytes, and the
    GPU models its vGPU types name (model → the first resource that named it)."""

    def __init__(self) -> None:
        self.gis: Counter[str] = Counter()
        self.cpu = 0.0
        self.memory = 0.0
        self.models: dict[str, str] = {}

    def add(self, other: _Asks) -> None:
        self.gis.update(other.gis)
        self.cpu += other.cpu
        self.memory += other.memory
        self.models = {**other.models, **self.models}

    def widen(self, other: _Asks) -> None:
        """Each the larger of the two (an init container runs before the app containers)."""
        self.gis |= other.gis
        self.cpu = max(self.cpu, other.cpu)
        self.memory = max(self.memory, other.memory)
        self.models = {**other.models, **self.models}


def _container(raw: Any, where: str) -> _Asks:
    container = _object(raw, where, required=True)
    resources = _object(container.get("resources"), f"{where}.resources")
    limits = _object(resources.get("limits"), f"{where}.resources.limits")
    requests = _object(resources.get("requests"), f"{where}.resources.requests")
    asks = _Asks()
    values = {
        kind: {key: quantity(value, f"{where}.resources.{kind}.{key}") for key, value in given.items()}
        for kind, given in (("limits", limits), ("requests", requests))
    }
    for key in sorted({*limits, *requests}):
        asked = gi_resource(key)
        if asked is None:
            continue
        profile, model = asked
        kind = "limits" if key in limits else "requests"
        count = values[kind][key]
        if count != int(count):
            raise RequestError(f"{where}.resources.{kind}.{key}: {count:g} is not a whole number of GIs")
        asks.gis[profile] += int(count)
        if model is not None and count:
            asks.models.setdefault(model, key)
    asks.cpu = values["requests"].get("cpu", 0.0)
    asks.memory = values["requests"].get("memory", 0.0)
    return asks


def pod_entry(pod: Any, limit: int | None = None) -> dict[str, Any]:
    """The VM request entry of `pod`: its GIs (and `gpu_model` when a vGPU type names one), its CPU
    requests in cores and its memory requests in GB; id `namespace/<VMI or pod name>`. A pod asking
    for more than `limit` GIs in all is refused before any list is built."""
    pod = _object(pod, "Pod", required=True)
    meta = _object(pod.get("metadata"), "Pod.metadata", required=True)
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise RequestError(f"Pod.metadata.name: {_show(name)} is not a non-empty string")
    namespace = meta.get("namespace") or "default"
    if not isinstance(namespace, str):
        raise RequestError(f"Pod.metadata.namespace: {_show(namespace)} is not a string")
    if len(name) > MAX_NAME or len(namespace) > MAX_NAMESPACE:
        raise RequestError(
            f"Pod.metadata: {namespace[:40]!r}/{name[:40]!r}… is longer than Kubernetes allows "
            f"(namespace {MAX_NAMESPACE}, name {MAX_NAME} characters)"
        )
    spec = _object(pod.get("spec"), "Pod.spec", required=True)
    total = _Asks()
    containers = _list(spec.get("containers"), "Pod.spec.containers", required=True)
    if not containers:
        raise RequestError("Pod.spec.containers: empty (a pod has at least one container)")
    for n, raw in enumerate(containers):
        total.add(_container(raw, f"Pod.spec.containers[{n}]"))
    for n, raw in enumerate(_list(spec.get("initContainers"), "Pod.spec.initContainers")):
        total.widen(_container(raw, f"Pod.spec.initContainers[{n}]"))
    overhead = _object(spec.get("overhead"), "Pod.spec.overhead")
    for key in ("cpu", "memory"):
        if key in overhead:
            setattr(total, key, getattr(total, key) + quantity(overhead[key], f"Pod.spec.overhead.{key}"))
    count = sum(total.gis.values())
    problem = gi_count_problem(count, limit, "Pod") if limit is not None else None
    if problem is not None:
        raise RequestError(problem)
    if len(total.models) > 1:
        named = ", ".join(f"{key} ({model})" for model, key in total.models.items())
        raise RequestError(f"Pod: asks for vGPU types of {len(total.models)} GPU models ({named}): give one")
    gis = [profile for profile, n in sorted(total.gis.items()) for _ in range(n)]
    # A virt-launcher pod is its VirtualMachineInstance: the VM keeps its id from pod to pod (a live
    # migration's target pod, a restart), and the KubeVirt flow names the VMI (`serve/kubevirt.py`).
    vm_id = f"{namespace}/{vmi_of(meta) or name}"
    entry: dict[str, Any] = {"id": vm_id, "cpu": total.cpu, "ram_gb": total.memory / 1e9, "gis": gis}
    if total.models:
        entry["gpu_model"] = next(iter(total.models))
    return entry


def vmi_of(meta: dict[str, Any]) -> str | None:
    """The name of the VirtualMachineInstance that owns a pod (KubeVirt's virt-launcher), or None."""
    for n, raw in enumerate(_list(meta.get("ownerReferences"), "Pod.metadata.ownerReferences")):
        owner = _object(raw, f"Pod.metadata.ownerReferences[{n}]", required=True)
        if owner.get("kind") != "VirtualMachineInstance":
            continue
        name = owner.get("name")
        if not isinstance(name, str) or not name or len(name) > MAX_NAME:
            raise RequestError(
                f"Pod.metadata.ownerReferences[{n}].name: {_show(name)} is not a VirtualMachineInstance "
                f"name (a non-empty string of at most {MAX_NAME} characters)"
            )
        return name
    return None
