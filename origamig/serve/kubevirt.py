"""A plan as KubeVirt runs it (docs/service.md#the-kubevirt-flow): every step in execution order, each
live migration between PMs as a `kubevirt.io/v1` `VirtualMachineInstanceMigration` whose
`addedNodeSelector` selects the target node, and the MIG GI steps around it with the profile and
start slice to create or destroy.

A VM id `namespace/name` names the VirtualMachineInstance `name` in `namespace`; an id without `/` is
a VMI of the default namespace. KubeVirt migrates between nodes only: a move between GIs of one PM
(`from` = `to`) has no manifest and is marked so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from origamig.cluster.records import VmSpec
from origamig.plan.steps import StepOp

HOSTNAME_LABEL = "kubernetes.io/hostname"
# KubeVirt 1.9 live-migrates a VM with one mediated-device vGPU (alpha) and none with SR-IOV vGPUs
# or passthrough devices (docs/service.md#kubevirt): mark such VMs "migratable": false.
MULTI_GI_WARNING = (
    "this VM has several GIs: KubeVirt 1.9 live-migrates one mediated-device vGPU per VM (alpha); "
    'mark VMs it cannot move "migratable": false'
)
PLAN_LABEL = "origamig.io/plan"
STEP_LABEL = "origamig.io/step"


def vmi_name(vm_id: str, namespace: str) -> tuple[str, str]:
    """(namespace, name) of the VMI behind VM id `vm_id`."""
    ns, sep, name = vm_id.rpartition("/")
    return (ns, name) if sep and ns else (namespace, vm_id)


def migration_manifest(plan_id: int, n: int, step: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    """The VirtualMachineInstanceMigration of migrate step n (to another node)."""
    ns, name = vmi_name(str(step["vm"]), namespace)
    return {
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachineInstanceMigration",
        "metadata": {
            "name": f"origamig-plan-{plan_id}-step-{n}",
            "namespace": ns,
            "labels": {PLAN_LABEL: str(plan_id), STEP_LABEL: str(n)},
        },
        "spec": {"vmiName": name, "addedNodeSelector": {HOSTNAME_LABEL: str(step["to"])}},
    }


def kubevirt_flow(
    plan: Mapping[str, Any], specs: Mapping[str, VmSpec], namespace: str = "default"
) -> dict[str, Any]:
    """`{"plan", "status", "items": [...]}`: one item per step of `plan` (its JSON, docs/service.md#plans),
    in order, with its status."""
    items = []
    for listed in plan["steps"]:
        n = listed["n"]
        step = {k: v for k, v in listed.items() if k not in ("n", "status")}
        item: dict[str, Any] = {"n": n, "status": listed["status"], "op": step["op"], "step": step}
        if step["op"] == StepOp.MIGRATE:
            vm = specs.get(str(step["vm"]))
            if vm is not None and len(vm.gis) > 1:
                item["warning"] = MULTI_GI_WARNING
            if step["from"] != step["to"]:
                item["manifest"] = migration_manifest(plan["id"], n, step, namespace)
            else:
                item["manifest"] = None
                item["note"] = "a move between GIs of one node: KubeVirt migrates between nodes only"
        elif step["op"] in (StepOp.CREATE_GI, StepOp.DESTROY_GI):
            vm = specs.get(str(step["vm"]))
            if vm is not None:
                prof = vm.gis[int(step["gi"])]
                item["mig"] = {
                    "node": step["pm"],
                    "gpu": step["gpu"],
                    "profile": prof.name,
                    "profile_id": prof.nvidia_smi_id,
                    "start": step["start"],
                }
        items.append(item)
    return {"plan": plan["id"], "status": plan["status"], "items": items}
