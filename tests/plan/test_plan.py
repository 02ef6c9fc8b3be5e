"""Plan records (docs/formats.md#plan JSON), cost arithmetic, the rich table and the dry-run shell script."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from origamig.cluster.datacenter import DataCenter
from origamig.plan.executor import Plan, plan_migrations
from origamig.plan.render import plan_table, render_shell
from origamig.plan.steps import (
    CreateGi,
    DestroyGi,
    Migrate,
    MoveRecord,
    PlanCost,
    PowerOff,
    PowerOn,
    Start,
    cost_of,
    move_bytes,
    transfer_seconds,
)
from tests.builders import A100, at, datacenter, pm, vm

SH = shutil.which("sh")


def test_steps_render_exactly_as_spec_section_8() -> None:
    # The six example lines of docs/formats.md#plan, written out by hand.
    steps = [
        PowerOn("pm3"),
        CreateGi("vm1", 0, "pm3", 1, 0),
        Migrate("vm1", "pm0", "pm3"),
        Start("vm2", "pm3"),
        DestroyGi("vm1", 0, "pm0", 0, 4),
        PowerOff("pm0"),
    ]
    assert [s.to_dict() for s in steps] == [
        {"op": "power_on", "pm": "pm3"},
        {"op": "create_gi", "vm": "vm1", "gi": 0, "pm": "pm3", "gpu": 1, "start": 0},
        {"op": "migrate", "vm": "vm1", "from": "pm0", "to": "pm3"},
        {"op": "start", "vm": "vm2", "pm": "pm3"},
        {"op": "destroy_gi", "vm": "vm1", "gi": 0, "pm": "pm0", "gpu": 0, "start": 4},
        {"op": "power_off", "pm": "pm0"},
    ]
    assert Migrate("v", "a", "a", parking=True).to_dict() == {
        "op": "migrate",
        "vm": "v",
        "from": "a",
        "to": "a",
        "parking": True,
    }


def test_move_bytes_and_transfer_time() -> None:
    # 12 cores, 48 GB RAM and one 3g.20gb (20 GB): 68e9 bytes; at 12.5 Gbit/s that is 68e9·8/12.5e9 s.
    v = vm("v", ["3g.20gb"], cpu=12, ram_gb=48)
    assert move_bytes(v) == 68 * 10**9
    assert transfer_seconds(68 * 10**9, 12.5) == pytest.approx(43.52)
    assert move_bytes(vm("bare", cpu=2, ram_gb=3)) == 3 * 10**9


def test_cost_counts_parking_apart_from_migrations() -> None:
    moves = [
        MoveRecord("a", "pm0", "pm1", True, 10, 1.0),
        MoveRecord("b", "pm0", "pm0", False, 0, 0.0),
        MoveRecord("a", "pm1", "pm0", False, 10, 1.0),
        MoveRecord("c", None, "pm0", False, 0, 0.0),
        MoveRecord("d", "pm1", "pm1", True, 0, 0.0),
    ]
    steps = [PowerOn("pm1"), PowerOff("pm1")]
    c = cost_of(moves, steps, 12.5)
    # b (pm0→pm0) and a's return (pm1→pm0) go to the target; a's first move and d's are parking.
    assert (c.migrations_intra, c.migrations_inter, c.migrations) == (1, 1, 2)
    assert (c.parking_intra, c.parking_inter, c.parking, c.starts) == (1, 1, 2, 1)
    assert c.live_migrations == 4
    assert (c.bytes_copied, c.bytes, c.duration_s, c.pms_on, c.pms_off) == (20, 20, 2.0, 1, 1)
    assert c.parking_penalty(10) == 30  # δ + 2δ (docs/policies.md#decision)
    assert set(c.to_dict()) >= {"migrations_intra", "parking_inter", "bytes_copied", "duration_s"}
    assert "2 migrations" in c.describe() and "2 parking" in c.describe()
    assert "1 start," in c.describe() and "1 PM on" in c.describe()  # singular for one
    one = PlanCost(migrations_inter=1, starts=2, pms_on=0).describe()
    assert one.startswith("1 migration (") and "2 starts," in one and "0 PMs on" in one
    assert PlanCost().migrations == 0


def test_counted_nouns_are_singular_for_one_only() -> None:
    from origamig.wording import count

    assert (count(0, "call"), count(1, "call"), count(2, "call")) == ("0 calls", "1 call", "2 calls")


def swap_plan() -> tuple[DataCenter, Plan]:
    # a (3g.20gb@0 on pm0) and b (3g.20gb@4) trade places; pm1 (off) takes a while b moves.
    a, b = vm("a", ["3g.20gb"]), vm("b", ["3g.20gb"])
    dc = datacenter([pm("pm0", [A100]), pm("pm1", [A100])], [(a, at(0, (0, 0))), (b, at(0, (0, 4)))])
    plan = plan_migrations(dc, {"a": at(0, (0, 4)), "b": at(0, (0, 0))})
    assert isinstance(plan, Plan)
    return dc, plan


def test_table_lists_every_step_and_the_cost() -> None:
    _, plan = swap_plan()
    console = Console(record=True, width=140)
    console.print(plan_table(plan))
    text = console.export_text()
    for n, step in enumerate(plan.steps):
        assert any(line.split("│")[1].strip() == str(n) for line in text.splitlines() if line.count("│") > 2)
        assert step.op in text
    assert "parking" in text and "pm0 → pm1" in text
    assert plan.cost.describe().split(",")[0] in text


def test_shell_script_is_valid_sh_and_lists_the_real_operations() -> None:
    dc, plan = swap_plan()
    script = render_shell(plan.steps, dc)
    assert "secondary sources" in script and "PLACEHOLDER" in script
    assert "on pm1 nvidia-smi mig -i 0 -cgi 9:0" in script  # 3g.20gb is profile id 9 on the A100
    assert script.count(" -dgi") == sum(1 for s in plan.steps if s.op == "destroy_gi")
    lines = script.splitlines()
    migrates = [s for s in plan.steps if isinstance(s, Migrate)]
    assert sum(1 for ln in lines if ln.startswith("live_migrate ")) == sum(1 for m in migrates if m.inter_pm)
    assert sum(1 for ln in lines if ln.startswith("local_move ")) == sum(
        1 for m in migrates if not m.inter_pm
    )


def test_a_move_inside_a_host_is_create_local_move_destroy_never_a_live_migration_to_itself() -> None:
    v = vm("v", ["1g.5gb"])
    dc = datacenter([pm("a100-02", [A100])], [(v, at(0, (0, 0)))])
    plan = plan_migrations(dc, {"v": at(0, (0, 3))})
    assert isinstance(plan, Plan)
    ops = [ln.split()[0] for ln in render_shell(plan.steps, dc).split("# step 0")[1].splitlines()[1:]]
    commands = [op for op in ops if op in ("on", "local_move", "live_migrate")]
    assert commands == ["on", "local_move", "on", "on"]  # -cgi, the local move, -dci and -dgi
    script = render_shell(plan.steps, dc)
    assert "--from a100-02 --to a100-02" not in script
    # No step switches MIG mode or resets a GPU: GIs are created and destroyed on a GPU in MIG mode.
    assert " -mig " not in script and "--gpu-reset" not in script and " -r " not in script
    assert plan.cost.local_bytes_copied == 5 * 10**9 and plan.cost.bytes_copied == 0


@pytest.mark.skipif(SH is None, reason="needs a POSIX sh")
def test_shell_script_dry_run_prints_and_execute_mode_resolves_gi_ids(tmp_path: Path) -> None:
    dc, plan = swap_plan()
    script = tmp_path / "plan.sh"
    script.write_text(render_shell(plan.steps, dc))
    log = tmp_path / "calls.log"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    # Fake ssh: logs its arguments; `nvidia-smi mig -lgi` answers with a table in nvidia-smi's layout,
    # where the 3g.20gb at start 0 has GI id 1 and the one at start 4 has GI id 2.
    lgi = (
        "| GPU   Name             Profile  Instance   Placement  |\\n"
        "|   0  MIG 3g.20gb          9        1          0:4     |\\n"
        "|   0  MIG 3g.20gb          9        2          4:4     |\\n"
    )
    fake = f'#!/bin/sh\necho "$@" >> {log}\ncase "$*" in *"-lgi"*) printf "{lgi}";; esac\n'
    for name in ("ssh", "hypervisor-live-migrate", "hypervisor-start-vm", "bmc-power"):
        (bindir / name).write_text(fake)
        (bindir / name).chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}

    dry = subprocess.run([SH, str(script)], env=env, capture_output=True, text=True, check=True)
    assert not log.exists(), "dry run executed something"
    assert "+ ssh pm1 nvidia-smi mig -i 0 -cgi 9:0" in dry.stdout
    assert dry.stdout.strip().endswith("plan complete")

    env["ORIGAMIG_EXECUTE"] = "1"
    subprocess.run([SH, str(script)], env=env, capture_output=True, text=True, check=True)
    calls = log.read_text().splitlines()
    # a parks first: its old GI (start 0, id 1 in the fake table) is destroyed by id.
    assert "pm0 nvidia-smi mig -i 0 -gi 1 -dgi" in calls
    assert any(c.startswith("--vm a --from pm0 --to pm1") for c in calls)
