"""`origamig check` (validation + summary) and `origamig check-plan` (independent replay)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from origamig.cli.app import app
from tests.cli_helpers import run_main
from tests.paths import ROOT

EXAMPLES = {p.stem: p for p in (ROOT / "examples").glob("*.json")}
runner = CliRunner()


def check_json(path: Path) -> dict:
    result = runner.invoke(app, ["check", str(path), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_summary_of_fig1c_is_derived_by_hand() -> None:
    s = check_json(EXAMPLES["fig1c-compaction"])
    # pm0: 3g.20gb@0 + 1g.5gb@4,5,6 → 7 of 8 slices, only slice 7 free, no profile starts at 7: CF 0.
    # pm1 (powered off): an empty A100, CF 18 (docs/model.md#domain).
    # Γ_100 = 1 active GPU − ⌈7/8⌉ = 0 (Eq. 17).
    assert (s["pms"], s["active_pms"], s["powered_off_pms"]) == (2, 1, 1)
    assert (s["running_vms"], s["pending_vms"]) == (4, 1)
    a100 = s["classes"]["100"]
    assert (a100["gpus"], a100["active_gpus"], a100["used_slices"], a100["slices"]) == (2, 1, 7, 16)
    assert (a100["cf"], a100["cf_active"], a100["gamma"]) == (18, 0, 0)
    assert a100["packing_density"] == 7 / 8
    assert s["cpu"] == {"total": 160, "used": 24}  # 3g: 12 cores + three 1g: 4 each
    # Eq. (5) of the current state: 4 VMs × 100 − (50 + 20) − 0 + CF 0 = 330.
    assert s["objective"]["value"] == 330


def test_summary_of_the_mixed_cluster_per_class() -> None:
    s = check_json(EXAMPLES["mixed-a100-a30"])
    assert set(s["classes"]) == {"100", "30"}
    # A30 GPUs: a30-0 (2), a30-1 (2), mixed-0 (1) = 5; slices used 1+1 | 2+1 | 1 = 6 of 20.
    a30 = s["classes"]["30"]
    assert (a30["gpus"], a30["active_gpus"], a30["used_slices"], a30["slices"]) == (5, 3, 6, 20)
    # Γ_30 = 3 active − ⌈6/4⌉ = 1: one A30 could be freed by consolidating.
    assert a30["gamma"] == 1


def test_text_summary_lists_the_classes() -> None:
    result = runner.invoke(app, ["check", str(EXAMPLES["mixed-a100-a30"])])
    assert result.exit_code == 0
    for needle in ("valid", "4 servers", "A100-40GB", "A30-24GB", "GPUs to free (Γ_h)", "objective 514 ="):
        assert needle in result.stdout


def test_check_reports_every_problem_and_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    d = json.loads(EXAMPLES["fig1a-noncontiguous"].read_text())
    d["vms"][0]["placement"]["gis"][0]["start"] = 4  # 1g.5gb at 4 collides with the 3g.20gb at 4
    d["vms"][3]["gis"] = ["2g.10gb", 5]
    bad.write_text(json.dumps(d))
    code, out, err = run_main(["check", str(bad)])
    assert code == 2 and out == ""
    assert err.splitlines() == [
        "error: vms[2].placement.gis[0]: 3g.20gb at start 4 on GPU 0 of pm0 overlaps vms[0].placement.gis[0] "
        "(1g.5gb at start 4)",
        "error: vms[3].gis[1]: expected a GI profile name, got 5 (a number)",
    ]


# --- check-plan --------------------------------------------------------------------------------
def _solve(path: Path, tmp_path: Path) -> Path:
    # The paper's goal: Fig. 1(c)'s compaction (the default goal starts the VM on the empty PM instead)
    args = ["solve", str(path), "--json", "--neighborhood", "all", "--time-limit", "5", "--goal", "paper"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    out = tmp_path / "solve.json"
    out.write_text(result.stdout)
    return out


def test_check_plan_accepts_solve_output_and_bare_lists(tmp_path: Path) -> None:
    snap = EXAMPLES["fig1c-compaction"]
    doc_path = _solve(snap, tmp_path)
    code, out, err = run_main(["check-plan", str(snap), str(doc_path)])
    assert (code, err) == (0, "") and out.startswith("ok: 19 steps replayed") and "placement" in out
    bare = tmp_path / "plan.json"
    bare.write_text(json.dumps(json.loads(doc_path.read_text())["plan"]))
    result = runner.invoke(app, ["check-plan", str(snap), str(bare), "--json"])
    assert result.exit_code == 0
    report = json.loads(result.stdout)
    assert (
        report["ok"]
        and report["steps"] == report["steps_run"] == 19
        and not report["checked_against_placement"]
    )


def test_check_plan_reports_the_first_broken_step(tmp_path: Path) -> None:
    snap = EXAMPLES["fig1c-compaction"]
    plan = json.loads(_solve(snap, tmp_path).read_text())["plan"]
    # Without parking first, moving vmB to slice 0 collides with vmA's 3g.20gb at 0–3.
    no_parking = [s for s in plan if not s.get("parking") and s["op"] != "power_on"]
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(no_parking))
    code, out, _ = run_main(["check-plan", str(snap), str(broken)])
    assert code == 1
    assert out.startswith("invalid: step 0 (create_gi vm=vmB gi=0 pm=pm0 gpu=0 start=0):")
    result = runner.invoke(app, ["check-plan", str(snap), str(broken), "--json"])
    assert result.exit_code == 1 and json.loads(result.stdout)["failed_step"] == 0


def test_check_plan_final_state_must_match_the_documents_placement(tmp_path: Path) -> None:
    snap = EXAMPLES["fig1b-start-slice"]
    doc = json.loads(_solve(snap, tmp_path).read_text())
    doc["placement"]["vmP"]["gis"][0]["start"] = 0
    tampered = tmp_path / "t.json"
    tampered.write_text(json.dumps(doc))
    code, out, _ = run_main(["check-plan", str(snap), str(tampered)])
    assert code == 1 and out.startswith("invalid: after the last step")


def test_check_plan_malformed_files_exit_2(tmp_path: Path) -> None:
    snap = EXAMPLES["fig1b-start-slice"]
    cases = {
        "obj.json": ({"steps": []}, "expected a list of steps or a `solve --json` document"),
        "scalar.json": ([1], 'plan[0]: expected an object with "op", got 1'),
        "placement.json": ({"plan": [], "placement": {"vmA": {"pm": "nope", "gis": []}}}, "placement.vmA"),
    }
    for name, (content, needle) in cases.items():
        path = tmp_path / name
        path.write_text(json.dumps(content))
        code, _, err = run_main(["check-plan", str(snap), str(path)])
        assert code == 2 and err.startswith("error: ") and needle in err, (name, err)
