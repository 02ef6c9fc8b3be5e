"""The background optimizer over HTTP: plans appear, steps are handed out and acknowledged one by
one, the state moves only on acknowledged steps, a failed or stale step aborts the plan.

Every state is judged by the independent checker; a whole plan by the independent replay.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from origamig.judge.replay import replay_plan
from tests.serve_helpers import EXAMPLES, Server, read, valid

SEED = EXAMPLES / "fragmented-a100.json"  # the pending 3g.20gb VM fits only after a GI moves
FAST = ("check_interval_s=0.2", "deterministic=true", "work_limit=100000")


def wait_plan(c: httpx.Client, plan_id: int, timeout_s: float = 120.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        r = c.get(f"/v1/plans/{plan_id}")
        if r.status_code == 200:
            return r.json()
        assert r.status_code == 404, r.text
        time.sleep(0.2)
    raise AssertionError(f"no plan {plan_id} within {timeout_s} s")


def ack(c: httpx.Client, plan_id: int, n: int, result: str = "done") -> httpx.Response:
    return c.post(f"/v1/plans/{plan_id}/steps/{n}", json={"result": result})


def test_an_acknowledged_plan_moves_the_state_step_by_step(tmp_path: Path) -> None:
    with Server(tmp_path, seed=SEED, options=FAST) as srv, srv.client() as c:
        plan = wait_plan(c, 1)
        assert plan["status"] == "running" and plan["next_step"] == 0
        before = read(c.get("/v1/snapshot").json())
        steps = [{k: v for k, v in s.items() if k not in ("n", "status")} for s in plan["steps"]]
        pending = {v: before.vms[v] for v in before.pending}
        running = {v: before.vms[v] for v in before.placement}
        whole = replay_plan(before.pms, running, before.placement, pending, steps)
        assert whole.ok, whole.reason
        assert set(plan["admitted"]) <= set(whole.final_placement)
        for n in range(len(steps)):
            assert ack(c, 1, n).status_code == 200
            valid(c.get("/v1/snapshot").json())  # every intermediate state passes the checker
        assert c.get("/v1/plans/1").json()["status"] == "done"
        after = read(c.get("/v1/snapshot").json())
        assert dict(after.placement) == dict(whole.final_placement)
        assert ack(c, 1, 0).status_code == 200  # the same acknowledgement again changes nothing
        assert ack(c, 1, 0, "failed").status_code == 409  # another result for a step already done
        assert read(c.get("/v1/snapshot").json()).placement == after.placement


def test_a_failed_step_aborts_the_rest_and_the_optimizer_replans(tmp_path: Path) -> None:
    with Server(tmp_path, seed=SEED, options=FAST) as srv, srv.client() as c:
        plan = wait_plan(c, 1)
        before = c.get("/v1/snapshot").json()
        assert ack(c, 1, 0).status_code == 200  # a create_gi: nothing moves yet
        r = ack(c, 1, 1, "failed")
        assert r.status_code == 200
        failed = r.json()
        assert failed["status"] == "failed"
        assert [s["status"] for s in failed["steps"]] == ["done", "failed"] + ["aborted"] * (
            len(plan["steps"]) - 2
        )
        assert valid(c.get("/v1/snapshot").json()) == valid(before)
        again = wait_plan(c, 2)
        assert again["status"] == "running" and again["admitted"] == plan["admitted"]


def test_a_vm_that_leaves_takes_its_steps_and_the_rest_goes_on(tmp_path: Path) -> None:
    with Server(tmp_path, seed=SEED, options=FAST) as srv, srv.client() as c:
        plan = wait_plan(c, 1)
        moved = next(s["vm"] for s in plan["steps"] if s["op"] == "migrate")
        assert c.delete(f"/v1/vms/{moved}").status_code == 204
        now = c.get("/v1/plans/1").json()
        mine = [s for s in now["steps"] if s.get("vm") == moved]
        assert mine and all(s["status"] == "removed" for s in mine)
        assert ack(c, 1, mine[0]["n"]).status_code == 409  # never to be carried out
        while now["status"] == "running":  # the rest (the pending VM's start) goes on
            assert now["ready_steps"], now
            now = ack(c, 1, now["ready_steps"][0]).json()
        assert now["status"] == "done" and now["admitted"] == plan["admitted"]
        valid(c.get("/v1/snapshot").json())


def test_bad_acknowledgements(tmp_path: Path) -> None:
    with Server(tmp_path, seed=SEED, options=FAST) as srv, srv.client() as c:
        plan = wait_plan(c, 1)
        before = c.get("/v1/snapshot").json()
        assert c.get("/v1/plans/99").status_code == 404
        assert ack(c, 99, 0).status_code == 404
        assert ack(c, 1, len(plan["steps"])).status_code == 404
        assert ack(c, 1, 1).status_code == 409  # not the next step
        assert ack(c, 1, 0, "maybe").status_code == 400
        assert (
            c.post(
                "/v1/plans/1/steps/0", content=b"{", headers={"Content-Type": "application/json"}
            ).status_code
            == 400
        )
        assert c.get("/v1/snapshot").json() == before
        assert c.get("/v1/plans/1").json()["next_step"] == 0


def test_a_waiting_vm_the_optimizer_gives_up_on_is_reported_rejected(tmp_path: Path) -> None:
    with Server(tmp_path, seed=SEED, options=FAST) as srv, srv.client() as c:
        huge = {"id": "huge", "cpu": 500, "ram_gb": 16, "gis": ["1g.5gb"]}  # more cores than any PM
        r = c.post("/v1/vms", json=huge)
        assert r.status_code == 202
        deadline = time.monotonic() + 120
        while c.get("/v1/vms/huge").json()["status"] == "pending":
            assert time.monotonic() < deadline
            time.sleep(0.2)
            plan = c.get("/v1/plans/1")
            if plan.status_code == 200 and plan.json()["next_step"] is not None:  # admits vm5 first
                for n in range(plan.json()["next_step"], len(plan.json()["steps"])):
                    ack(c, 1, n)
        status = c.get("/v1/vms/huge").json()
        assert status["status"] == "rejected"
        assert status["reason"] == (
            "an optimizer admission call left it out: fits no PM even when empty: no PM has 500 cores "
            "(the largest has 80)"
        )
        assert "huge" not in {v["id"] for v in c.get("/v1/snapshot").json()["vms"]}
        assert c.post("/v1/vms", json={**huge, "cpu": 4}).status_code in (201, 202)  # the id may come again
        assert c.get("/v1/vms/huge").json()["status"] in ("running", "pending")
