"""Malformed bodies, on the application itself: every one an `Error` (or `400`) naming the field — never
a `500`, never a pod read as asking for nothing (which passes on every node) — and the Bearer scheme
in any case (RFC 9110)."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from origamig.policies.base import make_policy
from origamig.serve.app import build_app
from origamig.serve.live import Live
from origamig.serve.pods import pod_entry
from origamig.serve.requests import RequestError
from origamig.serve.store import Store
from origamig.snapshot.document import load_snapshot
from tests.profiles import examples
from tests.serve.test_serve_faults import SEED, SMALL
from tests.serve.test_serve_k8s import pod_args
from tests.serve_helpers import TOKEN

MIG = "nvidia.com/mig-1g.5gb"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    store = Store.create(tmp_path_factory.mktemp("bodies") / "state.db", load_snapshot(SEED).document)
    yield build_app(Live(store, make_policy("origamig", check_interval_s=1e9)), TOKEN)
    store.close()


def call(
    app: Any, method: str, path: str, body: Any = None, headers: dict[str, str] = AUTH
) -> httpx.Response:
    async def run() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t", headers=headers) as c:
            if body is None:
                return await c.request(method, path)
            # Encoded here: httpx refuses NaN and infinities, a client may send them all the same.
            content = json.dumps(body).encode()
            kind = {"Content-Type": "application/json"}
            return await c.request(method, path, content=content, headers=kind)

    return asyncio.run(run())


def with_value(doc: dict, path: tuple[Any, ...], value: Any) -> dict:
    doc = copy.deepcopy(doc)
    where = doc
    for key in path[:-1]:
        where = where[key]
    where[path[-1]] = value
    return doc


CONTAINER = ("Pod", "spec", "containers", 0)
RESOURCES = (*CONTAINER, "resources")
OWNERS = ("Pod", "metadata", "ownerReferences")  # a virt-launcher pod's: its VMI names the VM
VMI = "VirtualMachineInstance"
# A pod kube-scheduler could never send, and what the answer names: each was a 500 or passed every node.
MALFORMED = [
    ((*RESOURCES, "limits", MIG), "1e400", f"resources.limits.{MIG}: '1e400' is out of range"),
    ((*RESOURCES, "requests"), "x", "resources.requests: expected an object, got a string"),
    ((*RESOURCES, "requests"), 7, "resources.requests: expected an object, got a number"),
    ((*RESOURCES, "requests"), True, "resources.requests: expected an object, got a boolean"),
    ((*RESOURCES, "requests"), [1], "resources.requests: expected an object, got a list"),
    ((*RESOURCES, "requests"), 1.5, "resources.requests: expected an object, got a number"),
    ((*RESOURCES, "requests"), "1e400", "resources.requests: expected an object, got a string"),
    ((*RESOURCES, "limits"), "nvidia.com/mig-1g.5gb", "resources.limits: expected an object, got a string"),
    (CONTAINER, "a container", "Pod.spec.containers[0]: expected an object, got a string"),
    (RESOURCES, ["limits"], "Pod.spec.containers[0].resources: expected an object, got a list"),
    (("Pod", "spec", "containers"), {"0": {}}, "Pod.spec.containers: expected a list, got an object"),
    (("Pod", "spec", "containers"), [], "Pod.spec.containers: empty"),
    (("Pod", "spec"), "spec", "Pod.spec: expected an object, got a string"),
    (("Pod", "metadata"), ["x"], "Pod.metadata: expected an object, got a list"),
    ((*RESOURCES, "limits", "cpu"), "four", "resources.limits.cpu: 'four' is not a Kubernetes quantity"),
    ((*RESOURCES, "requests", "memory"), {"Gi": 16}, "resources.requests.memory: {'Gi': 16} is not a"),
    (OWNERS, {"kind": "x"}, "ownerReferences: expected a list, got an object"),
    (OWNERS, ["vmi"], "ownerReferences[0]: expected an object, got a string"),
    (OWNERS, [{"kind": VMI, "name": 7}], f"ownerReferences[0].name: 7 is not a {VMI} name"),
]


@pytest.mark.parametrize(("path", "value", "says"), MALFORMED)
@pytest.mark.parametrize("verb", ["filter", "prioritize"])
def test_a_malformed_pod_is_an_error_naming_its_field(
    app: Any, verb: str, path: tuple[Any, ...], value: Any, says: str
) -> None:
    body = with_value(pod_args(["1g.5gb"], names=["pm0", "pm1"]), path, value)
    r = call(app, "POST", f"/k8s/{verb}", body)
    problem = r.json()["Error"] if verb == "filter" else r.json().get("error")
    assert r.status_code == (200 if verb == "filter" else 400) and says in problem, r.text
    if verb == "filter":
        assert not r.json()["NodeNames"]  # no node passes


def test_an_init_container_asking_for_a_gi_is_judged_not_passed_everywhere(app: Any) -> None:
    args = pod_args([], names=["pm0", "pm1"])
    args["Pod"]["spec"]["initContainers"] = [{"name": "i", "resources": {"limits": {MIG: "1"}}}]
    entry = pod_entry(args["Pod"])
    assert entry["gis"] == ["1g.5gb"]
    many = with_value(args, ("Pod", "spec", "initContainers", 0, "resources", "limits", MIG), "99")
    r = call(app, "POST", "/k8s/filter", many).json()  # 99 GIs: more than any node holds
    assert "more than any PM holds" in r["Error"] and not r["NodeNames"]


def test_a_vgpu_type_asked_for_by_an_init_container_names_the_pods_gpu_model() -> None:
    pod = pod_args([], names=["pm0"])["Pod"]
    pod["spec"]["initContainers"] = [{"resources": {"limits": {"nvidia.com/NVIDIA_H100-3-40C": "1"}}}]
    entry = pod_entry(pod)
    assert entry["gis"] == ["3g.40gb"] and entry["gpu_model"] == "H100-80GB"
    pod["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/NVIDIA_A100D-3-40C": "1"}
    with pytest.raises(RequestError, match="vGPU types of 2 GPU models"):  # across containers too
        pod_entry(pod)


def test_a_pod_counts_its_init_containers_and_overhead_as_kubernetes_does() -> None:
    pod = pod_args([], cpu="1", memory="1Gi")["Pod"]
    pod["spec"]["containers"].append(copy.deepcopy(pod["spec"]["containers"][0]))  # 2 cores, 2 GiB
    pod["spec"]["initContainers"] = [{"resources": {"requests": {"cpu": "3", "memory": "1Gi"}}}]
    pod["spec"]["overhead"] = {"cpu": "250m", "memory": "128Mi"}
    entry = pod_entry(pod)
    # cores: max(1 + 1, 3) + 0.25; memory: max(2 GiB, 1 GiB) + 128 MiB, in GB
    assert entry["cpu"] == 3.25 and entry["ram_gb"] == (2 * 2**30 + 128 * 2**20) / 1e9


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)


def paths(doc: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path] if path else []
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for key, value in items:
        out += paths(value, (*path, key))
    return out


ARGS = pod_args(["1g.5gb", "1g.5gb"], names=["pm0", "pm1", "nowhere"])
ARGS["Pod"]["spec"]["initContainers"] = [{"resources": {"limits": {MIG: "1"}}}]


@settings(
    max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(path=st.sampled_from(paths(ARGS)), value=JSON, verb=st.sampled_from(["filter", "prioritize"]))
def test_no_body_makes_the_extender_fail_or_read_a_pod_it_cannot(
    app: Any, path: tuple[Any, ...], value: Any, verb: str
) -> None:
    body = with_value(ARGS, path, value)
    r = call(app, "POST", f"/k8s/{verb}", body)
    assert r.status_code in (200, 400), r.text
    if r.status_code == 200 and not (verb == "filter" and r.json()["Error"]):
        pod_entry(body["Pod"])  # it was judged: a pod the service can read


POST = {"id": "f", **SMALL, "gpu_model": "A100-40GB", "migratable": True, "pm": "pm0"}


@settings(
    max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(path=st.sampled_from(paths(POST)), value=JSON)
def test_no_vm_request_makes_the_service_fail(app: Any, path: tuple[Any, ...], value: Any) -> None:
    before = call(app, "GET", "/v1/snapshot").json()
    r = call(app, "POST", "/v1/vms", with_value(POST, path, value))
    assert r.status_code in (201, 202, 400, 409, 422), r.text
    if r.status_code >= 400:
        assert r.json()["problems"] and call(app, "GET", "/v1/snapshot").json() == before
    else:
        assert call(app, "DELETE", f"/v1/vms/{r.json()['id']}").status_code == 204


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "bEaReR"])
def test_the_bearer_scheme_is_case_insensitive(app: Any, scheme: str) -> None:
    assert call(app, "GET", "/v1/status", headers={"Authorization": f"{scheme} {TOKEN}"}).status_code == 200
    assert call(app, "GET", "/v1/status", headers={"Authorization": f"{scheme}  {TOKEN} "}).status_code == 200


@pytest.mark.parametrize("header", [f"Basic {TOKEN}", f"Bearer{TOKEN}", f"Bearer {TOKEN[:-1]}", "Bearer", ""])
def test_anything_but_the_bearer_token_is_refused(app: Any, header: str) -> None:
    r = call(app, "GET", "/v1/status", headers={"Authorization": header} if header else {})
    assert r.status_code == 401


def test_pod_entry_refuses_what_kube_scheduler_never_sends() -> None:
    with pytest.raises(RequestError, match="Pod: expected an object, got a string"):
        pod_entry("pod")
