"""kube-scheduler's bind, delegated to the service (`bindVerb`, docs/service.md#bind).

`POST /k8s/bind` gets `ExtenderBindingArgs` (`PodName`, `PodNamespace`, `PodUID`, `Node`). The service
records the pod's VM on that node with the GIs its arrival rule chooses there — the filter's own
choice (`Live.arrive` with `"pm"`) — then creates the pod's `v1` `Binding` through the Kubernetes API
(`POST /api/v1/namespaces/{ns}/pods/{name}/binding`, target the node). The Binding carries the chosen
GIs as the annotation `origamig.io/gis`, which the API server merges into the pod as it binds it: the
node's agent reads there which GIs to create, at which start slices. When the API refuses the Binding
the record is undone and the answer carries `Error`. Two pods bound for the last free slot: the first
is recorded, the second does not fit any more and gets `Error` (kube-scheduler retries it).

The pod's resources come from the filter call that judged it (kept, bounded, by name and UID) or,
after a restart, from the API (`GET` the pod).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from origamig.errors import UserError, require_extra
from origamig.serve.arrivals import Conflict, DuplicateVm
from origamig.serve.events_log import EVENTS
from origamig.serve.live import Live
from origamig.serve.pods import pod_entry
from origamig.serve.requests import RequestError

GIS_ANNOTATION = "origamig.io/gis"  # JSON: [{"gpu", "start", "profile", "profile_id"}, ...]
NODE_ANNOTATION = "origamig.io/node"
BIND_TIMEOUT_S = 4.0  # within kube-scheduler's httpTimeout (5 s in the printed stanza)
MAX_PODS_KEPT = 10_000  # pods remembered from filter calls, the oldest forgotten first
ARGS_FIELDS = ("PodName", "PodNamespace", "PodUID", "Node")


class KubeApiError(Exception):
    """The Kubernetes API refused a request, or could not be reached: one line saying which and why."""


def kube_api(kubeconfig: Path | None) -> Any | None:
    """A `CoreV1Api` of the official client for `kubeconfig`, or the in-cluster service account when
    the service runs in a pod; None without either. `UserError` for a kubeconfig that cannot be read."""
    if kubeconfig is None and not os.environ.get("KUBERNETES_SERVICE_HOST"):
        return None
    require_extra("kubernetes", "serve", "--kubeconfig / POST /k8s/bind")
    from kubernetes import client, config

    settings = client.Configuration()
    try:
        if kubeconfig is not None:
            config.load_kube_config(config_file=str(kubeconfig), client_configuration=settings)
        else:
            config.load_incluster_config(client_configuration=settings)
    except Exception as exc:  # the loader raises its own, YAML's, OS and value errors
        where = f"--kubeconfig: {kubeconfig}" if kubeconfig is not None else "in-cluster configuration"
        why = str(exc).splitlines()[0] if str(exc) else repr(exc)
        raise UserError(f"{where}: cannot be used ({why})") from None
    return client.CoreV1Api(client.ApiClient(settings))


def binding_body(namespace: str, name: str, uid: str, node: str, annotations: Mapping[str, str]) -> Any:
    """The `v1` `Binding` of pod `namespace/name` to `node` (the API server checks `uid`)."""
    from kubernetes import client

    meta = client.V1ObjectMeta(name=name, namespace=namespace, annotations=dict(annotations), uid=uid or None)
    target = client.V1ObjectReference(api_version="v1", kind="Node", name=node)
    return client.V1Binding(api_version="v1", kind="Binding", metadata=meta, target=target)


def api_refusal(exc: Exception) -> str:
    """One line for a failed API call: the HTTP status and the API's message, or the transport error."""
    status = getattr(exc, "status", None)
    body = getattr(exc, "body", None)
    if status is not None:
        message = getattr(exc, "reason", "") or ""
        with contextlib.suppress(ValueError, AttributeError):
            message = json.loads(body).get("message", message) if body else message
        return f"HTTP {status}: {message}"
    return f"{exc.__class__.__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")


def migration_target(live: Live, vm_id: str) -> tuple[str, list[dict[str, Any]]] | None:
    """The node a running plan's next live migration of `vm_id` goes to (a move not ended), with the
    GIs the plan creates for it there; None when no plan is migrating it. KubeVirt starts a target pod
    for the migration, which kube-scheduler filters and binds like any pod."""
    with live.lock:
        dc = live.dc
        vm = dc.vms.get(vm_id)
        for plan in live.runtime.plans.running():
            for m in plan.live_moves():
                if m.vm != vm_id or not m.inter_pm or m.target is None or vm is None:
                    continue
                gis = [
                    {"gpu": m.target.gis[g].gpu, "start": m.target.gis[g].start, "profile": vm.gis[g].name,
                     "profile_id": vm.gis[g].nvidia_smi_id}
                    for g in m.created
                ]  # fmt: skip
                return dc.pms[m.target.pm].id, gis
    return None


class Binder:
    """Binds pods for kube-scheduler: records each on its node, then creates its Binding."""

    def __init__(self, live: Live, api: Any | None) -> None:
        self.live = live
        self.api = api  # CoreV1Api, or None: no Kubernetes API configured
        self._pods: OrderedDict[str, tuple[str, dict[str, Any]]] = OrderedDict()  # id → (uid, entry)
        self._lock = threading.Lock()

    # --- pods seen by the filter ---------------------------------------------------------------
    def remember(self, args: Any) -> None:
        """Keep the pod of a filter call (`ExtenderArgs`), to bind it later without asking the API."""
        pod = args.get("Pod") if isinstance(args, dict) else None
        try:
            entry = pod_entry(pod, self.live.most_gis)
        except RequestError:
            return
        meta = pod.get("metadata") if isinstance(pod, dict) else None
        if not isinstance(meta, dict):
            return
        key = f"{meta.get('namespace') or 'default'}/{meta.get('name')}"
        uid = str(meta.get("uid") or "")
        with self._lock:
            self._pods[key] = (uid, entry)
            self._pods.move_to_end(key)
            while len(self._pods) > MAX_PODS_KEPT:
                self._pods.popitem(last=False)

    def _entry(self, namespace: str, name: str, uid: str) -> dict[str, Any]:
        """The VM request entry of the pod: from its filter call, else read from the API."""
        vm_id = f"{namespace}/{name}"
        with self._lock:
            kept = self._pods.get(vm_id)
        if kept is not None and (not uid or not kept[0] or kept[0] == uid):
            return dict(kept[1])
        if self.api is None:
            raise KubeApiError(f"pod {vm_id} was not filtered by this service, and no Kubernetes API is set")
        try:
            pod = self.api.read_namespaced_pod(name, namespace, _request_timeout=BIND_TIMEOUT_S)
        except Exception as exc:
            raise KubeApiError(f"reading pod {vm_id}: {api_refusal(exc)}") from None
        raw = self.api.api_client.sanitize_for_serialization(pod)
        return pod_entry(raw, self.live.most_gis)

    # --- the bind -------------------------------------------------------------------------------
    def bind(self, args: Any) -> dict[str, str]:
        """`ExtenderBindingResult` for `ExtenderBindingArgs` `args`: `{"Error": ""}` once the pod is
        recorded on its node and bound, else `{"Error": "<why>"}` with nothing recorded. Each bind is
        one line of the event log."""
        answer = self._bind(args)
        named = ("PodNamespace", "PodName", "Node")
        fields = {k: args.get(k) for k in named} if isinstance(args, dict) else {}
        EVENTS.emit("bind", ok=not answer["Error"], **fields, error=answer["Error"])
        return answer

    def _bind(self, args: Any) -> dict[str, str]:
        if not isinstance(args, dict):
            return {"Error": "body: expected ExtenderBindingArgs (PodName, PodNamespace, PodUID, Node)"}
        bad = [f for f in ARGS_FIELDS if not isinstance(args.get(f), str) or (f != "PodUID" and not args[f])]
        if bad:
            return {"Error": "; ".join(f"{f}: {args.get(f)!r} is not a non-empty string" for f in bad)}
        name, namespace, uid, node = (args[f] for f in ("PodName", "PodNamespace", "PodUID", "Node"))
        if self.api is None:
            return {"Error": "no Kubernetes API: start origamig serve with --kubeconfig, or in a pod"}
        try:
            entry = self._entry(namespace, name, uid)
            recorded, annotations = self._record(entry, node)
        except (KubeApiError, RequestError, Conflict) as exc:
            return {"Error": f"pod {namespace}/{name} on {node}: {exc}"}
        try:
            self.api.create_namespaced_pod_binding(
                name,
                namespace,
                binding_body(namespace, name, uid, node, annotations),
                _preload_content=False,  # the API answers a Status, which the client cannot read as a Binding
                _request_timeout=BIND_TIMEOUT_S,
            )
        except Exception as exc:
            if recorded:
                self.live.depart(entry["id"])
            undone = "; its record is undone" if recorded else ""
            return {"Error": f"the Kubernetes API refused the Binding of {namespace}/{name} to {node}: "
                    f"{api_refusal(exc)}{undone}"}  # fmt: skip
        return {"Error": ""}

    def _record(self, entry: dict[str, Any], node: str) -> tuple[bool, dict[str, str]]:
        """Record the pod's VM on `node` (the arrival rule's GIs there): (recorded now, the pod's
        annotations). A pod already recorded on that node (a bind sent again) is not recorded twice."""
        if not entry.get("gis"):
            return False, {NODE_ANNOTATION: node}
        live = self.live
        with live.lock:
            j = live.dc.index.get(node)
            cordoned = j is not None and j in live.runtime.cordoned
        if cordoned and migration_target(live, entry["id"]) is None:
            raise Conflict(f"{node} is cordoned: nothing new lands on it")
        try:
            arrival = live.arrive({**entry, "pm": node})
            recorded = True
        except DuplicateVm:
            moving = migration_target(live, entry["id"])
            if moving is not None and moving[0] == node:  # the target pod of a plan's live migration
                return False, {
                    NODE_ANNOTATION: node,
                    GIS_ANNOTATION: json.dumps(moving[1], separators=(",", ":")),
                }
            status = live.vm_status(entry["id"]) or {}
            where = status.get("placement") or {}
            if where.get("pm") != node:
                raise Conflict(
                    f"already known to the service ({status.get('status', 'unknown')}"
                    f"{' on ' + where['pm'] if where else ''}), not on {node}"
                ) from None
            return False, self.annotations(entry["id"], node)
        assert arrival.placement is not None
        return recorded, self.annotations(entry["id"], node)

    def annotations(self, vm_id: str, node: str) -> dict[str, str]:
        """The pod's annotations: the node, and each GI's GPU, start slice, profile and nvidia-smi id."""
        live = self.live
        with live.lock:
            vm = live.dc.vms[vm_id]
            placement = live.dc.placement[vm_id]
        gis = [
            {"gpu": slot.gpu, "start": slot.start, "profile": prof.name, "profile_id": prof.nvidia_smi_id}
            for prof, slot in zip(vm.gis, placement.gis, strict=True)
        ]
        return {NODE_ANNOTATION: node, GIS_ANNOTATION: json.dumps(gis, separators=(",", ":"))}
