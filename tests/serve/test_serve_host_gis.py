"""A server's real GIs (docs/service.md#a-servers-real-gis): `nvidia-smi mig -lgi` output, as a host
prints it, compared with the state — matches, GIs the host has that the state lacks (held when they
sit on free slices, reported otherwise) and GIs the state has that the host lacks (freed when no VM
owns them, reported otherwise) — kept by a restart."""

from __future__ import annotations

import copy
import json
import pickle
import re
from pathlib import Path
from typing import Any

from origamig.serve.live import Live
from origamig.serve.store import Store
from tests.paths import ROOT
from tests.serve.test_serve_plans import ack
from tests.serve_helpers import EXAMPLES, AppClient, in_process, valid

WALK = EXAMPLES / "kubevirt" / "start.json"  # two 8x H100-80GB nodes, KubeVirt
TEXT = {"Content-Type": "text/plain"}


def listing(*rows: tuple[int, str, int, int, int, int]) -> str:
    """`nvidia-smi mig -lgi` as a host prints it: (GPU, profile, profile ID, GI ID, start, size) rows."""
    border = "+" + "-" * 57 + "+"
    out = [
        "$ sudo nvidia-smi mig -lgi",
        border,
        "| GPU instances:" + " " * 42 + "|",
        "| GPU   Name             Profile  Instance   Placement    |",
        "|                          ID       ID       Start:Size   |",
        "|" + "=" * 57 + "|",
    ]
    for gpu, name, pid, gid, start, size in rows:
        out.append(f"|  {gpu:2d}  MIG {name:<13}  {pid:3d}      {gid:3d}          {start}:{size}       |")
        out.append(border)
    return "\n".join(out) + "\n"


def walk_through(tmp: Path) -> tuple[Live, AppClient]:
    """The walk-through's cluster with two VMs on gpu-node-1: ml/train-7 on GPU 0, ml/train-9 on GPU 2."""
    live, c = in_process(tmp, copy.deepcopy(json.loads(WALK.read_text())))
    for vm, gpu in (("ml/train-7", 0), ("ml/train-9", 2)):
        where = {"pm": "gpu-node-1", "gis": [{"gpu": gpu, "start": 4}]}
        r = c.post("/v1/vms", json={"id": vm, "cpu": 9, "ram_gb": 96, "gis": ["3g.40gb"], "placement": where})
        assert r.status_code == 201, r.text
    return live, c


def post(c: AppClient, pm: str, text: str, dry_run: bool = False) -> dict[str, Any]:
    r = c.post(f"/v1/pms/{pm}/lgi" + ("?dry_run=true" if dry_run else ""), content=text, headers=TEXT)
    assert r.status_code == 200, r.text
    return r.json()


def docs_example() -> dict[str, Any]:
    """The answer docs/service.md shows under "A server's real GIs"."""
    page = (ROOT / "docs" / "service.md").read_text()
    section = page[page.index("### A server's real GIs") :]
    return json.loads(re.search(r"```json\n(.*?)```", section, re.S).group(1))  # type: ignore[union-attr]


def test_the_docs_answer_is_what_a_listing_of_the_walk_through_node_gets(tmp_path: Path) -> None:
    live, c = walk_through(tmp_path)
    # The host has train-7's GI (GPU 0, start 4) and a 1g.10gb nobody asked for; train-9's is missing.
    answer = post(c, "gpu-node-1", listing((0, "3g.40gb", 9, 2, 4, 4), (1, "1g.10gb", 19, 9, 0, 1)))
    assert answer == docs_example()
    assert c.get("/v1/status").json()["held"]["found_gis"] == 1
    assert live.dc.occupancy(0, 1) == 0b1  # GPU 1's slice 0 is kept from placements
    valid(c.get("/v1/snapshot").json())


def test_what_the_host_is_right_about_is_adopted_and_the_rest_reported(tmp_path: Path) -> None:
    live, c = walk_through(tmp_path)
    post(c, "gpu-node-1", listing((0, "3g.40gb", 9, 2, 4, 4), (1, "1g.10gb", 19, 9, 0, 1)))
    text = listing(
        (0, "3g.40gb", 9, 2, 4, 4),  # train-7's: a match
        (0, "1g.10gb+me", 20, 13, 0, 1),  # free slices: held (a +me variant reads as its base profile)
        (2, "2g.20gb", 14, 3, 4, 2),  # on train-9's slices: reported
        (3, "3g.40gb", 9, 1, 2, 4),  # a start the profile never takes: reported
        (9, "1g.10gb", 19, 7, 0, 1),  # a GPU the node does not have: reported
    )  # and GPU 1's 1g.10gb, found before, is gone
    before = c.get("/v1/snapshot").json()
    dry = post(c, "gpu-node-1", text, dry_run=True)
    assert c.get("/v1/snapshot").json() == before and len(live.found) == 1  # nothing adopted
    answer = post(c, "gpu-node-1", text)
    assert {k: v for k, v in dry.items() if k not in ("dry_run", "found_gis")} == {
        k: v for k, v in answer.items() if k not in ("dry_run", "found_gis")
    }
    assert answer["matched"] == 1
    rows = {(e["gpu"], e["start"]): e for e in answer["host_only"]}
    assert rows[(0, 0)]["adopted"] and rows[(0, 0)]["profile"] == "1g.10gb" and rows[(0, 0)]["gi_id"] == 13
    assert not rows[(2, 4)]["adopted"]
    assert rows[(2, 4)]["reason"] == "overlaps what the state has there: VM ml/train-9's 3g.40gb at 4"
    assert rows[(3, 2)]["reason"] == "2 is not a permitted start for 3g.40gb on H100-80GB (allowed: 0, 4)"
    assert rows[(9, 0)]["reason"] == "GPU 9: gpu-node-1 has 8 GPUs in the state"
    (freed,) = [e for e in answer["state_only"] if e["owner"] == "found"]
    assert (freed["gpu"], freed["start"], freed["adopted"]) == (1, 0, True)
    (missing,) = [e for e in answer["state_only"] if e["owner"] == "vm"]
    assert (missing["vm"], missing["adopted"]) == ("ml/train-9", False)
    assert answer["found_gis"] == [
        {"pm": "gpu-node-1", "gpu": 0, "start": 0, "profile": "1g.10gb", "gi_id": 13}
    ]
    assert live.dc.occupancy(0, 1) == 0 and live.dc.occupancy(0, 0) & 0b1
    valid(c.get("/v1/snapshot").json())


def test_a_found_gi_is_kept_by_a_restart_blocks_removal_and_is_taken_over_by_its_vm(tmp_path: Path) -> None:
    live, c = walk_through(tmp_path)
    post(c, "gpu-node-2", listing((5, "1g.20gb", 15, 11, 2, 2)))
    again = Live(Store(live.store.path), pickle.loads(pickle.dumps(live.policy)))
    assert again.found == live.found and set(again.dc.holds) == set(live.dc.holds)
    (problem,) = c.delete("/v1/pms/gpu-node-2").json()["problems"]
    assert "GIs found on the host: GPU 5, start 2 (1g.20gb)" in problem
    # Its slices are kept from placements; a VM posted exactly on it takes it over (it was that VM's).
    over = {"id": "y", "cpu": 1, "ram_gb": 1, "gis": ["3g.40gb"]}
    r = c.post("/v1/vms", json=over | {"placement": {"pm": "gpu-node-2", "gis": [{"gpu": 5, "start": 0}]}})
    assert r.status_code == 409 and "overlaps" in r.json()["error"]
    owner = {"id": "x", "cpu": 1, "ram_gb": 1, "gis": ["1g.20gb"]}
    r = c.post("/v1/vms", json=owner | {"placement": {"pm": "gpu-node-2", "gis": [{"gpu": 5, "start": 2}]}})
    assert r.status_code == 201 and live.found == {}
    assert c.get("/v1/status").json()["held"]["found_gis"] == 0
    assert c.delete("/v1/vms/x").status_code == 204
    assert c.delete("/v1/pms/gpu-node-2").status_code == 204


def test_an_orphan_the_host_no_longer_has_is_confirmed_gone(tmp_path: Path) -> None:
    _, c = in_process(tmp_path, EXAMPLES / "fragmented-a100.json")
    (plan_id,) = c.post("/v1/pms/pm0/drain").json()["drain_plans"]
    plan = c.get(f"/v1/plans/{plan_id}").json()
    first = plan["ready_steps"][0]
    created = plan["steps"][first]
    assert created["op"] == "create_gi"
    ack(c, plan_id, first)
    (orphan,) = c.delete(f"/v1/plans/{plan_id}").json()["orphan_gis"]
    host = created["pm"]
    answer = post(c, host, "No GPU instances found: Not Found\n")  # the GI was destroyed by hand
    gone = [e for e in answer["state_only"] if e["owner"] == "orphan"]
    assert gone == [
        {"gpu": orphan["gpu"], "start": orphan["start"], "profile": orphan["profile"], "owner": "orphan",
         "vm": orphan["vm"], "plan": plan_id, "step": first, "adopted": True,
         "reason": f"gone: the GI plan {plan_id} left (step {first}) is confirmed gone, its slices free"}
    ]  # fmt: skip
    assert all(not e["adopted"] for e in answer["state_only"] if e["owner"] == "vm")
    assert c.get(f"/v1/plans/{plan_id}").json()["orphan_gis"] == []
    assert c.get("/v1/status").json()["held"]["orphan_gis"] == 0
    valid(c.get("/v1/snapshot").json())


def test_a_listing_that_is_not_one_is_refused_naming_its_line(tmp_path: Path) -> None:
    _, c = walk_through(tmp_path)
    r = c.post("/v1/pms/gpu-node-1/lgi", content="hello\n", headers=TEXT)
    assert r.status_code == 400
    assert r.json()["problems"] == [
        "body:1: not `nvidia-smi mig -lgi` output (expected its GPU-instance table): 'hello'"
    ]
    cut = "\n".join(listing((0, "3g.40gb", 9, 2, 4, 4)).splitlines()[:-1])  # no closing border
    assert "cut off" in c.post("/v1/pms/gpu-node-1/lgi", content=cut, headers=TEXT).json()["error"]
    r = c.post("/v1/pms/gpu-node-1/lgi", json={"lgi": "..."})
    assert r.status_code == 415 and "text/plain" in r.json()["error"]
    r = c.post("/v1/pms/gpu-node-1/lgi?dry_run=maybe", content=listing(), headers=TEXT)
    assert r.status_code == 400 and r.json()["error"] == "dry_run: 'maybe' is not true or false"
