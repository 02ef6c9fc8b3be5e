"""A stand-in for a cluster's own controllers beside `origamig serve`, for the end-to-end deployment
test (tests/serve/test_serve_e2e.py). It knows nothing of origamig but its HTTP API:

- a kube-scheduler stand-in asks the extender (`/k8s/filter`, `/k8s/prioritize`) about every node,
  adds a score of its own and binds the pod to the best node (`POST /v1/vms` with `"pm"`); a pod that
  fits no node is posted without one and waits for the optimizer;
- a VM platform deletes VMs (`DELETE /v1/vms/{id}`) and carries out the plans' steps: late, failing
  some, and not at all for a while (the service's step timeout then aborts the plan); it destroys
  the GIs an ended plan left behind (`orphan_gis`);
- it keeps its own view of the cluster — what it was told and what it did — in an append-only journal
  (written before and after each request), so that after a SIGKILL it resumes where it was: an
  action whose reply it did not record is sent again (the API's answers to a repeated request tell
  it what happened).

    python tests/deployment_controller.py URL TOKEN LOG JOURNAL SEED   # prints the final view (JSON)
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import httpx

RETRY_FOR_S = 90.0  # how long a request is retried while the service is down
# Events during which the controller acknowledges nothing (plans time out) — once it has acknowledged
# a step: a run whose only plan came at these events would otherwise act on no plan at all.
QUIET = range(12, 16)
SETTLE_S = 60.0


class View:
    """The controller's own picture of the cluster, rebuilt from its journal."""

    def __init__(self, running: dict[str, dict[str, Any]]) -> None:
        self.placement: dict[str, dict[str, Any]] = dict(running)  # vm -> {"pm", "gis": [{"gpu", "start"}]}
        self.pending: set[str] = set()
        self.created: dict[tuple[str, int], dict[str, Any]] = {}  # GIs made for a move not made yet
        self.cleaned: set[int] = set()  # ended plans whose leftover GIs were destroyed
        self.next_event = 0
        self.acked = 0  # steps acknowledged

    def apply(self, entry: dict[str, Any]) -> None:
        """One recorded result."""
        kind = entry["kind"]
        if kind == "posted":
            if entry["status"] == 201:
                self.placement[entry["vm"]] = entry["placement"]
            elif entry["status"] == 202:
                self.pending.add(entry["vm"])
        elif kind == "deleted":
            self.placement.pop(entry["vm"], None)
            self.pending.discard(entry["vm"])
        elif kind == "acked":
            self.acked += 1
            if entry["result"] == "done":
                self._did(entry["step"])
        elif kind == "cleaned":
            self.cleaned.add(entry["plan"])
            for gi in entry["gis"]:
                self.created.pop((gi["vm"], gi["gi"]), None)
        elif kind == "gone":
            self.pending.discard(entry["vm"])
        elif kind == "event_done":
            self.next_event = entry["event"] + 1

    def _did(self, step: dict[str, Any]) -> None:
        op, vm = step["op"], step.get("vm")
        if op == "create_gi":
            self.created[(vm, step["gi"])] = {"gpu": step["gpu"], "start": step["start"]}
        elif op == "migrate":
            old = self.placement[vm]["gis"]
            gis = [self.created.pop((vm, n), slot) for n, slot in enumerate(old)]
            self.placement[vm] = {"pm": step["to"], "gis": gis}
        elif op == "start":
            count = sum(1 for (v, _) in self.created if v == vm)
            self.placement[vm] = {"pm": step["pm"], "gis": [self.created.pop((vm, n)) for n in range(count)]}
            self.pending.discard(vm)


class Controller:
    def __init__(self, url: str, token: str, log: dict[str, Any], journal: Path, seed: int) -> None:
        self.client = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30)
        self.log, self.journal = log["events"], journal
        self.rng = random.Random(seed)
        self.view = View(log["running"])  # what runs when the controller first starts
        self.open_intent: dict[str, Any] | None = None
        for entry in self._read_journal():
            if entry["kind"] == "intent":
                self.open_intent = entry
            else:
                self.view.apply(entry)
                self.open_intent = None

    # --- the journal ---------------------------------------------------------------------------
    def _read_journal(self) -> list[dict[str, Any]]:
        if not self.journal.exists():
            return []
        lines = self.journal.read_text().splitlines()
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:  # a line cut by the kill: it never happened
                break
        return out

    def record(self, entry: dict[str, Any]) -> None:
        with self.journal.open("a") as fh:
            fh.write(json.dumps(entry) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        if entry["kind"] != "intent":
            self.view.apply(entry)

    # --- requests that survive a service that is down for a while ------------------------------
    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        deadline = time.monotonic() + RETRY_FOR_S
        while True:
            try:
                return self.client.request(method, path, **kwargs)
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)

    # --- actions -------------------------------------------------------------------------------
    def resume(self) -> None:
        """Send again the action whose reply the journal does not hold."""
        intent, self.open_intent = self.open_intent, None
        if intent is None:
            return
        if intent["action"] == "post":
            self.post(intent["body"])
        elif intent["action"] == "delete":
            self.delete(intent["vm"])
        elif intent["action"] == "ack":
            self.ack(intent["plan"], intent["n"], intent["result"], intent["step"])

    def post(self, body: dict[str, Any]) -> None:
        self.record({"kind": "intent", "action": "post", "body": body})
        r = self.request("POST", "/v1/vms", json=body)
        if r.status_code == 409 and "already known" in r.text:  # sent before the kill: ask what became of it
            got = self.request("GET", f"/v1/vms/{body['id']}").json()
            status = {"running": 201, "pending": 202}.get(got["status"], 422)
            self.record(
                {"kind": "posted", "vm": body["id"], "status": status, "placement": got.get("placement")}
            )
            return
        if r.status_code == 409 and "pm" in body:  # the node it was bound to has no room now
            self.record({"kind": "posted", "vm": body["id"], "status": 409, "placement": None})
            self.post({k: v for k, v in body.items() if k != "pm"})
            return
        assert r.status_code in (201, 202, 422), r.text
        self.record(
            {
                "kind": "posted",
                "vm": body["id"],
                "status": r.status_code,
                "placement": r.json().get("placement"),
            }
        )

    def delete(self, vm: str) -> None:
        self.record({"kind": "intent", "action": "delete", "vm": vm})
        r = self.request("DELETE", f"/v1/vms/{vm}")
        assert r.status_code in (204, 404), r.text  # 404: deleted before the kill, or rejected
        self.record({"kind": "deleted", "vm": vm})

    def ack(self, plan: int, n: int, result: str, step: dict[str, Any]) -> None:
        self.record({"kind": "intent", "action": "ack", "plan": plan, "n": n, "result": result, "step": step})
        r = self.request("POST", f"/v1/plans/{plan}/steps/{n}", json={"result": result})
        if r.status_code == 200:
            self.record({"kind": "acked", "plan": plan, "n": n, "result": result, "step": step})
        # 409: the plan ended meanwhile (aborted by its timeout, or stale): the step was not done

    # --- the scheduler stand-in ----------------------------------------------------------------
    def schedule(self, pod: dict[str, Any], body: dict[str, Any], nodes: list[str]) -> None:
        args = {"Pod": pod, "NodeNames": nodes}
        passed = self.request("POST", "/k8s/filter", json=args).json()
        if passed["Error"] or not passed["NodeNames"]:
            self.post(body)  # fits no node now: it waits for the optimizer
            return
        scores = {h["Host"]: h["Score"] for h in self.request("POST", "/k8s/prioritize", json=args).json()}
        own = {n: zlib.crc32(f"{body['id']}/{n}".encode()) % 10 for n in passed["NodeNames"]}
        best = max(passed["NodeNames"], key=lambda n: (5 * scores.get(n, 0) + own[n], n))
        self.post({**body, "pm": best})

    # --- the VM platform -----------------------------------------------------------------------
    def carry_out(self, event: int, failures: bool = True) -> None:
        """Run (or fail) a few steps of the running plan; clean up after ended plans."""
        plans = self.request("GET", "/v1/plans").json()["plans"]
        for p in plans:
            if p["status"] in ("failed", "aborted", "cancelled") and p["id"] not in self.view.cleaned:
                made = self.view.created
                ours = [
                    g
                    for g in p["orphan_gis"]
                    if made.get((g["vm"], g["gi"])) == {k: g[k] for k in ("gpu", "start")}
                ]
                self.record({"kind": "cleaned", "plan": p["id"], "gis": ours})
        if event in QUIET and self.view.acked:
            time.sleep(0.8)  # nobody acknowledges: the plan's step timeout runs out
            return
        running = [p for p in plans if p["status"] == "running" and p["next_step"] is not None]
        for p in running[:1]:
            for _ in range(self.rng.randint(1, 4)):
                n = p["next_step"]
                if n is None:
                    break
                step = {k: v for k, v in p["steps"][n].items() if k not in ("n", "status")}
                time.sleep(self.rng.uniform(0.0, 0.3))  # late
                result = "failed" if failures and self.rng.random() < 0.1 else "done"
                self.ack(p["id"], n, result, step)
                got = self.request("GET", f"/v1/plans/{p['id']}")
                if got.status_code != 200 or result == "failed":
                    break
                p = got.json()

    # --- the run -------------------------------------------------------------------------------
    def run(self, nodes: list[str]) -> dict[str, Any]:
        self.resume()
        for i in range(self.view.next_event, len(self.log)):
            event = self.log[i]
            self.carry_out(i)
            known = set(self.view.placement) | self.view.pending
            if event["op"] == "arrive" and event["vm"]["id"] not in known:
                self.schedule(event["pod"], event["vm"], nodes)
            elif event["op"] == "depart" and event["id"] in known:
                self.delete(event["id"])
            self.record({"kind": "event_done", "event": i})
        self.settle()
        return {"placement": self.view.placement, "pending": sorted(self.view.pending)}

    def settle(self) -> None:
        """Carry out every plan, without failures, until none runs and none comes for a while."""
        quiet_since = time.monotonic()
        deadline = time.monotonic() + SETTLE_S
        while time.monotonic() < deadline:
            plans = self.request("GET", "/v1/plans").json()["plans"]
            if any(p["status"] == "running" for p in plans):
                self.carry_out(len(self.log), failures=False)
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since > 3.0:
                break
            time.sleep(0.2)
        for vm in sorted(self.view.pending):  # what the optimizer gave up on
            if self.request("GET", f"/v1/vms/{vm}").json()["status"] == "rejected":
                self.record({"kind": "gone", "vm": vm})
        self.carry_out(len(self.log), failures=False)  # the last ended plans' leftovers


def main() -> None:
    url, token, log, journal, seed = sys.argv[1:6]
    events = json.loads(Path(log).read_text())
    controller = Controller(url, token, events, Path(journal), int(seed))
    print(json.dumps(controller.run(events["nodes"])))


if __name__ == "__main__":
    main()
