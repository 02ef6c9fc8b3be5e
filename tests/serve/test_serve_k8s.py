"""The Kubernetes scheduler extender over HTTP, and the KubeVirt manifests of a plan.

Messages are validated against the upstream definitions shipped in tests/data/k8s/upstream (their
source and version in the README there). Filter and prioritize are judged against the service's own
placement of the same request (`POST /v1/vms`): a pod passes some node exactly when the arrival rule
places it now, and the node the rule picks scores 10.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.paths import TEST_DATA
from tests.profiles import examples
from tests.serve.test_serve_plans import ack, wait_plan
from tests.serve_helpers import EXAMPLES, Server, valid

K8S = TEST_DATA / "k8s"
SEED = EXAMPLES / "fragmented-a100.json"
QUIET = ("check_interval_s=1e9",)
A100_PROFILES = ("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb")
SCHEMA = json.loads((K8S / "extender.schema.json").read_text())


def validate(instance: object, name: str) -> None:
    jsonschema.validate(instance, {**SCHEMA, "$ref": f"#/$defs/{name}"})


def go_struct_fields(name: str) -> list[str]:
    """The field names of Go struct `name` in the shipped upstream excerpt."""
    text = (K8S / "upstream" / "extender-v1-types.go.txt").read_text()
    body = re.search(rf"type {name} struct {{\n(.*?)\n}}", text, re.S)
    assert body is not None, name
    lines = [ln.strip() for ln in body.group(1).splitlines()]
    return [ln.split()[0] for ln in lines if ln and not ln.startswith("//")]


@pytest.mark.parametrize("name", ["ExtenderArgs", "ExtenderFilterResult", "HostPriority"])
def test_the_schema_keys_are_the_upstream_go_field_names(name: str) -> None:
    assert sorted(SCHEMA["$defs"][name]["properties"]) == sorted(go_struct_fields(name))


@pytest.mark.parametrize("fixture", ["extender-args-nodenames.json", "extender-args-nodes.json"])
def test_fixtures_are_extender_args(fixture: str) -> None:
    validate(json.loads((K8S / fixture).read_text()), "ExtenderArgs")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    with Server(tmp_path_factory.mktemp("k8s"), seed=SEED, options=QUIET) as srv:
        yield srv


def pod_args(gis: list[str], cpu: str = "4", memory: str = "16Gi", names: list[str] | None = None) -> dict:
    args = json.loads((K8S / "extender-args-nodenames.json").read_text())
    container = args["Pod"]["spec"]["containers"][0]
    limits = {"cpu": cpu, "memory": memory}
    for g in gis:
        key = f"nvidia.com/mig-{g}"
        limits[key] = str(int(limits.get(key, "0")) + 1)
    container["resources"] = {"limits": limits, "requests": dict(limits)}
    args["Pod"]["spec"]["containers"] = [container]
    args["NodeNames"] = names or ["pm0", "pm1"]
    return args


def test_filter_answers_both_forms_alike_with_a_reason_per_failed_node(server: Server) -> None:
    by_name = json.loads((K8S / "extender-args-nodenames.json").read_text())
    by_node = json.loads((K8S / "extender-args-nodes.json").read_text())
    with server.client() as c:
        a = c.post("/k8s/filter", json=by_name).json()
        b = c.post("/k8s/filter", json=by_node).json()
    for result in (a, b):
        validate(result, "ExtenderFilterResult")
        assert result["Error"] == ""
        assert result["FailedNodes"]["cpu-node-7"] == "not a PM of the origamig snapshot"
    assert a["Nodes"] is None and b["NodeNames"] is None
    assert a["FailedNodes"] == b["FailedNodes"]
    assert [n["metadata"]["name"] for n in b["Nodes"]["items"]] == a["NodeNames"]
    assert set(a["NodeNames"]) | set(a["FailedNodes"]) == set(by_name["NodeNames"])
    assert not set(a["NodeNames"]) & set(a["FailedNodes"])
    kept = {n["metadata"]["name"]: n for n in b["Nodes"]["items"]}
    assert all(
        kept[n] == next(i for i in by_node["Nodes"]["items"] if i["metadata"]["name"] == n) for n in kept
    )


def test_a_pod_the_service_cannot_read_gets_error(server: Server) -> None:
    with server.client() as c:
        r = c.post("/k8s/filter", json=pod_args(["9g.99gb"]))
        assert r.status_code == 200
        validate(r.json(), "ExtenderFilterResult")
        assert "9g.99gb" in r.json()["Error"]
        assert c.post("/k8s/prioritize", json=pod_args(["9g.99gb"])).status_code == 400
        assert c.post("/k8s/filter", json=pod_args(["1g.5gb"], cpu="lots")).json()["Error"]


def test_a_pod_without_mig_resources_is_not_judged(server: Server) -> None:
    with server.client() as c:
        result = c.post("/k8s/filter", json=pod_args([], names=["pm0", "pm1", "other"])).json()
        scores = c.post("/k8s/prioritize", json=pod_args([], names=["pm0", "pm1"])).json()
    assert result["NodeNames"] == ["pm0", "pm1", "other"]
    assert scores == [{"Host": "pm0", "Score": 0}, {"Host": "pm1", "Score": 0}]


@settings(
    max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    gis=st.lists(st.sampled_from(A100_PROFILES), min_size=1, max_size=3),
    cpu=st.integers(1, 40),
    memory_gb=st.integers(1, 200),
)
def test_filter_and_prioritize_agree_with_the_arrival_rule(
    server: Server, gis: list[str], cpu: int, memory_gb: int
) -> None:
    args = pod_args(gis, cpu=str(cpu), memory=f"{memory_gb}G")
    with server.client() as c:
        result = c.post("/k8s/filter", json=args).json()
        scores = c.post("/k8s/prioritize", json=args).json()
        validate(result, "ExtenderFilterResult")
        validate(scores, "HostPriorityList")
        entry = {"id": "probe", "cpu": cpu, "ram_gb": memory_gb, "gis": gis}
        placed = c.post("/v1/vms", json=entry)
        try:
            assert placed.status_code in (201, 202), placed.text
            if placed.status_code == 201:
                pm = placed.json()["placement"]["pm"]
                assert pm in result["NodeNames"]
                assert {s["Host"]: s["Score"] for s in scores}[pm] == 10
                valid(c.get("/v1/snapshot").json())
            else:
                assert result["NodeNames"] == []
                assert all(s["Score"] == 0 for s in scores)
            passed = set(result["NodeNames"])
            assert all((s["Score"] > 0) == (s["Host"] in passed) for s in scores)
        finally:
            assert c.delete("/v1/vms/probe").status_code == 204


SPREAD = {  # one small VM on each of two PMs: consolidation moves one over and switches a PM off
    "version": 1,
    "pms": [
        {"id": p, "cpu": 80, "ram_gb": 512, "gpus": ["A100-40GB", "A100-40GB"]} for p in ("node-a", "node-b")
    ],
    "vms": [
        {"id": f"ml/{v}", "cpu": 4, "ram_gb": 16, "gis": ["1g.5gb"],
         "placement": {"pm": p, "gis": [{"gpu": 0, "start": 0}]}}
        for v, p in (("a", "node-a"), ("b", "node-b"))
    ],
}  # fmt: skip


def strict(schema: dict) -> dict:
    """The upstream schema read strictly: an object with listed properties takes no other key."""
    out = copy.deepcopy(schema)
    for definition in out["definitions"].values():
        if definition.get("type") == "object" and "properties" in definition:
            definition.setdefault("additionalProperties", False)
    return out


def test_kubevirt_manifests_follow_the_upstream_schema_in_execution_order(tmp_path: Path) -> None:
    seed = tmp_path / "spread.json"
    seed.write_text(json.dumps(SPREAD))
    vmim = strict(json.loads((K8S / "upstream" / "kubevirt-vmim.swagger-excerpt.json").read_text()))
    options = ("check_interval_s=0.2", "deterministic=true", "work_limit=100000")
    with Server(tmp_path, seed=seed, options=options) as srv, srv.client() as c:
        plan = wait_plan(c, 1)
        flow = c.get("/v1/plans/1/kubevirt").json()
        assert [i["step"] for i in flow["items"]] == [
            {k: v for k, v in s.items() if k not in ("n", "status")} for s in plan["steps"]
        ]
        migrations = [
            i for i in flow["items"] if i["op"] == "migrate" and i["step"]["from"] != i["step"]["to"]
        ]
        assert migrations
        for item in migrations:
            manifest = item["manifest"]
            jsonschema.validate(manifest, vmim)
            assert manifest["kind"] == "VirtualMachineInstanceMigration"
            assert manifest["apiVersion"] == "kubevirt.io/v1"
            ns, name = item["step"]["vm"].split("/")
            assert (manifest["metadata"]["namespace"], manifest["spec"]["vmiName"]) == (ns, name)
            assert manifest["spec"]["addedNodeSelector"] == {"kubernetes.io/hostname": item["step"]["to"]}
        for item in flow["items"]:
            if item["op"] in ("create_gi", "destroy_gi"):
                assert item["mig"]["profile"] == "1g.5gb" and item["mig"]["start"] == item["step"]["start"]
        for n in range(len(plan["steps"])):
            assert ack(c, 1, n).status_code == 200
        done = c.get("/v1/plans/1/kubevirt").json()
        assert done["status"] == "done" and {i["status"] for i in done["items"]} == {"done"}
        placement = valid(c.get("/v1/snapshot").json())
        assert len({pl.pm for pl in placement.values()}) == 1
