"""The fleet as it changes (docs/service.md#the-fleet-as-it-changes): servers added, cordoned, drained
by a plan that honours what cannot move, removed once nothing is on them, each change committed and
kept by a restart. Every state is judged by the independent checker, every drain plan by the
independent replay."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from origamig.judge.replay import replay_plan
from origamig.runtime import remote_check
from origamig.runtime.remote_check import run_check
from origamig.serve import plan_retention
from origamig.serve.bind import Binder
from origamig.serve.fleet import Fleet
from origamig.serve.live import Live
from origamig.serve.optimizer import Optimizer
from origamig.serve.store import Store
from tests.serve.test_serve_bind import binding_args, vgpu_pod
from tests.serve.test_serve_k8s import pod_args
from tests.serve.test_serve_plans import ack
from tests.serve_helpers import EXAMPLES, AppClient, Server, in_process, read, valid

A100 = ["A100-40GB", "A100-40GB"]


def placed(pm: str, *slots: tuple[int, int]) -> dict[str, Any]:
    return {"pm": pm, "gis": [{"gpu": g, "start": z} for g, z in slots]}


# pm0 holds four VMs — c may not move, d has two GIs — pm1 one, pm2 none.
SEED: dict[str, Any] = {
    "version": 1,
    "pms": [{"id": f"pm{j}", "cpu": 80, "ram_gb": 512, "gpus": A100} for j in range(3)],
    "vms": [
        {"id": "a", "cpu": 4, "ram_gb": 16, "gis": ["1g.5gb"], "placement": placed("pm0", (0, 0))},
        {"id": "b", "cpu": 12, "ram_gb": 48, "gis": ["3g.20gb"], "placement": placed("pm0", (0, 4))},
        {"id": "c", "cpu": 8, "ram_gb": 32, "gis": ["2g.10gb"], "migratable": False,
         "placement": placed("pm0", (1, 0))},
        {"id": "d", "cpu": 8, "ram_gb": 32, "gis": ["1g.5gb", "1g.5gb"],
         "placement": placed("pm0", (1, 4), (1, 5))},
        {"id": "e", "cpu": 28, "ram_gb": 112, "gis": ["7g.40gb"], "placement": placed("pm1", (0, 0))},
    ],
}  # fmt: skip
SERVER = {"cpu": 80, "ram_gb": 512, "gpus": A100}
SMALL = {"cpu": 4, "ram_gb": 16, "gis": ["1g.5gb"]}


def fleet(tmp: Path, platform: str | None = None) -> tuple[Live, AppClient]:
    return in_process(tmp, copy.deepcopy(SEED), platform)


def snapshot(c: AppClient) -> dict[str, Any]:
    doc = c.get("/v1/snapshot").json()
    valid(doc)  # the reader and the independent checker accept it
    return doc


# --- adding a server ------------------------------------------------------------------------------
def test_a_server_added_takes_part_at_once_and_is_the_server_a_restart_reads(tmp_path: Path) -> None:
    live, c = fleet(tmp_path)
    entry = {"cpu": 96, "ram_gb": 1024, "gpus": ["A100-80GB"] * 2, "rack": "r7"}  # a model new to the fleet
    r = c.put("/v1/pms/new-1", json=entry)
    assert r.status_code == 201
    assert r.json()["entry"] == {"id": "new-1", **entry} and r.json()["removable"] is True
    assert [p["id"] for p in snapshot(c)["pms"]] == ["pm0", "pm1", "pm2", "new-1"]
    # A 7g.80gb fits only on the new server: the arrival rule places it there, the extender passes it.
    big = {"id": "big", "cpu": 8, "ram_gb": 32, "gis": ["7g.80gb"]}
    assert c.post("/v1/vms", json=big).json()["placement"]["pm"] == "new-1"
    args = pod_args(["7g.80gb"], names=["pm2", "new-1"])
    assert c.post("/k8s/filter", json=args).json()["NodeNames"] == ["new-1"]
    assert c.put("/v1/pms/new-1", json=SERVER).status_code == 409
    # What a restart reads from the store is the state the service holds.
    again = Live(Store(live.store.path), pickle.loads(pickle.dumps(live.policy)))
    assert again.snapshot_json() == live.snapshot_json()
    assert again.dc.pms == live.dc.pms and dict(again.dc.placement) == dict(live.dc.placement)
    assert [m.name for m in again.request_context.present] == [m.name for m in live.request_context.present]
    assert (again.most_gis, again.class_members) == (live.most_gis, live.class_members)


@pytest.mark.parametrize(
    ("body", "problems"),
    [
        ({"ram_gb": 512, "gpus": A100}, ["cpu: missing"]),
        ({**SERVER, "gpus": ["A100-4GB"]}, ['gpus[0]: unknown GPU model "A100-4GB"']),
        ({**SERVER, "cpu": -8, "cordoned": "yes"}, ["cpu: -8 is negative", "cordoned: expected true"]),
        ({**SERVER, "id": "other"}, ["id: 'other' is not the server of the path ('pm9')"]),
        ({**SERVER, "gpus": ["ODD-4"]}, ["gpus[0]: ODD-4 has 4 memory slices but class 100 already has 8"]),
        (["not", "an", "object"], ["body: expected a PM entry (an object), got list"]),
    ],
)  # fmt: skip
def test_a_bad_server_is_400_naming_each_field_and_changes_nothing(
    tmp_path: Path, body: Any, problems: list[str]
) -> None:
    seed = copy.deepcopy(SEED)  # an inline model of the A100-40GB's class with another geometry
    profile = {"name": "1g.x", "compute_slices": 1, "memory_slices": 1, "starts": [0, 1, 2, 3]}
    odd = {"class": "100", "memory_slices": 4, "compute_slices": 4, "idle_power_w": 30, "max_power_w": 150}
    seed["gpu_models"] = {"ODD-4": odd | {"profiles": [profile]}}
    live, c = in_process(tmp_path, seed)
    before = c.get("/v1/snapshot").json()
    r = c.put("/v1/pms/pm9", json=body)
    assert r.status_code == 400, r.text
    got = r.json()["problems"]
    assert len(got) == len(problems) and all(g.startswith(p) for g, p in zip(got, problems, strict=True)), got
    assert c.get("/v1/snapshot").json() == before and c.get("/v1/pms/pm9").status_code == 404
    assert live.store.meta_value("seed")["pms"] == seed["pms"]


# --- cordons --------------------------------------------------------------------------------------
class StubApi:
    """The Kubernetes API as bind calls it: every Binding accepted (recorded)."""

    def __init__(self) -> None:
        self.bound: list[str] = []

    def create_namespaced_pod_binding(self, name: str, namespace: str, body: Any, **_: Any) -> None:
        self.bound.append(f"{namespace}/{name}")


def test_nothing_new_lands_on_a_cordoned_server_and_the_extender_says_why(tmp_path: Path) -> None:
    live, c = fleet(tmp_path)
    r = c.post("/v1/pms/pm2/cordon")
    assert r.status_code == 200 and r.json()["cordoned"] and r.json()["plans_landing"] == []
    assert c.post("/v1/pms/pm2/cordon").status_code == 200  # again: nothing changes
    assert c.get("/v1/status").json()["cordoned"] == ["pm2"]
    assert snapshot(c)["pms"][2]["cordoned"] is True
    # 7g.40gb VMs fit only on an empty GPU: pm1's GPU 1, then pm2 — cordoned: the next one waits.
    big = {"cpu": 28, "ram_gb": 112, "gis": ["7g.40gb"]}
    assert c.post("/v1/vms", json={"id": "x1", **big}).json()["placement"]["pm"] == "pm1"
    assert c.post("/v1/vms", json={"id": "x2", **big}).status_code == 202
    args = pod_args(["7g.40gb"], cpu="28", memory="112G", names=["pm0", "pm1", "pm2"])
    failed = c.post("/k8s/filter", json=args).json()["FailedNodes"]
    assert failed["pm2"].startswith("cordoned: nothing new lands on it")
    assert {h["Host"]: h["Score"] for h in c.post("/k8s/prioritize", json=args).json()}["pm2"] == 0
    binder = Binder(live, StubApi())  # bind refuses the node too
    pod = vgpu_pod("p", "nvidia.com/mig-1g.5gb", ["pm2"])
    binder.remember(pod)
    assert "pm2 is cordoned" in binder.bind(binding_args("p", "pm2"))["Error"]
    # A VM placed by others is recorded where it runs, cordoned or not: a fact, not a choice.
    assert c.post("/v1/vms", json={"id": "y", **SMALL, "placement": placed("pm2", (0, 0))}).status_code == 201
    assert c.post("/v1/pms/pm2/uncordon").json()["cordoned"] is False
    assert c.post("/k8s/filter", json=args).json()["NodeNames"] == ["pm2"]
    assert c.get("/v1/status").json()["cordoned"] == [] and "cordoned" not in snapshot(c)["pms"][2]


def test_the_optimizers_calls_keep_off_a_cordoned_server(tmp_path: Path) -> None:
    # The fragmented example's pending 3g.20gb fits only once a GI moves on pm0 or pm1; with pm1
    # cordoned the admission call works on pm0 alone, and nothing of its plan lands on pm1.
    live, c = in_process(tmp_path, EXAMPLES / "fragmented-a100.json", deterministic=True, work_limit=100000)
    assert c.post("/v1/pms/pm1/cordon").status_code == 200
    with live.writing, live.lock:
        works = live.runtime.check(100.0)
        assert works and all(1 not in w.pms for w in works)
        for w in works:
            live.runtime.end_call(w, 100.0)
        live.commit()
    for plan in c.get("/v1/plans").json()["plans"]:
        assert all(s.get("to", s.get("pm")) != "pm1" for s in plan["steps"] if s["op"] != "destroy_gi")


# --- drains ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("platform", "staying"),
    [(None, {"c": 'pinned: "migratable": false in its entry'}),
     ("kubevirt", {"c": 'pinned: "migratable": false in its entry',
                   "d": "pinned: 2 GIs: KubeVirt live-migrates at most one mediated-device vGPU per VM"})],
)  # fmt: skip
def test_a_drain_moves_every_vm_it_may_off_and_says_why_the_others_stay(
    tmp_path: Path, platform: str | None, staying: dict[str, str]
) -> None:
    live, c = fleet(tmp_path, platform)
    before = read(snapshot(c))
    r = c.post("/v1/pms/pm0/drain")
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["cordoned"] and {s["vm"] for s in answer["staying"]} == set(staying)
    for s in answer["staying"]:
        assert s["reason"].startswith(staying[s["vm"]])
    moving = {m["vm"] for m in answer["moving"]}
    assert moving == {"a", "b", "c", "d"} - set(staying)
    (plan_id,) = answer["drain_plans"]
    assert answer["draining"] == [plan_id] and c.get("/v1/status").json()["draining"] == [
        {"pm": "pm0", "plan": plan_id}
    ]
    plan = c.get(f"/v1/plans/{plan_id}").json()
    assert plan["kind"] == "drain"
    steps = [{k: v for k, v in s.items() if k not in ("n", "status")} for s in plan["steps"]]
    # The independent replay runs the plan from the state before: valid at every step, every moving VM
    # off pm0, and nothing lands on pm0 or moves a pinned VM.
    running = {v: before.vms[v] for v in before.placement}
    replay = replay_plan(before.pms, running, before.placement, {}, steps)
    assert replay.ok, replay.reason
    off = {v for v, pl in replay.final_placement.items() if before.pms[pl.pm].id != "pm0"}
    assert moving <= off and not set(staying) & {s.get("vm") for s in steps}
    assert not [s for s in steps if s["op"] in ("create_gi", "start") and s["pm"] == "pm0"]
    assert not [s for s in steps if s["op"] == "migrate" and s["to"] == "pm0"]
    now = plan
    while now["status"] == "running":  # the platform carries the steps out, a move at a time
        now = ack(c, plan_id, now["ready_steps"][0]).json()
        snapshot(c)
    assert now["status"] == "done"
    assert sorted(live.dc.vms_on(0)) == sorted(staying)
    status = c.get("/v1/status").json()
    assert status["cordoned"] == ["pm0"] and status["draining"] == []


def test_a_drain_waits_for_the_plans_that_touch_the_server_and_keeps_it_cordoned(tmp_path: Path) -> None:
    _, c = fleet(tmp_path)
    (plan_id,) = c.post("/v1/pms/pm0/drain").json()["drain_plans"]
    again = c.post("/v1/pms/pm0/drain")
    assert again.status_code == 409 and f"running plan {plan_id}" in again.json()["error"]
    stuck = c.post("/v1/pms/pm0/uncordon")
    assert stuck.status_code == 409 and f"DELETE /v1/plans/{plan_id}" in stuck.json()["error"]
    assert c.delete(f"/v1/plans/{plan_id}").json()["status"] == "cancelled"
    assert c.post("/v1/pms/pm0/uncordon").json()["cordoned"] is False


# --- removal --------------------------------------------------------------------------------------
def test_a_server_is_removed_only_when_nothing_is_left_on_it_or_bound_to_it(tmp_path: Path) -> None:
    _, c = fleet(tmp_path, "kubevirt")
    r = c.delete("/v1/pms/pm0")
    assert r.status_code == 409 and r.json()["problems"] == [
        "pm: 'pm0' cannot be removed: 4 VMs on it (a, b, c, d): drain it (POST /v1/pms/pm0/drain)"
    ]
    (plan_id,) = c.post("/v1/pms/pm0/drain").json()["drain_plans"]
    plan = c.get(f"/v1/plans/{plan_id}").json()
    first = plan["ready_steps"][0]
    assert plan["steps"][first]["op"] == "create_gi"
    target = plan["steps"][first]["pm"]
    ack(c, plan_id, first)  # a GI created on the target, then the drain is cancelled: an orphan
    problems = c.delete(f"/v1/pms/{target}").json()["problems"]
    assert any("running plan" in p for p in problems), problems
    assert c.delete(f"/v1/plans/{plan_id}").json()["orphan_gis"]
    for vm in ("a", "b", "c", "d"):  # the VMs stop (KubeVirt cannot move c or d)
        assert c.delete(f"/v1/vms/{vm}").status_code == 204
    (left,) = [p for p in c.delete(f"/v1/pms/{target}").json()["problems"] if "GIs left on it" in p]
    assert f"DELETE /v1/plans/{plan_id}/orphan-gis/{first}" in left
    on_pm0 = c.delete("/v1/pms/pm0").json()["problems"]
    assert len(on_pm0) == 1 and f"ended plan {plan_id}, which touched it, left GIs" in on_pm0[0]
    assert c.get("/v1/pms/pm0").json()["in_the_way"] == [
        p.removeprefix("pm: 'pm0' cannot be removed: ") for p in on_pm0
    ]
    assert c.delete(f"/v1/plans/{plan_id}/orphan-gis/{first}").status_code == 200
    shown = c.get(f"/v1/plans/{plan_id}").json()
    assert c.get("/v1/pms/pm0").json()["removable"] is True
    assert c.delete("/v1/pms/pm0").status_code == 204
    # The state read back: pm0 gone, the others renumbered, the drain kept as last shown.
    assert [p["id"] for p in snapshot(c)["pms"]] == ["pm1", "pm2"]
    assert c.get("/v1/status").json()["pms"] == 2 and c.get("/v1/pms/pm0").status_code == 404
    assert c.get(f"/v1/plans/{plan_id}").json() == shown
    assert c.get("/v1/plans").json()["plans"] == [shown]
    assert ack(c, plan_id, first + 1).status_code == 409
    assert c.get("/v1/status").json()["plans"]["cancelled"] == 1
    assert c.post("/v1/vms", json={"id": "later", **SMALL}).status_code == 201
    assert c.delete("/v1/pms/pm0").status_code == 404


def test_unknown_servers_are_404_on_every_route(tmp_path: Path) -> None:
    _, c = fleet(tmp_path)
    listing = {"content": "No GPU instances found: Not Found\n", "headers": {"Content-Type": "text/plain"}}
    for r in (
        c.get("/v1/pms/nope"),
        c.delete("/v1/pms/nope"),
        c.post("/v1/pms/nope/cordon"),
        c.post("/v1/pms/nope/uncordon"),
        c.post("/v1/pms/nope/drain"),
        c.post("/v1/pms/nope/lgi", **listing),
        c.get("/v1/pms/" + "x" * 300),
    ):
        assert r.status_code == 404 and r.json()["error"].startswith("pm: "), r.text


def test_a_check_solving_while_a_server_is_removed_is_dropped(tmp_path: Path) -> None:
    # The worker answers after pm2 was removed: its calls name PMs by their old numbers, so they are
    # dropped, the optimizer is not stuck, and the next check is queued on the new loop.
    live, c = in_process(tmp_path, EXAMPLES / "fragmented-a100.json", deterministic=True, work_limit=100000)
    assert c.put("/v1/pms/pm2", json=SERVER).status_code == 201
    optimizer = Optimizer(live)

    def solve(payload: bytes) -> bytes:
        assert Fleet(live).remove("pm2") is None
        return run_check(payload)

    optimizer._solve = solve  # type: ignore[method-assign]
    generation = live.generation
    assert optimizer.check(100.0) == []
    assert live.generation == generation + 1 and live.runtime.solving == [] and live.recording is None
    assert live.loop.check_due and "dropped" in optimizer.status.last_error
    sent = remote_check.begin(live.runtime, 200.0)  # the next check sends the new fleet whole
    assert len(sent.state.pms) == 2


# --- a restart in the middle ----------------------------------------------------------------------
def test_a_restart_keeps_added_cordoned_drained_and_removed_servers(tmp_path: Path) -> None:
    seed = tmp_path / "seed.json"
    seed.write_text(json.dumps(SEED))
    server = Server(tmp_path, seed=seed, options=("check_interval_s=1e9",)).start()
    with server.client() as c:
        assert c.put("/v1/pms/pm3", json={**SERVER, "cordoned": True}).status_code == 201
        assert c.post("/v1/pms/pm1/cordon").status_code == 200
        (plan_id,) = c.post("/v1/pms/pm0/drain").json()["drain_plans"]
        plan = c.get(f"/v1/plans/{plan_id}").json()
        ack(c, plan_id, plan["ready_steps"][0])
        before = c.get("/v1/snapshot").json()
    server.kill()  # SIGKILL, in the middle of the drain
    server.seed = None  # a restart reads the state, not the seed
    server.start(server.port)
    with server.client() as c:
        status = c.get("/v1/status").json()
        assert status["cordoned"] == ["pm0", "pm1", "pm3"]
        assert status["draining"] == [{"pm": "pm0", "plan": plan_id}]
        assert c.get("/v1/snapshot").json() == before
        now = c.get(f"/v1/plans/{plan_id}").json()
        assert now["status"] == "running" and now["kind"] == "drain"
        while now["status"] == "running":
            now = ack(c, plan_id, now["ready_steps"][0]).json()
        assert now["status"] == "done" and c.get("/v1/pms/pm0").json()["vms"] == ["c"]
        assert c.delete("/v1/vms/c").status_code == 204
        assert c.delete("/v1/pms/pm0").status_code == 204
        shown = c.get(f"/v1/plans/{plan_id}").json()
    server.stop()
    server.start(server.port)
    with server.client() as c:
        assert [p["id"] for p in c.get("/v1/snapshot").json()["pms"]] == ["pm1", "pm2", "pm3"]
        assert c.get("/v1/status").json()["cordoned"] == ["pm1", "pm3"]
        assert c.get(f"/v1/plans/{plan_id}").json() == shown
        valid(c.get("/v1/snapshot").json())
    server.stop()


# --- the KubeVirt walk-through's step 4 (docs/service.md#a-kubevirt-walk-through) -----------------
def test_the_walk_throughs_drain_and_node_add(tmp_path: Path) -> None:
    _, c = in_process(tmp_path, json.loads((EXAMPLES / "kubevirt" / "start.json").read_text()))
    train = {"id": "ml/train-7", "cpu": 9, "ram_gb": 96, "gis": ["3g.40gb"], "gpu_model": "H100-80GB"}
    assert c.post("/v1/vms", json=train | {"pm": "gpu-node-1"}).status_code == 201  # bound there
    drained = c.post("/v1/pms/gpu-node-1/drain").json()
    assert drained["cordoned"] and drained["moving"] == [] and drained["drain_plans"] == []
    (stays,) = drained["staying"]
    assert stays["vm"] == "ml/train-7"
    assert stays["reason"].startswith(
        "pinned: it may run on H100-80GB: its MIG-backed vGPUs are SR-IOV functions"
    )
    args = vgpu_pod("train-8", "nvidia.com/NVIDIA_H100XM-3-40C", ["gpu-node-1", "gpu-node-2"])
    answer = c.post("/k8s/filter", json=args).json()
    assert answer["NodeNames"] == ["gpu-node-2"]
    assert answer["FailedNodes"]["gpu-node-1"].startswith("cordoned: nothing new lands on it")
    assert c.delete("/v1/vms/ml/train-7").status_code == 204  # KubeVirt evicted it
    node = c.get("/v1/pms/gpu-node-1").json()
    assert (node["removable"], node["in_the_way"]) == (True, [])
    assert c.delete("/v1/pms/gpu-node-1").status_code == 204
    entry = {"cpu": 192, "ram_gb": 2048, "gpus": ["H100-80GB"] * 8, "cordoned": True}
    assert c.put("/v1/pms/gpu-node-3", json=entry).status_code == 201
    listing = c.post(
        "/v1/pms/gpu-node-3/lgi",
        content="No GPU instances found: Not Found\n",
        headers={"Content-Type": "text/plain"},
    )
    assert listing.json() == {
        "pm": "gpu-node-3", "dry_run": False, "matched": 0, "host_only": [], "state_only": [], "found_gis": []
    }  # fmt: skip
    assert c.post("/v1/pms/gpu-node-3/uncordon").json()["cordoned"] is False
    assert [p["id"] for p in snapshot(c)["pms"]] == ["gpu-node-2", "gpu-node-3"]


def test_ended_plans_kept_as_last_shown_are_retired_with_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(plan_retention, "KEEP_ENDED_PLANS", 1)
    _, c = fleet(tmp_path)
    (first,) = c.post("/v1/pms/pm1/drain").json()["drain_plans"]  # e moves off pm1
    now = c.get(f"/v1/plans/{first}").json()
    while now["status"] == "running":
        now = ack(c, first, now["ready_steps"][0]).json()
    assert c.delete("/v1/pms/pm1").status_code == 204  # plan 1 is kept as last shown
    assert c.get(f"/v1/plans/{first}").json()["status"] == "done"
    (second,) = c.post("/v1/pms/pm0/drain").json()["drain_plans"]
    assert c.delete(f"/v1/plans/{second}").json()["status"] == "cancelled"  # one more ended: 1 goes
    assert c.get(f"/v1/plans/{first}").status_code == 404
    assert [p["id"] for p in c.get("/v1/plans").json()["plans"]] == [second]
    plans = c.get("/v1/status").json()["plans"]
    assert (plans["done"], plans["cancelled"]) == (1, 1)


def test_a_removal_keeps_the_command_lines_intra_pm_moves(tmp_path: Path) -> None:
    live, c = fleet(tmp_path)
    live.intra_pm_moves = live.dc.intra_pm_moves = False  # `--intra-pm-moves false` (serve/opening.py)
    assert c.delete("/v1/pms/pm2").status_code == 204
    assert live.dc.intra_pm_moves is False and len(live.dc.pms) == 2
