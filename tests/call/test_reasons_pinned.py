"""Why a pending VM is not admitted when VMs that may not move are in its way
(docs/solving.md#why-a-pending-vm-is-not-admitted): the pinned VMs are named, and nothing suggests a
wider neighborhood, which cannot help."""

from __future__ import annotations

import origamig
from origamig.call.reasons import pinned_blockers
from origamig.snapshot.document import parse_snapshot


def blocked(migratable: bool) -> dict:
    """Two one-GPU A100-40GB servers, each with a 1g.5gb at slice 1: a 4g.20gb (start 0 only, slices
    0-3) fits neither until that VM moves to slice 4 or later."""
    return {
        "version": 1,
        "pms": [{"id": p, "cpu": 80, "ram_gb": 512, "gpus": ["A100-40GB"]} for p in ("pm0", "pm1")],
        "vms": [
            {"id": f"small-{p}", "cpu": 4, "ram_gb": 16, "gis": ["1g.5gb"], "migratable": migratable,
             "placement": {"pm": p, "gis": [{"gpu": 0, "start": 1}]}}
            for p in ("pm0", "pm1")
        ] + [{"id": "big", "cpu": 16, "ram_gb": 64, "gis": ["4g.20gb"]}],
    }  # fmt: skip


def test_pinned_vms_in_the_way_are_named_and_no_wider_neighborhood_is_suggested() -> None:
    outcome = origamig.solve_snapshot(parse_snapshot(blocked(migratable=False)))
    assert "big" not in outcome.admitted
    reason = outcome.reasons["big"]
    assert "small-pm0, small-pm1" in reason and "migratable false" in reason
    assert "--neighborhood" not in reason


def test_movable_vms_in_the_way_are_moved_instead() -> None:
    outcome = origamig.solve_snapshot(parse_snapshot(blocked(migratable=True)))
    assert outcome.admitted == ("big",)


def test_a_server_with_room_beside_its_pinned_vms_names_no_blocker() -> None:
    doc = blocked(migratable=False)
    doc["vms"][1]["migratable"] = True  # pm1's VM may move: repacking pm1 makes room
    dc = parse_snapshot(doc).datacenter()
    assert pinned_blockers(dc, dc.pending["big"]) == []
    assert pinned_blockers(parse_snapshot(blocked(False)).datacenter(), dc.pending["big"]) == [
        "small-pm0",
        "small-pm1",
    ]
