"""The independent checker (`origamig/judge/check.py`) refuses what it must, and only that.

Every property test of the package leans on it, so its own refusals are pinned here by hand: one
case per kind of violation, and the states next to them that it must accept. A100-40GB profiles
(memory slices, starts): 1g.5gb (1, 0–6), 2g.10gb (2, 0,2,4), 3g.20gb (4, 0,4), 7g.40gb (8, 0).
PMs: 80 cores, 512 GB, two A100s unless said.
"""

from __future__ import annotations

from dataclasses import replace

from origamig.cluster.records import GiSlot, Placement
from origamig.judge.check import check, check_counters, check_placement, moves_refused
from tests.builders import A30, A100, at, datacenter, pm, vm


def kinds(violations) -> list[str]:
    return sorted(v.kind for v in violations)


def test_a_valid_placement_passes() -> None:
    pms = [pm("p0"), pm("p1")]
    vms = {"a": vm("a", ["3g.20gb"]), "b": vm("b", ["3g.20gb", "1g.5gb"])}
    # a: GPU 0 slices 0-3; b: GPU 0 slices 4-7 and GPU 1 slice 6 — no slice twice, 16 + 20 cores.
    placement = {"a": at(0, (0, 0)), "b": at(0, (0, 4), (1, 6))}
    assert check_placement(pms, vms, placement) == []


def test_each_broken_rule_is_named_by_its_kind() -> None:
    pms = [pm("p0"), replace(pm("off"), powered_off=True)]
    vms = {
        "overlap1": vm("overlap1", ["3g.20gb"]),
        "overlap2": vm("overlap2", ["2g.10gb"]),  # slices 2-3 inside overlap1's 0-3
        "badstart": vm("badstart", ["3g.20gb"]),  # 3g.20gb may start at 0 or 4 only
        "nogpu": vm("nogpu", ["1g.5gb"]),
        "wrongclass": vm("wrongclass", ["1g.6gb"], gpu=A30),
        "slots": vm("slots", ["1g.5gb", "1g.5gb"]),
        "sleeping": vm("sleeping", ["1g.5gb"]),
    }
    placement = {
        "overlap1": at(0, (0, 0)),
        "overlap2": at(0, (0, 2)),
        "badstart": at(0, (1, 2)),
        "nogpu": at(0, (5, 0)),
        "wrongclass": at(0, (1, 0)),
        "slots": at(0, (1, 6)),
        "sleeping": at(1, (0, 0)),
        "ghost": at(0, (1, 5)),
        "nowhere": Placement(7, (GiSlot(0, 0),)),
    }
    vms["nowhere"] = vm("nowhere", ["1g.5gb"])
    found = check_placement(pms, vms, placement)
    by_where = {v.where: v.kind for v in found}
    assert by_where["vm overlap2 gi 0"] == "overlap"
    assert by_where["vm badstart gi 0"] == "start"
    assert by_where["vm nogpu gi 0"] == "gpu"
    assert by_where["vm wrongclass gi 0"] == "class"
    assert by_where["vm slots"] == "slots"
    assert by_where["vm sleeping"] == "powered_off"
    assert by_where["vm ghost"] == "vm"
    assert by_where["vm nowhere"] == "pm"
    assert "vm overlap1 gi 0" not in by_where  # the first holder keeps its slices
    assert not any(v.kind in ("cpu", "ram") for v in found)


def test_capacity_is_summed_per_server() -> None:
    pms = [pm("p0", cpu=80, ram_gb=512)]
    vms = {"a": vm("a", ["1g.5gb"], cpu=50, ram_gb=300), "b": vm("b", ["1g.5gb"], cpu=40, ram_gb=100)}
    # 50 + 40 = 90 cores > 80; 300 + 100 = 400 GB ≤ 512.
    found = check_placement(pms, vms, {"a": at(0, (0, 0)), "b": at(0, (0, 1))})
    assert kinds(found) == ["cpu"]
    vms["b"] = vm("b", ["1g.5gb"], cpu=30, ram_gb=300)  # 80 cores exactly; 600 GB > 512
    assert kinds(check_placement(pms, vms, {"a": at(0, (0, 0)), "b": at(0, (0, 1))})) == ["ram"]


def test_a_vm_being_moved_holds_both_ends() -> None:
    pms = [pm("p0", cpu=80), pm("p1", cpu=80)]
    vms = {"m": vm("m", ["3g.20gb"], cpu=50), "x": vm("x", ["3g.20gb"], cpu=40)}
    # m moves from p0 to p1, where x runs: while it moves it holds 50 cores on both, so p1 carries
    # 50 + 40 = 90 > 80 cores (p0 carries 50).
    between = check_placement(pms, vms, {"m": at(1, (0, 4)), "x": at(1, (0, 0))}, {"m": [at(0, (0, 0))]})
    assert [(v.kind, v.where) for v in between] == [("cpu", "pm p1")]
    # Inside one PM its cores count once: old GI on slices 0-3, new one on 4-7, 50 cores.
    assert check_placement(pms, vms, {"m": at(0, (0, 4))}, {"m": [at(0, (0, 0))]}) == []
    # A new GI on the old one's slices is an overlap on each of the four.
    same = check_placement(pms, vms, {"m": at(0, (0, 0))}, {"m": [at(0, (0, 0))]})
    assert kinds(same) == ["overlap"] * 4


def test_moves_the_cluster_forbids() -> None:
    pinned = replace(vm("p", ["1g.5gb"]), migratable=False)
    vms = {"p": pinned, "f": vm("f", ["1g.5gb"])}
    before = {"p": at(0, (0, 0)), "f": at(0, (0, 1))}
    assert moves_refused(vms, before, before) == []
    assert [v.kind for v in moves_refused(vms, before, {**before, "p": at(1, (0, 0))})] == ["pinned"]
    inside = {**before, "f": at(0, (1, 0))}
    assert moves_refused(vms, before, inside) == []
    assert [v.kind for v in moves_refused(vms, before, inside, intra_pm_moves=False)] == ["intra_pm"]
    assert moves_refused(vms, before, {**before, "f": at(1, (0, 0))}, intra_pm_moves=False) == []


def test_a_state_whose_counters_were_tampered_with_is_refused() -> None:
    a = vm("a", ["3g.20gb"], cpu=16)
    dc = datacenter([pm("p0", gpus=[A100]), pm("p1", gpus=[A100])], [(a, at(0, (0, 0)))])
    assert check(dc) == [] and check_counters(dc) == []
    dc._pm[0].free_cpu_m += 1000  # one core appears from nowhere
    dc._pm[1].gpus[0].occ = 0b1  # a slice marked used that no GI holds
    dc._pm[0].free_mem += 1
    found = check_counters(dc)
    assert {v.where for v in found} == {"pm p0", "pm p1 gpu 0"}
    assert len(found) == 3
