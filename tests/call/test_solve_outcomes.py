"""`solve` says what happened: a solver that stopped at its limit or failed is never reported as an
answer, a pending VM is rejected only when that is certain (and says why), exit codes tell them
apart, and the plan explains each move; `--script` writes the dry-run shell script."""

from __future__ import annotations

import copy
import json
import os
import stat
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import origamig.call.successive as successive
from origamig.bilp import Limits
from origamig.bilp.backends.base import SOLUTION_FEASIBLE
from origamig.call.decision import Status
from origamig.call.solve import solve_snapshot
from origamig.judge.replay import replay_plan
from origamig.plan.render import render_shell
from origamig.snapshot.document import load_snapshot, parse_snapshot
from tests.cli_helpers import run_main
from tests.helper_faults import solve_in_this_process
from tests.paths import ROOT
from tests.solve_schema import solve_document_validator

EXAMPLES = ROOT / "examples"
FIG1C = EXAMPLES / "fig1c-compaction.json"


def solve(path: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = run_main(["solve", str(path), "--json", *args])
    doc = json.loads(out)
    solve_document_validator().validate(doc)
    return code, doc, err


def write(tmp_path: Path, doc: dict[str, Any], name: str = "s.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


# --- a solver that stopped is not an answer ---------------------------------------------------------
@pytest.fixture
def timed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """HiGHS stops at its time limit with nothing better than its start, however fast the machine is
    (a real `--time-limit 0` may or may not find an improvement first)."""
    from origamig.bilp.backends import base, highs

    def stop(self: Any, compiled: Any, hint: Any, limits: Limits) -> base.SolveResult:
        return base.SolveResult(
            solver="highs",
            termination=base.TIME_LIMIT,
            solution_status=base.SOLUTION_FEASIBLE,
            objective=compiled.objective_of(hint),
            bound=compiled.trivial_bound(),
            wall_s=limits.time_limit_s or 0.0,
            x=hint.copy(),
        )

    monkeypatch.setattr(highs.HighsBackend, "solve_in_process", stop)
    solve_in_this_process(monkeypatch)


@pytest.mark.usefixtures("timed_out")
def test_a_time_out_is_stopped_at_limit_exit_3_and_the_pending_vm_waits(tmp_path: Path) -> None:
    # Before: `unchanged: nothing strictly better was found`, exit 0, and vmP "rejected".
    out = tmp_path / "out.json"
    code, doc, _ = solve(
        FIG1C, "--neighborhood", "all", "--time-limit", "0", "--out", str(out), "--no-primal"
    )
    assert code == 3 and doc["status"] == "stopped_at_limit"
    assert doc["solver"]["stopped_at_limit"] and not doc["solver"]["proved_optimal"]
    assert "without proving optimality (gap" in doc["status_reason"]
    assert doc["rejected"] == [] and doc["waiting"] == ["vmP"] and doc["plan"] == []
    assert "not proved optimal" in doc["waiting_reasons"]["vmP"]
    assert load_snapshot(out).placement == load_snapshot(FIG1C).placement  # the state stays


@pytest.mark.usefixtures("timed_out")
def test_the_text_status_line_says_it_stopped(tmp_path: Path) -> None:
    code, out, _ = run_main(
        ["solve", str(FIG1C), "--neighborhood", "all", "--time-limit", "0", "--no-primal"]
    )
    assert code == 3
    status = next(line for line in out.splitlines() if line.startswith("status:"))
    assert status.startswith("status: stopped_at_limit: objective 330 → 330")
    assert "; the solver stopped at its time limit" in status
    assert "unchanged" not in out and "waiting: vmP" in out


@pytest.mark.usefixtures("timed_out")
def test_the_fast_primal_answer_admits_what_a_stopped_solver_could_not(tmp_path: Path) -> None:
    # The same solver, stopped at once with nothing but its start: the start is now the repair's
    # placement (docs/solving.md#fast-primal-answer), which admits vmP; the plan replays valid.
    out = tmp_path / "out.json"
    code, doc, _ = solve(FIG1C, "--neighborhood", "all", "--time-limit", "0", "--out", str(out))
    assert code == 0 and doc["status"] == "improved"
    assert doc["solver"]["stopped_at_limit"] and not doc["solver"]["proved_optimal"]
    assert doc["admitted"] == ["vmP"] and doc["waiting"] == [] and doc["plan"]
    assert doc["objective"]["after"] > doc["objective"]["before"]
    snap = load_snapshot(FIG1C)
    running = {v: snap.vms[v] for v in snap.placement}
    pending = {v: snap.vms[v] for v in snap.pending}
    replayed = replay_plan(snap.pms, running, snap.placement, pending, doc["plan"])
    assert replayed.ok, replayed.reason
    assert dict(replayed.final_placement) == load_snapshot(out).placement


def test_cpsat_stopping_at_its_work_limit_is_stopped_at_limit_with_the_gap() -> None:
    snap = load_snapshot(EXAMPLES / "mixed-a100-a30.json")
    limits = Limits(time_limit_s=None, deterministic=True, work_limit=1e-4, threads=1)
    outcome = solve_snapshot(snap, solver="cpsat", limits=limits, neighborhood="all")
    res = outcome.solution.result
    assert not res.proved_optimal and res.gap is not None and res.gap > 0
    assert outcome.status is Status.STOPPED_AT_LIMIT
    assert f"gap {100 * res.gap:.2f}%" in outcome.note
    assert not outcome.rejected or all("fits no PM" in outcome.reasons[v] for v in outcome.rejected)


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
def test_a_solver_error_is_solver_error_exit_4_with_its_reason(monkeypatch, solver: str) -> None:
    from origamig.bilp.backends.base import get_backend

    def fails(*args: Any, **kwargs: Any) -> Any:
        raise OverflowError("a value the solver cannot represent")

    monkeypatch.setattr(type(get_backend(solver)), "solve_in_process", fails)
    solve_in_this_process(monkeypatch)
    code, out, _ = solve(FIG1C, "--neighborhood", "all", "--solver", solver)
    assert code == 4 and out["status"] == "solver_error"
    assert out["solver"]["termination"] == "error"
    assert "OverflowError: a value the solver cannot represent" in out["solver"]["reason"]
    assert out["status_reason"] == (
        "admitted 0 of 1 pending; the solver failed: OverflowError: a value the solver cannot represent; the "
        "state stays as it is"
    )
    assert out["waiting"] == ["vmP"] and out["rejected"] == [] and out["plan"] == []


def test_an_unproved_improvement_is_applied_but_says_so(monkeypatch) -> None:
    real = successive.decide

    def unproved(*args: Any, **kwargs: Any) -> Any:
        d = real(*args, **kwargs)
        res = replace(d.solution.result, solution_status=SOLUTION_FEASIBLE, termination="time_limit")
        return replace(d, solution=replace(d.solution, result=res))

    monkeypatch.setattr(successive, "decide", unproved)
    doc = json.loads((EXAMPLES / "fragmented-a100.json").read_text())
    doc["vms"].append({"id": "huge", "cpu": 500, "ram_gb": 1, "gis": ["1g.5gb"]})
    # `later` fits an empty PM, but the (really optimal) solution of the paper's goal does not admit it.
    doc["vms"].append({"id": "later", "cpu": 80, "ram_gb": 512, "gis": ["7g.40gb"]})
    snap = parse_snapshot(doc)
    outcome = solve_snapshot(snap, limits=Limits(time_limit_s=5), neighborhood="all", goal="paper")
    assert outcome.status is Status.IMPROVED and "not proved optimal" in outcome.note
    assert outcome.admitted == ("vm5",)
    assert outcome.rejected == ("huge",)  # certain: no PM has 500 cores
    assert outcome.waiting == ("later",)  # not certain: the solution is not proved optimal
    assert "not proved optimal" in outcome.reasons["later"]


# --- every rejection carries its reason -------------------------------------------------------------
def cluster_with_impossible_vms() -> dict[str, Any]:
    doc = json.loads((EXAMPLES / "fragmented-a100.json").read_text())
    doc = copy.deepcopy(doc)
    doc["vms"] += [
        {"id": "huge", "cpu": 500, "ram_gb": 16, "gis": ["1g.5gb"]},
        {"id": "threeseven", "cpu": 4, "ram_gb": 16, "gis": ["7g.40gb", "7g.40gb", "7g.40gb"]},
    ]
    return doc


@pytest.mark.parametrize("neighborhood", ["auto", "all"])
def test_a_vm_that_fits_no_pm_is_rejected_with_why(tmp_path: Path, neighborhood: str) -> None:
    # Before: the 500-core VM was "valid" for check and silently rejected by solve.
    code, doc, _ = solve(write(tmp_path, cluster_with_impossible_vms()), "--neighborhood", neighborhood)
    assert code == 0 and doc["status"] == "improved" and doc["admitted"] == ["vm5"]
    assert doc["rejected"] == ["huge", "threeseven"]
    assert doc["rejected_reasons"] == {
        "huge": "fits no PM even when empty: no PM has 500 cores (the largest has 80)",
        "threeseven": "fits no PM even when empty: no PM has A100-40GB GPUs that can hold 7g.40gb + 7g.40gb "
        "+ 7g.40gb at once",
    }
    assert set(doc["rejected_reasons"]) == set(doc["rejected"])
    assert set(doc["waiting_reasons"]) == set(doc["waiting"])


def test_the_text_output_gives_each_rejection_its_reason(tmp_path: Path) -> None:
    code, out, _ = run_main(["solve", str(write(tmp_path, cluster_with_impossible_vms()))])
    assert code == 0
    assert "rejected: huge — fits no PM even when empty: no PM has 500 cores (the largest has 80)" in out


# --- the plan explains itself -----------------------------------------------------------------------
def test_each_move_says_from_where_to_where_and_why() -> None:
    code, doc, _ = solve(FIG1C, "--neighborhood", "all", "--goal", "paper")  # the paper's compaction
    assert code == 0 and doc["status"] == "improved"
    steps = doc["plan"]
    moves = doc["moves"]
    assert [m["step"] for m in moves] == [i for i, s in enumerate(steps) if s["op"] in ("migrate", "start")]
    snap = json.loads(FIG1C.read_text())
    start = {v["id"]: v["placement"] for v in snap["vms"] if "placement" in v}
    seen: dict[str, Any] = {}
    for m in moves:  # each move starts where the VM was (the snapshot, or its previous move)
        assert m["from"] == seen.get(m["vm"], start.get(m["vm"]))
        seen[m["vm"]] = m["to"]
    assert seen == {v: doc["placement"][v] for v in seen}  # and the last move ends in the placement
    why = {(m["vm"], m["parking"]): m["why"] for m in moves}
    assert why[("vmA", True)] == "parking: steps aside for vmP, moved again later"  # vmP starts at 3
    assert why[("vmA", False)] == "switches off pm1"
    assert why[("vmP", False)] == "admits vmP"


def test_a_move_that_empties_a_gpu_says_which() -> None:
    code, doc, _ = solve(EXAMPLES / "mixed-a100-a30.json", "--neighborhood", "all")
    assert code == 0 and doc["status"] == "improved"
    whys = [m["why"] for m in doc["moves"]]
    assert any(w.startswith("switches off ") for w in whys), whys
    assert all(w for w in whys)


def test_the_plan_table_has_a_parking_header_and_the_reasons() -> None:
    code, out, _ = run_main(["solve", str(FIG1C), "--neighborhood", "all", "--goal", "paper"])
    assert code == 0
    header = next(line for line in out.splitlines() if "┃ op" in line)
    assert "parking" in header
    assert "why each move" in out and "pm0 gpu0@0" in out and "switches off pm1" in out


# --- --script -------------------------------------------------------------------------------------
def test_script_writes_the_dry_run_shell_script(tmp_path: Path) -> None:
    script = tmp_path / "plan.sh"
    old = os.umask(0o022)
    try:
        args = ["solve", str(FIG1C), "--neighborhood", "all", "--goal", "paper", "--script", str(script)]
        code, _, err = run_main(args)
    finally:
        os.umask(old)
    assert code == 0, err
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    text = script.read_text()
    assert text.startswith("#!/bin/sh\n# origamig solve: improved: admitted 1 of 1 pending; gain +40")
    assert "# vmA: pm1 gpu0@0 -> pm0 gpu0@4; why: switches off pm1" in text
    subprocess.run(["sh", "-n", str(script)], check=True)
    ran = subprocess.run(["sh", str(script)], capture_output=True, text=True, check=True)
    assert "+ bmc-power on --pm pm1" in ran.stdout and ran.stdout.rstrip().endswith("plan complete")


@pytest.mark.usefixtures("timed_out")
def test_script_of_a_run_that_changes_nothing_has_no_step(tmp_path: Path) -> None:
    script = tmp_path / "plan.sh"
    code, _, _ = run_main(
        [
            "solve",
            str(FIG1C),
            "--neighborhood",
            "all",
            "--time-limit",
            "0",
            "--no-primal",
            "--script",
            str(script),
        ]
    )
    assert code == 3
    text = script.read_text()
    assert "# origamig solve: stopped_at_limit:" in text and "# step" not in text


def test_ids_cannot_break_out_of_the_script(tmp_path: Path) -> None:
    marker = tmp_path / "owned"
    doc = json.loads(FIG1C.read_text())
    evil = f"vmP $(touch {marker}) `touch {marker}`; touch {marker} #'\""
    doc["vms"][4]["id"] = evil
    snap = parse_snapshot(doc)
    outcome = solve_snapshot(snap, limits=Limits(time_limit_s=5), neighborhood="all")
    assert evil in outcome.admitted
    script = tmp_path / "plan.sh"
    script.write_text(render_shell(outcome.plan.steps, snap.datacenter(), outcome.moves))
    ran = subprocess.run(["sh", str(script)], capture_output=True, text=True, check=True)
    assert ran.stdout.rstrip().endswith("plan complete") and not marker.exists()


def test_a_move_that_frees_cores_names_the_vm_that_needs_them(tmp_path: Path) -> None:
    # vmB's GI fits only p0's GPU (p1's is full), but p0 lacks the cores while vmA (no GI) runs there:
    # vmA moves to p1, which has the cores.
    full = {"pm": "p1", "gis": [{"gpu": 0, "start": 0}]}
    doc = {
        "version": 1,
        "pms": [
            {"id": "p0", "cpu": 16, "ram_gb": 128, "gpus": ["A100-80GB"]},
            {"id": "p1", "cpu": 32, "ram_gb": 128, "gpus": ["A100-80GB"]},
        ],
        "vms": [
            {"id": "vmA", "cpu": 12, "ram_gb": 32, "gis": [], "placement": {"pm": "p0", "gis": []}},
            {"id": "vmC", "cpu": 4, "ram_gb": 32, "gis": ["7g.80gb"], "placement": full},
            {"id": "vmB", "cpu": 8, "ram_gb": 32, "gis": ["1g.10gb"]},
        ],
    }
    code, out, _ = solve(write(tmp_path, doc))
    assert code == 0 and out["admitted"] == ["vmB"]
    why = {m["vm"]: m["why"] for m in out["moves"]}
    assert why == {"vmA": "admits vmB (makes room for it)", "vmB": "admits vmB"}
