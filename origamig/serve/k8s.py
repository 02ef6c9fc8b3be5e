"""The Kubernetes scheduler extender (docs/service.md#kubernetes-scheduler-extender): `filter` and
`prioritize` on kube-scheduler's `ExtenderArgs`, answered from the live state with the policy's
arrival rule, PM by PM — the exact, start-slice-aware fit, no solver.

A node name is a snapshot PM id. A pod asks for GIs through container resources
`nvidia.com/mig-<profile>` or MIG-backed vGPU types (`pods.pod_entry`). Filter keeps the nodes where
the rule places every GI; prioritize scores them 10 (the PM the rule itself would pick) down to 1 by
the rule's own order, 0 where the pod does not fit. A pod without MIG resources is not judged: every
node passes, scores 0. Both only read the state: the pod is placed when the VM platform posts it
(`POST /v1/vms`).

A cordoned node passes no pod (docs/service.md#the-fleet-as-it-changes). A move under way holds only
what it uses (docs/plans.md#holds), and no pod is refused only because of a plan: when the pod fits
no node as the state is, the nodes where it fits once the moves with nothing carried out yet give
way pass — posted there, it takes the place and those moves yield.
"""

from __future__ import annotations

from typing import Any

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import VmSpec
from origamig.serve.bind import migration_target
from origamig.serve.fit import PmFit, arrival_fit, fit_on_pm
from origamig.serve.live import Live
from origamig.serve.pods import pod_entry
from origamig.serve.requests import RequestError, read_vm_entry

MAX_PRIORITY = 10  # kube-scheduler's MaxExtenderPriority
NOT_A_PM = "not a PM of the origamig snapshot"
CORDONED = "cordoned: nothing new lands on it (POST /v1/pms/{id}/uncordon)"


def candidate_names(args: dict[str, Any]) -> tuple[list[str], list[dict[str, Any]] | None]:
    """The node names of `ExtenderArgs`, and the `Nodes.Items` objects when the nodes came whole."""
    names = args.get("NodeNames")
    if names is not None:
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise RequestError("NodeNames: expected a list of node names")
        return list(names), None
    nodes = args.get("Nodes")
    items = nodes.get("items") if isinstance(nodes, dict) else None
    if not isinstance(items, list):
        raise RequestError("Nodes.items: expected a list of nodes (or give NodeNames)")
    out = []
    for n, node in enumerate(items):
        name = (node.get("metadata") or {}).get("name") if isinstance(node, dict) else None
        if not isinstance(name, str):
            raise RequestError(f"Nodes.items[{n}].metadata.name: expected a string")
        out.append(name)
    return out, items


def _pod_vm(live: Live, args: Any) -> VmSpec:
    if not isinstance(args, dict):
        raise RequestError("body: expected ExtenderArgs (an object with Pod and Nodes or NodeNames)")
    entry = pod_entry(args.get("Pod"), live.most_gis)
    try:
        return read_vm_entry(entry, live.request_context)
    except RequestError as exc:
        raise RequestError([f"Pod: {line}" for line in exc.problems]) from None


def _verdicts(live: Live, vm: VmSpec, names: list[str]) -> dict[str, tuple[Any, str]]:
    """Per node: (the rule's key, "") when the pod fits there, else (None, why not).

    A PM's verdict for a VM shape (CPU, RAM, profiles) is kept until the PM's VMs change
    (`serve/verdicts.py`)."""
    fit = arrival_fit(live.policy)
    shape = (vm.cpu_m, vm.ram_mb, tuple(tuple((p.gpu_model, p.name) for p in c) for c in vm.gi_choices))
    cache = live.verdicts
    out: dict[str, tuple[Any, str]] = {}
    with live.lock:
        dc = live.dc
        member_of = [live.class_members.get(h, frozenset()) for h in vm.gpu_classes]
        asked: dict[int, int] = {}  # PM → its version, for the nodes judged by the rule
        cordoned = live.runtime.cordoned
        for name in names:
            j = dc.index.get(name)
            if j is None:
                out[name] = (None, NOT_A_PM)
            elif j in cordoned:
                out[name] = (None, CORDONED)
            elif not any(j in members for members in member_of):
                models = " or ".join(dict.fromkeys(c[0].gpu_model for c in vm.gi_choices))
                out[name] = (None, f"no {models} GPU")
            else:
                asked[j] = live.pm_version[j]
        kept = cache.get_many(shape, asked)
        for name in names:
            if name in out:
                continue
            j = dc.index[name]
            verdict = kept.get(j)
            if verdict is None:
                verdict = kept[j] = _verdict(dc, j, vm, fit)
                cache.put(shape, j, asked[j], verdict)
            out[name] = verdict
    return out


def _verdict(dc: DataCenter, j: int, vm: VmSpec, fit: PmFit) -> tuple[Any, str]:
    """PM j's own verdict on the pod: (the rule's key, "") or (None, why it does not fit)."""
    hit = fit_on_pm(dc, j, vm, fit)
    return (None, hit) if isinstance(hit, str) else ((hit[0], j), "")


def _yielding(live: Live, vm: VmSpec, names: list[str]) -> dict[str, tuple[Any, str]]:
    """The verdicts on the nodes named, as if the moves with nothing carried out yet gave way (what
    a VM placed there gets: `Runtime.record`); uncached."""
    fit = arrival_fit(live.policy)
    with live.lock:
        probe = live.dc.copy()
        for key in live.runtime.plans.yieldable():
            probe.unhold(key)
        out: dict[str, tuple[Any, str]] = {}
        cordoned = live.runtime.cordoned
        for name in names:
            j = probe.index.get(name)
            if j is None or j in cordoned:
                out[name] = (None, NOT_A_PM if j is None else CORDONED)
            else:
                out[name] = _verdict(probe, j, vm, fit)
    return out


def filter_nodes(live: Live, args: Any) -> dict[str, Any]:
    """`ExtenderFilterResult` for `ExtenderArgs` `args` (a bad pod is reported in `Error`)."""
    names, items = candidate_names(args if isinstance(args, dict) else {})
    try:
        vm = _pod_vm(live, args)
    except RequestError as exc:
        return {"Nodes": None, "NodeNames": None, "FailedNodes": {}, "FailedAndUnresolvableNodes": {},
                "Error": "; ".join(exc.problems)}  # fmt: skip
    verdict = _verdicts(live, vm, names) if vm.gis else {n: (0, "") for n in names}
    moving = migration_target(live, vm.id) if vm.gis else None
    if moving is not None:  # a live migration's target pod goes where the plan sends its VM
        why = f"a plan migrates {vm.id} to {moving[0]}"
        verdict = {n: (0, "") if n == moving[0] else (None, why) for n in names}
    elif vm.gis and all(verdict[n][0] is None for n in names):
        verdict = _yielding(live, vm, names)  # where moves under way give way, the pod passes
    passed = [n for n in names if verdict[n][0] is not None]
    failed = {n: verdict[n][1] for n in names if verdict[n][0] is None}
    result: dict[str, Any] = {"FailedNodes": failed, "FailedAndUnresolvableNodes": {}, "Error": ""}
    if items is None:
        result.update(Nodes=None, NodeNames=passed)
    else:
        keep = set(passed)
        result.update(
            Nodes={"metadata": {}, "items": [i for i, n in zip(items, names, strict=True) if n in keep]},
            NodeNames=None,
        )
    return result


def prioritize_nodes(live: Live, args: Any) -> list[dict[str, Any]]:
    """`HostPriorityList`: 10 for the PM the arrival rule picks, down to 1 in the rule's order, 0 where
    the pod does not fit (or has no MIG resources)."""
    names, _ = candidate_names(args if isinstance(args, dict) else {})
    vm = _pod_vm(live, args)
    if not vm.gis:
        return [{"Host": n, "Score": 0} for n in names]
    verdict = _verdicts(live, vm, names)
    ranked = sorted((verdict[n][0], n) for n in names if verdict[n][0] is not None)
    score = {n: MAX_PRIORITY - (MAX_PRIORITY * r) // len(ranked) for r, (_, n) in enumerate(ranked)}
    return [{"Host": n, "Score": score.get(n, 0)} for n in names]
