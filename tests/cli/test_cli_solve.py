"""`origamig solve` end to end: both solvers agree, the answer passes the checker and the replay,
re-solving its own `--out` changes nothing, JSON matches the shipped schema, errors exit 2."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from origamig.bilp import Limits
from origamig.call.solve import solve_snapshot
from origamig.cli.app import app
from origamig.cluster.records import GiSlot, Placement
from origamig.judge.check import check_placement
from origamig.judge.replay import replay_plan
from origamig.snapshot.document import Snapshot, load_snapshot, parse_snapshot, schema_path
from tests.cli_helpers import run_main
from tests.paths import ROOT
from tests.solve_schema import solve_document_validator

EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
FAST = ["--time-limit", "5", "--threads", "1"]
runner = CliRunner()


def solve_json(path: Path, *args: str, code: int = 0) -> dict:
    result = runner.invoke(app, ["solve", str(path), "--json", *FAST, *args])
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)


@functools.cache
def solved(name: str, solver: str) -> dict:
    """The example solved whole by `solver` under its deterministic budget: a proof that does not
    depend on how busy the machine is (a wall-clock limit fails on a loaded one)."""
    path = next(p for p in EXAMPLES if p.stem == name)
    result = runner.invoke(
        app, ["solve", str(path), "--json", "--deterministic", "--solver", solver, "--neighborhood", "all"]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_highs_and_cpsat_agree_on_the_optimum(path: Path) -> None:
    highs, cpsat = solved(path.stem, "highs"), solved(path.stem, "cpsat")
    assert highs["solver"]["proved_optimal"] and cpsat["solver"]["proved_optimal"]
    # The first call solves the same model for both. A later call starts from the first one's answer,
    # which may be another of equal optima, so the end states may differ (each proved optimal).
    first_highs, first_cpsat = (
        d["calls"][0]["solver"] if d["calls"] else d["solver"] for d in (highs, cpsat)
    )
    assert first_highs["objective"] == pytest.approx(first_cpsat["objective"])
    if len(highs["calls"]) <= 1 and len(cpsat["calls"]) <= 1:
        assert highs["objective"]["proposed"] == pytest.approx(cpsat["objective"]["proposed"])
    assert highs["status"] == cpsat["status"] == "improved"
    assert highs["objective"]["after"] > highs["objective"]["before"]


def placement_of(doc: dict, snap: Snapshot) -> dict[str, Placement]:
    """The `"placement"` object of a solve document as records."""
    index = {pm.id: j for j, pm in enumerate(snap.pms)}
    return {
        v: Placement(index[pl["pm"]], tuple(GiSlot(s["gpu"], s["start"]) for s in pl["gis"]))
        for v, pl in doc["placement"].items()
    }


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_answer_passes_the_checker_and_the_replay(path: Path, solver: str) -> None:
    doc = solved(path.stem, solver)
    solve_document_validator().validate(doc)
    snap = load_snapshot(path)
    final = placement_of(doc, snap)
    powered = [replace(pm, powered_off=False) for pm in snap.pms]  # a PM the plan uses is switched on
    assert check_placement(powered, snap.vms, final) == []
    assert set(doc["admitted"]) == {v for v in snap.pending if v in final}
    assert set(doc["admitted"]) | set(doc["rejected"]) == set(snap.pending)
    assert all(
        final[v] == pl for v, pl in snap.placement.items() if v not in {s.get("vm") for s in doc["plan"]}
    )
    running = {v: snap.vms[v] for v in snap.placement}
    pending = {v: snap.vms[v] for v in snap.pending}
    result = replay_plan(snap.pms, running, snap.placement, pending, doc["plan"], target=final)
    assert result.ok, result.reason
    assert dict(result.final_placement) == final


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_solving_its_own_out_changes_nothing(path: Path, tmp_path: Path) -> None:
    out = tmp_path / "next.json"
    first = solve_json(path, "--neighborhood", "all", "--out", str(out))
    assert first["status"] == "improved"
    written = load_snapshot(out)
    assert check_placement(written.pms, written.vms, written.placement) == []
    jsonschema.validate(json.loads(out.read_text()), json.loads(schema_path("snapshot").read_text()))
    second = solve_json(out, "--neighborhood", "all", "--out", str(tmp_path / "again.json"))
    assert second["status"] == "unchanged" and second["plan"] == []
    assert second["objective"]["after"] == second["objective"]["before"]
    assert json.loads((tmp_path / "again.json").read_text()) == json.loads(out.read_text())


def test_fig1c_parks_the_3g_vm_on_the_powered_off_pm_and_switches_it_off_again(tmp_path: Path) -> None:
    # Paper Fig. 1(c): moving 3g.20gb 0→4 and the 1g.5gb 4,5,6→0,1,2 block each other; the plan parks
    # the 3g.20gb VM on pm1 (inter-PM parking: 2δ = 20), admits the fourth 1g.5gb, and powers pm1 off.
    path = next(p for p in EXAMPLES if p.stem == "fig1c-compaction")
    out = tmp_path / "o.json"
    doc = solve_json(path, "--neighborhood", "all", "--goal", "paper", "--out", str(out))
    ops = [(s["op"], s.get("pm"), bool(s.get("parking"))) for s in doc["plan"]]
    assert ops[0] == ("power_on", "pm1", False) and ops[-1] == ("power_off", "pm1", False)
    assert any(s["op"] == "migrate" and s["vm"] == "vmA" and s.get("parking") for s in doc["plan"])
    assert doc["objective"]["parking_cost"] == 20
    # Hand-derived: before 400 − 70 + 0 = 330; after 500 − 70 − 40 (4 VMs moved inside pm0) + 0 = 390.
    assert (doc["objective"]["before"], doc["objective"]["after"]) == (330, 390)
    assert doc["admitted"] == ["vmP"]
    assert json.loads(out.read_text())["pms"][1]["powered_off"] is True


def test_status_unchanged_keeps_the_input_state(tmp_path: Path) -> None:
    # With a_i = 0 admitting vmP gains nothing and the needed move costs δ = 10: nothing is better.
    path = next(p for p in EXAMPLES if p.stem == "fig1a-noncontiguous")
    out = tmp_path / "o.json"
    doc = solve_json(path, "--neighborhood", "all", "--goal", "paper", "--accept", "0", "--out", str(out))
    assert doc["status"] == "unchanged" and doc["plan"] == [] and doc["admitted"] == []
    assert doc["rejected"] == ["vmP"]
    assert doc["rejected_reasons"]["vmP"] == (
        "no A100-40GB GPU on a server with 8 cores and 32 GB free has a free start for 2g.10gb; making room "
        "by moving VMs costs more than admitting it is worth (0) under these weights; the default goal "
        "(balanced) admits whatever fits"
    )
    assert load_snapshot(out).placement == load_snapshot(path).placement


def test_text_output_reports_status_neighborhood_objective_solver_and_plan() -> None:
    path = next(p for p in EXAMPLES if p.stem == "fragmented-a100")
    result = runner.invoke(app, ["solve", str(path), *FAST])
    assert result.exit_code == 0, result.output
    for needle in (
        "status: improved",
        "admitted: vm5",
        "servers on",
        "GPUs in use",
        "packing",
        "free placements (CF, every GPU)",
        "objective (Eq. 5)",
        "admitted VMs",
        "servers and GPUs on",
        "moves",
        "free placements",
        "solver: highs",
        "gap",
        "migration plan",
        "create_gi",
        "start",
    ):
        assert needle in result.stdout, needle


def test_auto_neighborhood_admits_the_pending_vm() -> None:
    doc = solve_json(next(p for p in EXAMPLES if p.stem == "fragmented-a100"), "--neighborhood", "auto")
    assert doc["status"] == "improved" and doc["admitted"] == ["vm5"]
    assert doc["neighborhood"]["mode"] == "auto" and doc["neighborhood"]["pending"] == ["vm5"]


def test_bad_input_exits_2_with_error_lines_and_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps({"version": 1, "pms": [{"id": "pm0", "cpu": -1, "ram_gb": 1, "gpus": ["X"]}], "vms": []})
    )
    out = tmp_path / "out.json"
    code, stdout, stderr = run_main(["solve", str(bad), "--out", str(out)])
    assert code == 2 and not out.exists() and stdout == ""
    assert stderr.splitlines() == [
        "error: pms[0].cpu: -1 is negative",
        'error: pms[0].gpus[0]: unknown GPU model "X" (known: A100-40GB, A100-80GB, A30-24GB, H100-80GB, '
        "H100-94GB, H200-141GB)",
    ]
    code, _, stderr = run_main(["solve", str(EXAMPLES[0]), "--neighborhood", "pm0,pmX"])
    assert code == 2 and stderr.startswith("error: --neighborhood: 'pmX' is not a PM id")
    code, _, stderr = run_main(["solve", str(EXAMPLES[0]), "--migration", "-1"])
    assert (code, stderr) == (2, "error: --migration: -1 is negative\n")
    code, _, stderr = run_main(["solve", str(EXAMPLES[0]), "--solver", "gurobi"])
    assert code == 2 and "gurobi" in stderr


def test_installed_console_script_runs_solve(tmp_path: Path) -> None:
    exe = shutil.which("origamig")
    if exe is None:
        pytest.skip("the origamig console script is not installed (pip install -e .)")
    path = next(p for p in EXAMPLES if p.stem == "fig1b-start-slice")
    proc = subprocess.run(
        [
            exe,
            "solve",
            str(path),
            "--json",
            "--neighborhood",
            "all",
            *FAST,
            "--out",
            str(tmp_path / "o.json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)  # stdout is pure JSON: solver banners go to stderr
    assert doc["status"] == "improved" and doc["admitted"] == ["vmP"]
    # Hand-derived (Fig. 1(b)): vmC 1g.10gb moves 6 → 2 (δ = 10), vmP 3g.20gb starts at 4.
    assert doc["placement"]["vmC"] == {"pm": "pm0", "gis": [{"gpu": 0, "start": 2}]}
    assert doc["placement"]["vmP"] == {"pm": "pm0", "gis": [{"gpu": 0, "start": 4}]}


def test_plan_infeasible_when_the_blocked_cycle_has_nowhere_to_park(tmp_path: Path) -> None:
    # Fig. 1(c) without pm1: the solver's compaction (+100 − 4·δ) needs the 3g.20gb VM parked, and
    # the only GPU is full, so no always-valid order exists: nothing runs, the state stays.
    d = json.loads(next(p for p in EXAMPLES if p.stem == "fig1c-compaction").read_text())
    d["pms"] = d["pms"][:1]
    src, out = tmp_path / "one-gpu.json", tmp_path / "out.json"
    src.write_text(json.dumps(d))
    doc = solve_json(src, "--neighborhood", "all", "--no-good-cuts", "0", "--out", str(out), code=5)
    assert doc["status"] == "plan_infeasible" and "no parking place" in doc["plan_infeasible_reason"]
    # The proved optimum admits vmP, only its plan cannot run: vmP waits, it is not rejected.
    assert doc["plan"] == [] and doc["admitted"] == [] and doc["rejected"] == []
    assert doc["waiting"] == ["vmP"] and "no valid migration order" in doc["waiting_reasons"]["vmP"]
    assert (doc["objective"]["before"], doc["objective"]["proposed"], doc["objective"]["after"]) == (
        330,
        390,
        330,
    )
    assert json.loads(out.read_text()) == d


def test_a_target_without_a_valid_order_is_excluded_and_solved_again(tmp_path: Path) -> None:
    # The same snapshot with the default no-good cuts: the unreachable optimum is excluded, and the
    # next best (keep everything: the only other way to admit vmP needs the same impossible moves)
    # is proved optimal, so vmP is rejected with that reason and the exit code is 0.
    d = json.loads(next(p for p in EXAMPLES if p.stem == "fig1c-compaction").read_text())
    d["pms"] = d["pms"][:1]
    src = tmp_path / "one-gpu.json"
    src.write_text(json.dumps(d))
    doc = solve_json(src, "--neighborhood", "all")
    assert doc["status"] == "unchanged" and "excluded first" in doc["status_reason"]
    assert doc["rejected"] == ["vmP"] and "no valid order" in doc["rejected_reasons"]["vmP"]
    assert doc["plan"] == [] and doc["objective"]["after"] == doc["objective"]["before"] == 330


def test_solve_snapshot_does_not_mutate_the_snapshot() -> None:
    from origamig.bilp import Limits
    from origamig.call.solve import solve_snapshot

    path = next(p for p in EXAMPLES if p.stem == "mixed-a100-a30")
    snap = load_snapshot(path)
    before = (dict(snap.placement), json.dumps(snap.document, sort_keys=True), dict(snap.vms))
    outcome = solve_snapshot(
        snap, solver="highs", limits=Limits(time_limit_s=5, threads=1), neighborhood="all"
    )
    assert outcome.status == "improved"
    assert (dict(snap.placement), json.dumps(snap.document, sort_keys=True), dict(snap.vms)) == before


def test_a_snapshot_with_nothing_to_do_is_a_valid_document(tmp_path: Path) -> None:
    """No pending VM and nothing worth consolidating: no solver runs, and the document still matches
    the schema (the solver's name is null then)."""
    idle = {"version": 1, "pms": [{"id": "pm0", "cpu": 80, "ram_gb": 512, "gpus": ["A100-40GB"]}], "vms": []}
    path = tmp_path / "idle.json"
    path.write_text(json.dumps(idle))
    doc = solve_json(path)
    assert doc["status"] == "unchanged" and doc["plan"] == []
    assert doc["solver"]["name"] is None and doc["solver"]["termination"] == "not_run"
    assert doc["status_reason"] == (
        "nothing to optimize: no pending VM that fits and no class with Γ_h ≥ 1 worth a call"
    )
    solve_document_validator().validate(doc)


def test_bandwidth_goal_and_calls_options_reach_the_solve() -> None:
    cluster = ROOT / "examples" / "fleets" / "h100-cluster.json"
    slow = solve_json(cluster, "--deterministic", "--goal", "paper")  # it moves VMs to free servers
    fast = solve_json(cluster, "--deterministic", "--goal", "paper", "--bandwidth", "25")
    assert slow["plan"] == fast["plan"] and fast["plan_cost"]["bandwidth_gbit_s"] == 25
    copied = slow["plan_cost"]["bytes_copied"] + slow["plan_cost"]["local_bytes_copied"]
    assert copied > 0
    # total_s = copies at the bandwidth + GI operations; doubling the bandwidth halves the copy part.
    copy_s = slow["plan_cost"]["total_s"] - slow["plan_cost"]["gi_operations_s"]
    assert copy_s == pytest.approx(copied * 8 / 12.5e9)
    assert fast["plan_cost"]["total_s"] - fast["plan_cost"]["gi_operations_s"] == pytest.approx(copy_s / 2)
    admit = solve_json(cluster, "--deterministic", "--goal", "admit")
    assert admit["admitted"] == ["new-0", "new-1"] and admit["plan_cost"]["migrations_intra"] == 0
    assert admit["plan_cost"]["migrations_inter"] == 0
    one = solve_json(cluster, "--deterministic", "--calls", "1")
    assert one["admitted"] == ["new-0"] and one["waiting"] == ["new-1"] and len(one["calls"]) == 1


@pytest.mark.parametrize(
    "args", [["--calls", "0"], ["--bandwidth", "0"], ["--goal", "fastest"], ["--no-good-cuts", "-1"]]
)
def test_bad_solve_options_are_one_usage_error(args: list[str]) -> None:
    path = next(p for p in EXAMPLES if p.stem == "fragmented-a100")
    result = runner.invoke(app, ["solve", str(path), *args])
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_destinations_that_would_collide_or_cannot_be_written_are_refused_before_the_solve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import origamig.call.solve as solve_module

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the solve ran")

    monkeypatch.setattr(solve_module, "solve_snapshot", never)
    snap = tmp_path / "snap.json"
    snap.write_text(EXAMPLES[0].read_text())
    same = tmp_path / "x.json"
    code, stdout, stderr = run_main(["solve", str(snap), "--out", str(same), "--script", str(same)])
    assert (code, stdout) == (2, "") and not same.exists()
    assert stderr == f"error: --script: {same} is also the --out file; give each its own file\n"
    code, _, stderr = run_main(["solve", str(snap), "--script", str(snap)])
    assert code == 2 and "--script" in stderr and "the snapshot being solved" in stderr
    assert snap.read_text() == EXAMPLES[0].read_text()
    missing = tmp_path / "no-such-folder" / "out.json"
    code, _, stderr = run_main(["solve", str(snap), "--out", str(missing)])
    assert (code, stderr) == (2, f"error: --out: {missing}: no folder {missing.parent}\n")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):  # root writes anywhere: nothing to refuse
            return
        code, _, stderr = run_main(["solve", str(snap), "--out", str(locked / "out.json")])
        assert code == 2 and "cannot write in the folder" in stderr
    finally:
        locked.chmod(0o700)


def test_a_vm_of_eight_gis_lists_and_creates_them_in_gpu_order() -> None:
    eight = {
        "version": 1,
        "pms": [{"id": "h0", "cpu": 192, "ram_gb": 2048, "gpus": ["H100-80GB"] * 8}],
        "vms": [{"id": "big", "cpu": 168, "ram_gb": 1792, "gis": ["7g.80gb"] * 8}],
    }
    outcome = solve_snapshot(parse_snapshot(eight), limits=Limits(time_limit_s=10))
    assert [s.gpu for s in outcome.placement["big"].gis] == list(range(8))
    assert outcome.plan is not None
    created = [s.to_dict()["gpu"] for s in outcome.plan.steps if s.to_dict()["op"] == "create_gi"]
    assert created == list(range(8))


def test_every_status_has_its_documented_exit_code() -> None:
    import re

    from origamig.call.decision import Status
    from origamig.cli.solve_report import exit_code

    codes = {str(status): exit_code(status) for status in Status}  # a status without a code raises
    table = (ROOT / "docs" / "cli.md").read_text()
    documented = {m[1]: int(m[2]) for m in re.finditer(r"^\| `(\w+)` \|.*\| (\d) \|$", table, re.M)}
    assert codes == documented  # docs/cli.md's table of statuses is the exit-code contract
