"""Independent plan replay (docs/formats.md#replay): valid plans pass, each broken rule names the first bad
step."""

from __future__ import annotations

import ast
import inspect
from typing import Any

import pytest

import origamig.judge.replay
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement
from origamig.judge.replay import replay_plan
from origamig.plan.executor import Plan, plan_migrations
from tests.builders import A30, A100, at, datacenter, pm, vm


def replay(dc: DataCenter, steps: list[dict[str, Any]], target: dict[str, Placement] | None = None) -> Any:
    return replay_plan(dc.pms, dc.vms, dc.placement, dc.pending, steps, target=target)


def two_pms() -> DataCenter:
    """pm0 (on, 8 cores) runs `a` (3g.20gb@0, 4 cores) and `b` (1g.5gb@4, 2 cores); pm1 is empty (off)."""
    a = vm("a", ["3g.20gb"], cpu=4, ram_gb=8)
    b = vm("b", ["1g.5gb"], cpu=2, ram_gb=8)
    p = vm("p", ["1g.5gb"], cpu=2, ram_gb=8)
    pms = [pm("pm0", [A100], cpu=8, ram_gb=32), pm("pm1", [A100], cpu=8, ram_gb=32)]
    return datacenter(pms, [(a, at(0, (0, 0))), (b, at(0, (0, 4)))], pending=[p])


MOVE_A = [  # a: pm0 gpu0@0 → pm1 gpu0@4, by hand from docs/formats.md#plan
    {"op": "power_on", "pm": "pm1"},
    {"op": "create_gi", "vm": "a", "gi": 0, "pm": "pm1", "gpu": 0, "start": 4},
    {"op": "migrate", "vm": "a", "from": "pm0", "to": "pm1"},
    {"op": "destroy_gi", "vm": "a", "gi": 0, "pm": "pm0", "gpu": 0, "start": 0},
]


def test_a_valid_hand_written_plan_replays() -> None:
    dc = two_pms()
    steps = [
        *MOVE_A,
        {"op": "create_gi", "vm": "p", "gi": 0, "pm": "pm0", "gpu": 0, "start": 0},
        {"op": "start", "vm": "p", "pm": "pm0"},
        {"op": "create_gi", "vm": "b", "gi": 0, "pm": "pm0", "gpu": 0, "start": 1, "parking": True},
        {"op": "migrate", "vm": "b", "from": "pm0", "to": "pm0", "parking": True},
        {"op": "destroy_gi", "vm": "b", "gi": 0, "pm": "pm0", "gpu": 0, "start": 4, "parking": True},
    ]
    target = {"a": at(1, (0, 4)), "p": at(0, (0, 0)), "b": at(0, (0, 1))}
    result = replay(dc, steps, target)
    assert result.ok, result.reason
    assert result.final_placement == target
    assert result.powered_on == {"pm0", "pm1"}
    assert result.steps_run == len(steps)


@pytest.mark.parametrize(
    ("steps", "bad", "reason"),
    [
        # create_gi on slices a still uses (3g.20gb@0 covers 0-3)
        ([{"op": "create_gi", "vm": "b", "gi": 0, "pm": "pm0", "gpu": 0, "start": 2}], 0, "used twice"),
        # 1g.5gb has no start 7 on an A100 (docs/model.md#domain: starts 0–6)
        (
            [{"op": "create_gi", "vm": "b", "gi": 0, "pm": "pm0", "gpu": 0, "start": 7}],
            0,
            "not a permitted start",
        ),
        # pm1 hosts nothing, so it is off until a power_on
        ([{"op": "create_gi", "vm": "a", "gi": 0, "pm": "pm1", "gpu": 0, "start": 0}], 0, "powered off"),
        ([{"op": "power_on", "pm": "pm0"}], 0, "already on"),
        ([{"op": "power_off", "pm": "pm0"}], 0, "still hosts"),
        ([*MOVE_A[:1], {"op": "migrate", "vm": "a", "from": "pm0", "to": "pm1"}], 1, "does not exist"),
        (
            [*MOVE_A[:3], {"op": "destroy_gi", "vm": "a", "gi": 0, "pm": "pm1", "gpu": 0, "start": 4}],
            3,
            "still runs",
        ),
        ([{"op": "migrate", "vm": "a", "from": "pm1", "to": "pm0"}], 0, "powered off"),
        ([{"op": "migrate", "vm": "a", "from": "pm0", "to": "pm0"}], 0, "moves no GI"),
        ([{"op": "start", "vm": "a", "pm": "pm0"}], 0, "not a pending VM"),
        ([{"op": "start", "vm": "p", "pm": "pm0"}], 0, "does not exist"),
        ([{"op": "teleport", "vm": "a"}], 0, "unknown op"),
        ([{"op": "create_gi", "vm": "a", "gi": 0, "pm": "pm0", "gpu": 0}], 0, "missing field 'start'"),
        ([{"op": "create_gi", "vm": "zz", "gi": 0, "pm": "pm0", "gpu": 0, "start": 0}], 0, "unknown VM"),
        ([{"op": "create_gi", "vm": "a", "gi": 3, "pm": "pm0", "gpu": 0, "start": 4}], 0, "has no GI 3"),
        ([{"op": "power_on", "pm": "pm9"}], 0, "unknown PM"),
        # the old GI is never destroyed: found after the last step
        (MOVE_A[:3], 3, "never destroyed"),
        (MOVE_A[:2], 2, "never used"),
    ],
)
def test_each_broken_rule_names_the_first_bad_step(
    steps: list[dict[str, Any]], bad: int, reason: str
) -> None:
    result = replay(two_pms(), steps)
    assert not result.ok
    assert result.failed_step == bad
    assert reason in (result.reason or "")
    assert (result.reason or "").startswith(f"step {bad}" if bad < len(steps) else "after the last step")
    assert "\n" not in (result.reason or "")


def test_a_migrating_vm_holds_cpu_at_both_ends() -> None:
    # pm1 has 8 cores and runs `w` (4 cores). Moving `a` (4 cores) there fits exactly; moving `big`
    # (6 cores) does not, although pm0 would have room once `big` left it.
    a = vm("a", ["1g.5gb"], cpu=4, ram_gb=4)
    big = vm("big", ["1g.5gb"], cpu=6, ram_gb=4)
    w = vm("w", ["1g.5gb"], cpu=4, ram_gb=4)
    pms = [pm("pm0", [A100], cpu=16, ram_gb=64), pm("pm1", [A100], cpu=8, ram_gb=64)]
    dc = datacenter(pms, [(a, at(0, (0, 0))), (big, at(0, (0, 1))), (w, at(1, (0, 0)))])

    def move(v: str, start: int, to: int) -> list[dict[str, Any]]:
        return [
            {"op": "create_gi", "vm": v, "gi": 0, "pm": "pm1", "gpu": 0, "start": to},
            {"op": "migrate", "vm": v, "from": "pm0", "to": "pm1"},
            {"op": "destroy_gi", "vm": v, "gi": 0, "pm": "pm0", "gpu": 0, "start": start},
        ]

    assert replay(dc, move("a", 0, 1)).ok
    result = replay(dc, move("big", 1, 1))
    assert result.failed_step == 1 and "CPU 10 > capacity 8" in (result.reason or "")


def test_class_mismatch_and_target_mismatch() -> None:
    v = vm("v", ["1g.6gb"], gpu=A30)
    dc = datacenter([pm("pm0", [A30, A100])], [(v, at(0, (0, 0)))])
    bad = [{"op": "create_gi", "vm": "v", "gi": 0, "pm": "pm0", "gpu": 1, "start": 0}]
    result = replay(dc, bad)
    assert result.failed_step == 0 and "1g.6gb" in (result.reason or "")
    good = [
        {"op": "create_gi", "vm": "v", "gi": 0, "pm": "pm0", "gpu": 0, "start": 3},
        {"op": "migrate", "vm": "v", "from": "pm0", "to": "pm0"},
        {"op": "destroy_gi", "vm": "v", "gi": 0, "pm": "pm0", "gpu": 0, "start": 0},
    ]
    assert replay(dc, good, {"v": at(0, (0, 3))}).ok
    wrong = replay(dc, good, {"v": at(0, (0, 2))})
    assert wrong.failed_step == 3 and "not at its target" in (wrong.reason or "")


def test_a_broken_initial_state_is_reported() -> None:
    v, w = vm("v", ["3g.20gb"]), vm("w", ["1g.5gb"])
    dc = datacenter([pm("pm0", [A100])], [(v, at(0, (0, 0)))])
    result = replay_plan(dc.pms, {**dc.vms, "w": w}, {**dc.placement, "w": at(0, (0, 1))}, {}, [])
    assert not result.ok and result.failed_step is None
    assert (result.reason or "").startswith("initial state")


def fig1c_plan() -> tuple[DataCenter, Plan, dict[str, Placement]]:
    a = vm("vmA", ["3g.20gb"])
    small = [vm(f"vm{c}", ["1g.5gb"]) for c in "BCD"]
    placed = [(a, at(0, (0, 0)))] + [(s, at(0, (0, z))) for s, z in zip(small, (4, 5, 6), strict=True)]
    dc = datacenter([pm("pm0", [A100]), pm("pm1", [A100])], placed, pending=[vm("vmP", ["1g.5gb"])])
    target = {"vmA": at(0, (0, 4)), "vmB": at(0, (0, 0)), "vmC": at(0, (0, 1)), "vmD": at(0, (0, 2))}
    target["vmP"] = at(0, (0, 3))
    plan = plan_migrations(dc, target)
    assert isinstance(plan, Plan)
    return dc, plan, target


def test_dropping_any_step_but_a_power_off_breaks_the_plan() -> None:
    dc, plan, target = fig1c_plan()
    steps = plan.to_json()
    assert replay(dc, steps, target).ok
    for n, step in enumerate(steps):
        result = replay(dc, steps[:n] + steps[n + 1 :], target)
        if step["op"] == "power_off":
            assert result.ok  # a plan that leaves an empty PM on is still valid, only wasteful
        else:
            assert not result.ok, f"dropping step {n} ({step}) went unnoticed"


def test_swapping_create_and_migrate_breaks_the_plan() -> None:
    dc, plan, target = fig1c_plan()
    steps = plan.to_json()
    for n in range(len(steps) - 1):
        if steps[n]["op"] == "create_gi" and steps[n + 1]["op"] in ("migrate", "start"):
            swapped = [*steps[:n], steps[n + 1], steps[n], *steps[n + 2 :]]
            result = replay(dc, swapped, target)
            assert result.failed_step == n, result.reason


def test_replay_accepts_step_records_and_does_not_mutate_inputs() -> None:
    dc, plan, target = fig1c_plan()
    placement, pending = dict(dc.placement), dict(dc.pending)
    result = replay_plan(dc.pms, dc.vms, dc.placement, dc.pending, plan.steps, target=target)
    assert result.ok
    assert dc.placement == placement and dc.pending == pending


def test_replay_does_not_import_the_executor_or_mig() -> None:
    tree = ast.parse(inspect.getsource(origamig.judge.replay))
    names = {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
    names |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not {n for n in names if n.endswith(("executor", "mig"))}
