"""What operators see (docs/service.md#logs-and-metrics): one JSON log line per check and per plan
event, an access log on request, and `GET /metrics` in Prometheus' text format — each figure checked
against what the API says happened."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.serve.test_serve_k8s import pod_args
from tests.serve.test_serve_plans import FAST, SEED, ack, wait_plan
from tests.serve_helpers import Server


def events(srv: Server) -> list[dict]:
    out = []
    for line in srv.read_log().splitlines():
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def samples(c: httpx.Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    r = c.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    out = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def wait_for(predicate, timeout_s: float = 60.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("timed out")


def test_a_plan_run_to_the_end_is_logged_and_counted(tmp_path: Path) -> None:
    with Server(tmp_path, seed=SEED, options=FAST, extra=["--access-log"]) as srv, srv.client() as c:
        plan = wait_plan(c, 1)
        for n in range(len(plan["steps"])):
            assert ack(c, 1, n).status_code == 200
        for _ in range(2):
            c.post("/k8s/filter", json=pod_args(["1g.5gb"], names=["pm0"]))
        checks = c.get("/v1/status").json()["optimizer"]["checks"]
        metrics = samples(c)
        assert c.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
    log = events(srv)
    plan_log = [e for e in log if e["event"].startswith("plan.") and e.get("plan") == 1]
    assert [e["event"] for e in plan_log] == ["plan.created"] + ["plan.step"] * len(plan["steps"]) + [
        "plan.done"
    ]
    assert [e["step"] for e in plan_log if e["event"] == "plan.step"] == list(range(len(plan["steps"])))
    assert plan_log[0]["admitted"] == plan["admitted"] and plan_log[0]["steps"] == len(plan["steps"])
    check_log = [e for e in log if e["event"] == "check"]
    assert len(check_log) >= 1 and all(e["ok"] and e["duration_s"] >= 0 for e in check_log)
    assert metrics[("origamig_checks_total", (("outcome", "ok"),))] >= min(checks, len(check_log))
    assert metrics[("origamig_check_duration_seconds_count", ())] == sum(
        v for (name, _), v in metrics.items() if name == "origamig_checks_total"
    )
    assert metrics[("origamig_plans", (("state", "done"),))] == 1
    assert metrics[("origamig_plan_events_total", (("event", "created"),))] == 1
    assert metrics[("origamig_plan_events_total", (("event", "step"),))] == len(plan["steps"])
    assert metrics[("origamig_plan_events_total", (("event", "done"),))] == 1
    assert metrics[("origamig_filter_duration_seconds_count", ())] == 2
    step_route = (("method", "POST"), ("route", "/v1/plans/{plan_id}/steps/{n}"), ("status", "2xx"))
    assert metrics[("origamig_request_duration_seconds_count", step_route)] == len(plan["steps"])
    assert metrics[("origamig_vms", (("state", "pending"),))] == 0
    requests = [e for e in log if e["event"] == "request"]
    assert any(e["route"] == "/k8s/filter" and e["status"] == 200 for e in requests)
    assert any(e["path"] == "/v1/plans/1/steps/0" for e in requests)


def test_aborted_and_cancelled_plans_are_logged_with_their_cause(tmp_path: Path) -> None:
    extra = ["--step-timeout", "1"]
    with Server(tmp_path, seed=SEED, options=FAST, extra=extra) as srv, srv.client() as c:
        wait_plan(c, 1)
        aborted = wait_for(lambda: (p := c.get("/v1/plans/1").json())["status"] == "aborted" and p)
        assert aborted["cause"] == "timeout"
        wait_plan(c, 2)
        assert c.delete("/v1/plans/2").json()["status"] == "cancelled"
        metrics = samples(c)
    log = {(e["event"], e.get("plan")): e for e in events(srv)}
    assert (
        log[("plan.aborted", 1)]["cause"] == "timeout"
        and "not acknowledged" in log[("plan.aborted", 1)]["reason"]
    )
    assert log[("plan.cancelled", 2)]["reason"] == "cancelled by a client"
    assert metrics[("origamig_plans_aborted", (("cause", "timeout"),))] == 1
    assert metrics[("origamig_plan_events_total", (("event", "aborted"),))] == 1
    assert metrics[("origamig_plan_events_total", (("event", "cancelled"),))] == 1
    assert not any(e["event"] == "request" for e in events(srv))  # no --access-log
