"""The cluster's own rules outside the BILP: VMs that may run on several GPU models, VMs that cannot
move, platforms that cannot move a VM inside a server — in the state, the arrival rule, the
executor, the checker and the independent replay (docs/formats.md#snapshot, docs/plans.md)."""

from __future__ import annotations

import pytest

from origamig.cluster.records import GiSlot, Placement
from origamig.errors import PlacementError
from origamig.judge.check import check_placement
from origamig.judge.replay import replay_plan
from origamig.plan.executor import Infeasible, Plan, plan_migrations
from origamig.policies.arrival_rule import first_fit
from origamig.snapshot.document import parse_snapshot

A40, A80, H80 = "A100-40GB", "A100-80GB", "H100-80GB"


def snapshot(pms: list[list[str]], vms: list[dict], **top: object):
    doc = {
        "version": 1,
        "pms": [{"id": f"pm{j}", "cpu": 64, "ram_gb": 512, "gpus": gpus} for j, gpus in enumerate(pms)],
        "vms": vms,
        **top,
    }
    return parse_snapshot(doc)


def running(vm_id: str, gis: list[str], pm: str, slots: list[tuple[int, int]], **extra: object) -> dict:
    return {
        "id": vm_id,
        "cpu": 4,
        "ram_gb": 16,
        "gis": gis,
        "placement": {"pm": pm, "gis": [{"gpu": g, "start": z} for g, z in slots]},
        **extra,
    }


# --- VMs that may run on several GPU models ----------------------------------------------------------
def test_a_placed_vm_runs_as_the_model_of_its_gpu() -> None:
    snap = snapshot([[A40], [A80]], [{"id": "v", "cpu": 4, "ram_gb": 16, "gis": ["1g.10gb"]}])
    dc = snap.datacenter()
    dc.place(snap.vms["v"], Placement(1, (GiSlot(0, 5),)))  # start 5: only the 80GB's 1-slice GI has it
    placed = dc.vms["v"]
    assert placed.alternatives == () and placed.gis[0].gpu_model == A80 and dc.occupancy(1, 0) == 1 << 5


def test_the_checker_judges_each_placement_by_the_gpu_it_is_on() -> None:
    snap = snapshot([[A40], [A80]], [{"id": "v", "cpu": 4, "ram_gb": 16, "gis": ["1g.10gb"]}])
    vms = dict(snap.vms)
    assert check_placement(snap.pms, vms, {"v": Placement(1, (GiSlot(0, 5),))}) == []
    (bad,) = check_placement(snap.pms, vms, {"v": Placement(0, (GiSlot(0, 5),))})  # 2 slices on the 40GB
    assert bad.kind == "start"


def test_first_fit_takes_the_first_pm_of_any_model_that_offers_the_profiles() -> None:
    snap = snapshot(
        [[A40], [H80], [A80]],
        [
            running("full", ["7g.40gb"], "pm0", [(0, 0)]),
            {"id": "v", "cpu": 4, "ram_gb": 16, "gis": ["2g.20gb"]},
        ],
    )
    dc = snap.datacenter()
    where = first_fit(dc, dc.pending["v"])
    assert isinstance(where, Placement) and where.pm == 1  # the H100 (the A100-40GB has no 2g.20gb)


def test_a_start_whose_gis_sit_on_two_models_is_refused_by_the_replay() -> None:
    snap = snapshot([[H80, A80]], [{"id": "v", "cpu": 4, "ram_gb": 16, "gis": ["1g.10gb", "1g.10gb"]}])
    steps = [
        {"op": "power_on", "pm": "pm0"},
        {"op": "create_gi", "vm": "v", "gi": 0, "pm": "pm0", "gpu": 0, "start": 0},
        {"op": "create_gi", "vm": "v", "gi": 1, "pm": "pm0", "gpu": 1, "start": 0},
        {"op": "start", "vm": "v", "pm": "pm0"},
    ]
    result = replay_plan(snap.pms, {}, {}, {"v": snap.vms["v"]}, steps)
    assert result.failed_step == 3 and "different classes" in (result.reason or "")
    same = [*steps[:2], {**steps[2], "gpu": 0, "start": 1}, steps[3]]
    assert replay_plan(snap.pms, {}, {}, {"v": snap.vms["v"]}, same).ok


# --- VMs that cannot move ----------------------------------------------------------------------------
def test_a_pinned_vm_is_never_a_target_and_never_migrated_in_a_replay() -> None:
    snap = snapshot([[A80], [A80]], [running("p", ["1g.10gb"], "pm0", [(0, 3)], migratable=False)])
    dc = snap.datacenter()
    with pytest.raises(PlacementError, match="not migratable"):
        plan_migrations(dc, {"p": Placement(1, (GiSlot(0, 0),))})
    steps = [
        {"op": "power_on", "pm": "pm1"},
        {"op": "create_gi", "vm": "p", "gi": 0, "pm": "pm1", "gpu": 0, "start": 0},
        {"op": "migrate", "vm": "p", "from": "pm0", "to": "pm1"},
    ]
    result = replay_plan(snap.pms, dict(snap.vms), snap.placement, {}, steps)
    assert result.failed_step == 2 and result.reason is not None and "not migratable" in result.reason


# --- platforms that move VMs only between servers ------------------------------------------------------
SWAP = [  # two 3g.40gb at 0 and 4 trade places: a blocked cycle inside one GPU
    running("a", ["3g.40gb"], "pm0", [(0, 0)]),
    running("b", ["3g.40gb"], "pm0", [(0, 4)]),
]
SWAPPED = {"a": Placement(0, (GiSlot(0, 4),)), "b": Placement(0, (GiSlot(0, 0),))}


def test_without_intra_pm_moves_a_move_inside_a_pm_is_refused() -> None:
    snap = snapshot([[A80]], SWAP, intra_pm_moves=False)
    dc = snap.datacenter()
    assert dc.intra_pm_moves is False
    with pytest.raises(PlacementError, match="between GIs of its PM"):
        plan_migrations(dc, SWAPPED)
    alone = snapshot([[A80]], SWAP[:1], intra_pm_moves=False)  # a alone: slices 4-7 are free
    steps = [
        {"op": "create_gi", "vm": "a", "gi": 0, "pm": "pm0", "gpu": 0, "start": 4},
        {"op": "migrate", "vm": "a", "from": "pm0", "to": "pm0"},
        {"op": "destroy_gi", "vm": "a", "gi": 0, "pm": "pm0", "gpu": 0, "start": 0},
    ]
    assert replay_plan(alone.pms, dict(alone.vms), alone.placement, {}, steps).ok
    result = replay_plan(alone.pms, dict(alone.vms), alone.placement, {}, steps, intra_pm_moves=False)
    assert result.failed_step == 1 and "intra_pm_moves" in (result.reason or "")


def test_without_intra_pm_moves_parking_goes_to_another_pm() -> None:
    # a and b trade PMs; each blocks the other: one parks — on pm2, never between GIs of its own PM.
    vms = [running("a", ["7g.80gb"], "pm0", [(0, 0)]), running("b", ["7g.80gb"], "pm1", [(0, 0)])]
    for intra in (True, False):
        snap = snapshot([[A80], [A80], [A80]], vms, intra_pm_moves=intra)
        dc = snap.datacenter()
        plan = plan_migrations(dc, {"a": Placement(1, (GiSlot(0, 0),)), "b": Placement(0, (GiSlot(0, 0),))})
        assert isinstance(plan, Plan) and plan.parked
        parked = [s for s in plan.steps if s.to_dict().get("parking") and s.to_dict()["op"] == "migrate"]
        assert all(s.to_dict()["to"] == "pm2" for s in parked)
        replay = replay_plan(
            snap.pms, dict(snap.vms), snap.placement, {}, plan.to_json(), intra_pm_moves=intra
        )
        assert replay.ok, replay.reason
    only_two = snapshot([[A80], [A80]], vms, intra_pm_moves=False)
    target = {"a": Placement(1, (GiSlot(0, 0),)), "b": Placement(0, (GiSlot(0, 0),))}
    assert isinstance(plan_migrations(only_two.datacenter(), target), Infeasible)
