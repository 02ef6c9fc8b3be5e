"""kube-scheduler's bind delegated to the service (docs/service.md#bind): the VM recorded where the
filter would put it, the pod's `v1` `Binding` created through the Kubernetes API — checked here against
the API's shape by a fake API server the service reaches through `--kubeconfig` — the record undone
when the API refuses, and two pods bound for the last free slot."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from origamig.cluster.catalog import default_catalog
from tests.serve.test_serve_k8s import pod_args
from tests.serve.test_serve_plans import FAST, ack, wait_plan
from tests.serve.test_serve_platform import spread
from tests.serve_helpers import EXAMPLES, Server, valid

FLEET = EXAMPLES / "kubevirt-fleet.json"
QUIET = ("check_interval_s=1e9",)
TOKEN = "fake-api-token"
ONE_GPU = {  # one A100-40GB: room for one 7g.40gb GI
    "version": 1,
    "pms": [{"id": "node-1", "cpu": 64, "ram_gb": 512, "gpus": ["A100-40GB"]}],
    "vms": [],
}


@dataclass
class FakeApi:
    """A Kubernetes API server that answers pod reads and Binding creations, and keeps each request."""

    refuse: bool = False  # answer Bindings 409, as the API does for a pod already bound
    requests: list[dict[str, Any]] = field(default_factory=list)
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)  # "ns/name" → pod object

    def handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                """Quiet: the fake API server's requests are asserted, not logged."""

            def answer(self, code: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                api.requests.append(
                    {"method": "GET", "path": self.path, "auth": self.headers["Authorization"]}
                )
                parts = self.path.split("?")[0].split("/")  # /api/v1/namespaces/{ns}/pods/{name}
                pod = api.pods.get(f"{parts[4]}/{parts[6]}") if len(parts) == 7 else None
                if pod is None:
                    self.answer(
                        404, {"kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404}
                    )
                else:
                    self.answer(200, pod)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                api.requests.append(
                    {"method": "POST", "path": self.path, "auth": self.headers["Authorization"], "body": body}
                )
                if api.refuse:
                    message = f'pod {body["metadata"]["name"]} is already assigned to node "elsewhere"'
                    self.answer(409, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                      "message": message, "reason": "Conflict", "code": 409})  # fmt: skip
                else:
                    self.answer(201, {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201})

        return Handler

    def bindings(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["method"] == "POST"]


@pytest.fixture
def fake_api(tmp_path: Path) -> Iterator[tuple[FakeApi, Path]]:
    api = FakeApi()
    server = ThreadingHTTPServer(("127.0.0.1", 0), api.handler())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "fake",
                "clusters": [
                    {"name": "fake", "cluster": {"server": f"http://127.0.0.1:{server.server_port}"}}
                ],
                "users": [{"name": "scheduler", "user": {"token": TOKEN}}],
                "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "scheduler"}}],
            }
        )
    )
    try:
        yield api, kubeconfig
    finally:
        server.shutdown()
        server.server_close()


def vgpu_pod(name: str, vgpu: str, nodes: list[str], namespace: str = "ml", uid: str = "") -> dict[str, Any]:
    args = pod_args([], cpu="9", memory="96G", names=nodes)
    args["Pod"]["metadata"].update(name=name, namespace=namespace, uid=uid or f"uid-{name}")
    args["Pod"]["spec"]["containers"][0]["resources"]["limits"][vgpu] = "1"
    return args


def binding_args(name: str, node: str, namespace: str = "ml") -> dict[str, str]:
    return {"PodName": name, "PodNamespace": namespace, "PodUID": f"uid-{name}", "Node": node}


def test_bind_records_the_filters_choice_and_creates_a_v1_binding_to_the_node(
    tmp_path: Path, fake_api: tuple[FakeApi, Path]
) -> None:
    api, kubeconfig = fake_api
    nodes = [pm["id"] for pm in json.loads(FLEET.read_text())["pms"]]
    args = vgpu_pod("vm-a", "nvidia.com/NVIDIA_H100-3-40C", nodes)
    with (
        Server(tmp_path, seed=FLEET, options=QUIET, extra=["--kubeconfig", str(kubeconfig)]) as srv,
        srv.client() as c,
    ):
        scores = {h["Host"]: h["Score"] for h in c.post("/k8s/prioritize", json=args).json()}
        node = max(scores, key=lambda n: scores[n])  # where kube-scheduler binds it
        assert c.post("/k8s/filter", json=args).json()["NodeNames"].count(node) == 1
        answer = c.post("/k8s/bind", json=binding_args("vm-a", node))
        assert answer.status_code == 200 and answer.json() == {"Error": ""}
        where = c.get("/v1/vms/ml/vm-a").json()
        valid(c.get("/v1/snapshot").json())
    assert where["status"] == "running" and where["placement"]["pm"] == node
    (request,) = api.bindings()
    assert request["path"] == "/api/v1/namespaces/ml/pods/vm-a/binding"
    assert request["auth"] == f"Bearer {TOKEN}"
    body = request["body"]
    assert (body["apiVersion"], body["kind"]) == ("v1", "Binding")
    assert body["target"] == {"apiVersion": "v1", "kind": "Node", "name": node}
    meta = body["metadata"]
    assert (meta["name"], meta["namespace"], meta["uid"]) == ("vm-a", "ml", "uid-vm-a")
    gis = json.loads(meta["annotations"]["origamig.io/gis"])
    smi_id = default_catalog().gpu("H100-80GB").profile("3g.40gb").nvidia_smi_id
    assert gis == [{"gpu": s["gpu"], "start": s["start"], "profile": "3g.40gb", "profile_id": smi_id}
                   for s in where["placement"]["gis"]]  # fmt: skip
    assert gis[0]["start"] in (0, 4) and meta["annotations"]["origamig.io/node"] == node


def test_a_binding_the_api_refuses_is_undone_and_answered_with_its_reason(
    tmp_path: Path, fake_api: tuple[FakeApi, Path]
) -> None:
    api, kubeconfig = fake_api
    api.refuse = True
    args = vgpu_pod("vm-b", "nvidia.com/GRID_A100D-3-40C", ["a100-04"])
    with (
        Server(tmp_path, seed=FLEET, options=QUIET, extra=["--kubeconfig", str(kubeconfig)]) as srv,
        srv.client() as c,
    ):
        before = c.get("/v1/snapshot").json()
        assert c.post("/k8s/filter", json=args).json()["NodeNames"] == ["a100-04"]
        error = c.post("/k8s/bind", json=binding_args("vm-b", "a100-04")).json()["Error"]
        assert "HTTP 409" in error and 'already assigned to node "elsewhere"' in error
        assert "record is undone" in error
        assert c.get("/v1/vms/ml/vm-b").status_code == 404
        assert c.get("/v1/snapshot").json()["vms"] == before["vms"]
        assert c.get("/v1/status").json()["vms"]["running"] == 30
    assert len(api.bindings()) == 1


def test_two_pods_bound_for_the_last_free_slot_one_wins_and_one_gets_error(
    tmp_path: Path, fake_api: tuple[FakeApi, Path]
) -> None:
    api, kubeconfig = fake_api
    seed = tmp_path / "one-gpu.json"
    seed.write_text(json.dumps(ONE_GPU))
    first = vgpu_pod("first", "nvidia.com/NVIDIA_A100-7-40C", ["node-1"], namespace="default")
    second = vgpu_pod("second", "nvidia.com/NVIDIA_A100-7-40C", ["node-1"], namespace="default")
    with (
        Server(tmp_path, seed=seed, options=QUIET, extra=["--kubeconfig", str(kubeconfig)]) as srv,
        srv.client() as c,
    ):
        for args in (first, second):  # both judged before either is bound: both see the slot
            assert c.post("/k8s/filter", json=args).json()["NodeNames"] == ["node-1"]
        won = c.post("/k8s/bind", json=binding_args("first", "node-1", "default")).json()
        lost = c.post("/k8s/bind", json=binding_args("second", "node-1", "default")).json()
        assert won == {"Error": ""}
        assert "does not fit node-1 now" in lost["Error"]
        assert c.get("/v1/vms/default/first").json()["status"] == "running"
        assert c.get("/v1/vms/default/second").status_code == 404
        assert c.post("/k8s/filter", json=second).json()["NodeNames"] == []
    assert [r["path"] for r in api.bindings()] == ["/api/v1/namespaces/default/pods/first/binding"]


def test_a_pod_the_filter_never_saw_is_read_from_the_api(
    tmp_path: Path, fake_api: tuple[FakeApi, Path]
) -> None:
    api, kubeconfig = fake_api
    api.pods["ml/late"] = vgpu_pod("late", "nvidia.com/NVIDIA_H100XM-1-10C", [])["Pod"]
    with (
        Server(tmp_path, seed=FLEET, options=QUIET, extra=["--kubeconfig", str(kubeconfig)]) as srv,
        srv.client() as c,
    ):
        assert c.post("/k8s/bind", json=binding_args("late", "h100-03")).json() == {"Error": ""}
        placed = c.get("/v1/vms/ml/late").json()["placement"]
        missing = c.post("/k8s/bind", json=binding_args("ghost", "h100-03")).json()["Error"]
    assert placed["pm"] == "h100-03"
    assert [r["path"] for r in api.requests if r["method"] == "GET"] == [
        "/api/v1/namespaces/ml/pods/late",
        "/api/v1/namespaces/ml/pods/ghost",
    ]
    assert "reading pod ml/ghost: HTTP 404" in missing and len(api.bindings()) == 1


def test_bind_without_an_api_or_with_bad_arguments_says_why(tmp_path: Path) -> None:
    with Server(tmp_path, seed=FLEET, options=QUIET) as srv, srv.client() as c:
        assert "no Kubernetes API" in c.post("/k8s/bind", json=binding_args("x", "h100-03")).json()["Error"]
        bad = c.post("/k8s/bind", json={"PodName": "x", "PodNamespace": "", "Node": 3}).json()["Error"]
        assert "PodNamespace: '' is not a non-empty string" in bad and "Node: 3" in bad


def test_an_unreadable_kubeconfig_stops_the_start_with_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "kubeconfig"
    broken.write_text("not: [a kubeconfig")
    srv = Server(tmp_path, seed=FLEET, options=QUIET, extra=["--kubeconfig", str(broken)])
    with pytest.raises(RuntimeError, match="exited 2") as failed:
        srv.start()
    assert f"error: --kubeconfig: {broken}: cannot be used" in str(failed.value)
    assert not (tmp_path / "state.db").exists()


def test_a_live_migrations_target_pod_passes_only_the_plans_node_and_binds_to_its_gis(
    tmp_path: Path, fake_api: tuple[FakeApi, Path]
) -> None:
    api, kubeconfig = fake_api
    seed = tmp_path / "spread.json"
    seed.write_text(json.dumps(spread("A100-80GB")))  # one single-GI VM on each node: KubeVirt may move it
    extra = ["--kubeconfig", str(kubeconfig), "--platform", "kubevirt", "--intra-pm-moves", "false"]
    with Server(tmp_path, seed=seed, options=FAST, extra=extra) as srv, srv.client() as c:
        plan = wait_plan(c, 1)
        (move,) = [s for s in plan["steps"] if s["op"] == "migrate"]
        vmi = move["vm"].split("/")[1]
        target = vgpu_pod("virt-launcher-target", "nvidia.com/NVIDIA_A100D-1-10C", ["node-a", "node-b"])
        target["Pod"]["metadata"]["ownerReferences"] = [{"kind": "VirtualMachineInstance", "name": vmi}]
        result = c.post("/k8s/filter", json=target).json()
        assert result["NodeNames"] == [move["to"]]
        assert result["FailedNodes"] == {move["from"]: f"a plan migrates {move['vm']} to {move['to']}"}
        bound = c.post("/k8s/bind", json=binding_args("virt-launcher-target", move["to"]))
        assert bound.json() == {"Error": ""}
        assert c.get(f"/v1/vms/{move['vm']}").json()["placement"]["pm"] == move["from"]  # not recorded twice
        for n in range(len(plan["steps"])):
            assert ack(c, 1, n).status_code == 200
        assert c.get(f"/v1/vms/{move['vm']}").json()["placement"]["pm"] == move["to"]
    (request,) = api.bindings()
    assert request["body"]["target"]["name"] == move["to"]
    made = [{"gpu": s["gpu"], "start": s["start"]} for s in plan["steps"]
            if s["op"] == "create_gi" and s["vm"] == move["vm"] and s["pm"] == move["to"]]  # fmt: skip
    gis = json.loads(request["body"]["metadata"]["annotations"]["origamig.io/gis"])
    assert made and [{"gpu": g["gpu"], "start": g["start"]} for g in gis] == made
