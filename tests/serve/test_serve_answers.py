"""Answers that say what happened (docs/service.md): a model mismatch named, a start slice the profile
never takes answered with the ones it takes, a missing field called missing, `--optimizer off` with
VMs waiting, what an ended plan really admitted, and a plan's gain in the objective's units."""

from __future__ import annotations

import json
from pathlib import Path

from origamig.judge.objective import evaluate, evaluate_state
from tests.serve.test_serve_plans import FAST, SEED, ack, wait_plan
from tests.serve_helpers import EXAMPLES, Server, read

MIXED = EXAMPLES / "mixed-h100-a100.json"
QUIET = ("check_interval_s=1e9",)


def test_wrong_model_bad_start_and_missing_result_are_named(tmp_path: Path) -> None:
    with Server(tmp_path, seed=MIXED, options=QUIET) as srv, srv.client() as c:
        entry = {"id": "a", "cpu": 3, "ram_gb": 32, "gis": ["1g.10gb"], "gpu_model": "A100-80GB"}
        r = c.post("/v1/vms", json=entry | {"pm": "h100-02"})
        assert r.status_code == 409
        assert r.json()["error"] == "pm: a does not fit h100-02 now: no A100-80GB GPU (h100-02 has H100-80GB)"
        bad = {"pm": "h100-03", "gis": [{"gpu": 7, "start": 2}]}
        r = c.post("/v1/vms", json={"id": "b", "cpu": 9, "ram_gb": 96, "gis": ["3g.40gb"], "placement": bad})
        assert r.status_code == 400
        assert r.json()["problems"] == [
            "placement.gis[0]: 3g.40gb cannot start at slice 2 of an H100-80GB (its starts: 0, 4)"
        ]
        assert c.get("/v1/vms/b").status_code == 404
        r = c.post("/v1/plans/1/steps/0", json={"outcome": "done"})
        assert r.status_code == 400 and r.json()["error"].startswith("result: missing")


def test_optimizer_off_rejects_the_vms_waiting_in_the_seed_with_the_reason(tmp_path: Path) -> None:
    waiting = [vm["id"] for vm in json.loads(MIXED.read_text())["vms"] if "placement" not in vm]
    with Server(tmp_path, seed=MIXED, extra=["--optimizer", "off"]) as srv, srv.client() as c:
        status = c.get("/v1/status").json()
        assert status["vms"]["pending"] == 0 and status["vms"]["rejected"] == len(waiting)
        for v in waiting:
            vm = c.get(f"/v1/vms/{v}").json()
            assert vm["status"] == "rejected" and "--optimizer off" in vm["reason"]
        again = c.post("/v1/vms", json={"id": "any-1g", "cpu": 3, "ram_gb": 32, "gis": ["1g.10gb"]})
        assert again.status_code == 201
    assert f"--optimizer off: {len(waiting)} pending VMs rejected" in srv.read_log()


def test_an_ended_plan_lists_only_the_vms_it_really_started(tmp_path: Path) -> None:
    with Server(tmp_path, seed=SEED, options=FAST) as srv, srv.client() as c:
        planned = wait_plan(c, 1)
        start = next(n for n, s in enumerate(planned["steps"]) if s["op"] == "start")
        assert planned["admitted"] == [planned["steps"][start]["vm"]]  # the call admits the pending VM
        for n in range(start):  # every step before its start is carried out ...
            assert ack(c, 1, n).status_code == 200
        cancelled = c.delete("/v1/plans/1").json()  # ... then the plan is cancelled
        vm = c.get(f"/v1/vms/{planned['admitted'][0]}").json()
    assert cancelled["status"] == "cancelled" and cancelled["admitted"] == []
    assert vm["status"] == "pending"


def test_a_plans_gain_is_the_rise_of_the_snapshot_objective(tmp_path: Path) -> None:
    seed = read(json.loads(SEED.read_text()))
    with Server(tmp_path, seed=SEED, options=FAST) as srv, srv.client() as c:
        plan = wait_plan(c, 1)
        for n in range(len(plan["steps"])):
            assert ack(c, 1, n).status_code == 200
        done = c.get("/v1/plans/1").json()
        after = read(c.get("/v1/snapshot").json())
    assert done["status"] == "done" and done["admitted"] == plan["admitted"]
    # Eq. (5) of the state after the plan, its moves counted against the seed's placement, less the
    # seed's own: the referee over the whole cluster, not the service's region.
    vms = {**seed.vms, **after.vms}
    then = evaluate_state(seed.datacenter(), seed.weights).value
    now = evaluate(after.pms, vms, after.placement, seed.placement, seed.weights).value
    rise = now - then
    assert done["gain"] == round(rise, 6)
    assert 0 < done["gain"] < 10_000  # the snapshot's units, not an admission call's tiers
