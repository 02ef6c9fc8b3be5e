"""What the platform can move (docs/service.md#what-the-platform-can-move): under `--platform kubevirt`
no plan moves or parks a VM KubeVirt cannot live-migrate (several GIs; H100/H200 SR-IOV vGPUs);
`generic` keeps moving them."""

from __future__ import annotations

import json
import pickle
import time
from pathlib import Path

import httpx
import pytest

from origamig.serve.live import Live
from origamig.serve.platform import MoveRules, Platform, apply_platform, move_rules, pin_all
from origamig.serve.store import Store
from origamig.snapshot.document import load_snapshot
from tests.serve.test_serve_plans import FAST, ack, wait_plan
from tests.serve_helpers import EXAMPLES, Server, in_process

FLEET = EXAMPLES / "kubevirt-fleet.json"


def spread(model: str) -> dict:
    """One small VM on each of two PMs of `model`: a consolidation moves one over (docs/policies.md)."""
    return {
        "version": 1,
        "pms": [{"id": p, "cpu": 80, "ram_gb": 512, "gpus": [model, model]} for p in ("node-a", "node-b")],
        "vms": [
            {"id": f"ml/{v}", "cpu": 4, "ram_gb": 16, "gis": ["1g.10gb"],
             "placement": {"pm": p, "gis": [{"gpu": 0, "start": 0}]}}
            for v, p in (("a", "node-a"), ("b", "node-b"))
        ],
    }  # fmt: skip


def test_kubevirt_pins_several_gis_and_sr_iov_models_and_generic_pins_nothing() -> None:
    snap = load_snapshot(FLEET)
    dc = snap.datacenter()
    models = [m.name for m in snap.present_models]
    rules = move_rules(Platform.KUBEVIRT, models)
    assert rules.pinned_models == {"H100-80GB"}
    assert move_rules(Platform.GENERIC, models) == MoveRules()
    vms = {**dc.vms, **dc.pending}
    for v, vm in vms.items():
        on_h100 = any(c[0].gpu_model == "H100-80GB" for c in vm.gi_choices)
        assert (rules.pin_reason(vm) is not None) == (len(vm.gis) > 1 or on_h100), v
        assert MoveRules().pin_reason(vm) is None
    assert "2 GIs" in (rules.pin_reason(vms["svc-02"]) or "")
    assert "SR-IOV" in (rules.pin_reason(vms["infer-01"]) or "")
    assert rules.pin_reason(vms["lab-01"]) is None  # one GI on an A100-80GB: an mdev vGPU
    assert "H100-80GB" in (rules.pin_reason(vms["any-1g"]) or "")  # no model named: it may land on one
    pinned = dict(dc.vms)
    assert pin_all(pinned, rules) == sum(rules.pin_reason(vm) is not None for vm in dc.vms.values())
    assert all(not pinned[v].migratable for v in pinned if rules.pin_reason(dc.vms[v]) is not None)
    assert pinned["lab-01"] is dc.vms["lab-01"]


def migrations(plan: dict) -> list[str]:
    return [s["vm"] for s in plan["steps"] if s["op"] == "migrate"]


def test_generic_consolidates_h100_vms_and_kubevirt_leaves_them_where_they_run(tmp_path: Path) -> None:
    seed = tmp_path / "spread.json"
    seed.write_text(json.dumps(spread("H100-80GB")))
    generic, kubevirt = tmp_path / "generic", tmp_path / "kubevirt"
    generic.mkdir()
    kubevirt.mkdir()
    with Server(generic, seed=seed, options=FAST) as srv, srv.client() as c:
        assert migrations(wait_plan(c, 1))  # generic: an H100 VM moves to free a server
        assert c.get("/v1/status").json()["platform"] == {"name": "generic", "never_moved": {}}
    with (
        Server(kubevirt, seed=seed, options=FAST, extra=["--platform", "kubevirt"]) as srv,
        srv.client() as c,
    ):
        status = wait_checks(c, 5)
        assert status["plans"]["running"] + status["plans"]["done"] == 0
        assert c.get("/v1/plans").json() == {"plans": []}
        never = status["platform"]["never_moved"]
        assert status["platform"]["name"] == "kubevirt" and set(never) == {"several GIs", "H100-80GB"}
        assert "SR-IOV" in never["H100-80GB"]


def wait_checks(c: httpx.Client, checks: int, timeout_s: float = 120.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = c.get("/v1/status").json()
        if status["optimizer"]["checks"] >= checks:
            return status
        time.sleep(0.2)
    raise AssertionError(f"fewer than {checks} checks within {timeout_s} s")


def test_under_kubevirt_no_plan_on_the_example_fleet_migrates_an_h100_or_multi_gi_vm(tmp_path: Path) -> None:
    seed = json.loads(FLEET.read_text())
    model_of = {pm["id"]: pm["gpus"][0] for pm in seed["pms"]}
    gis_of = {vm["id"]: len(vm["gis"]) for vm in seed["vms"]}
    moved: list[tuple[str, str]] = []
    plans = 0
    with (
        Server(tmp_path, seed=FLEET, options=FAST, extra=["--platform", "kubevirt"]) as srv,
        srv.client() as c,
    ):
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline:
            try:
                plan = wait_plan(c, plans + 1, timeout_s=20)
            except AssertionError:
                break  # no further plan: the optimizer has nothing more to do
            plans += 1
            for n, step in enumerate(plan["steps"]):
                if step["op"] == "migrate":
                    moved.append((step["vm"], model_of[step["from"]]))
                if ack(c, plan["id"], n).json()["status"] != "running":
                    break
        status = c.get("/v1/status").json()
    assert plans >= 1 and status["vms"]["pending"] < 8  # plans were made and admitted VMs
    assert all(model != "H100-80GB" and gis_of.get(vm, 1) == 1 for vm, model in moved), moved


def test_the_seeds_platform_field_is_read_and_a_bad_one_refused(tmp_path: Path) -> None:
    doc = spread("A100-80GB") | {"platform": "kubevirt"}
    (tmp_path / "a").mkdir()
    seed = tmp_path / "a" / "seed.json"
    seed.write_text(json.dumps(doc))
    with Server(tmp_path / "a", seed=seed, options=("check_interval_s=1e9",)) as srv, srv.client() as c:
        assert set(c.get("/v1/status").json()["platform"]["never_moved"]) == {"several GIs"}
    (tmp_path / "b").mkdir()
    bad = tmp_path / "b" / "seed.json"
    bad.write_text(json.dumps(doc | {"platform": "openstack"}))
    with pytest.raises(RuntimeError, match="exited 2") as failed:
        Server(tmp_path / "b", seed=bad).start()
    assert "error: platform: 'openstack' is not generic or kubevirt" in str(failed.value)


def test_a_vm_a_plan_is_to_start_is_pinned_after_a_restart_too(tmp_path: Path) -> None:
    # A pending VM that may land on an H100 is pinned under kubevirt; once an admission plan holds it
    # (it left the queue), a restart reads it back from that plan: it must be pinned there as well.
    seed = spread("H100-80GB")
    seed["vms"].append({"id": "ml/new", "cpu": 4, "ram_gb": 16, "gis": ["7g.80gb"]})
    seed["pms"][1]["gpus"] = ["H100-80GB"]  # node-b: one GPU, taken by b; node-a's GPU 1 is free
    live, _ = in_process(tmp_path, seed, "kubevirt", deterministic=True, work_limit=100000)
    with live.writing, live.lock:
        for work in live.runtime.check(10.0):
            live.runtime.end_call(work, 10.0)
        live.commit()
    (run,) = live.runtime.plans.running()
    assert set(run.reserved) == {"ml/new"} and not run.reserved["ml/new"].migratable
    again = Live(Store(live.store.path), pickle.loads(pickle.dumps(live.policy)))
    apply_platform(again, Platform.KUBEVIRT)
    (held,) = again.runtime.plans.running()
    assert not held.reserved["ml/new"].migratable
