"""Every CLI error is one `error:` line and exit 2 — option errors, hostile JSON — and the files the CLI
writes get the permissions a shell redirection would give them; `--version` and the licence."""

from __future__ import annotations

import json
import os
import stat
import tomllib
from pathlib import Path

import pytest

from tests.cli_helpers import run_main
from tests.paths import ROOT

EXAMPLES = ROOT / "examples"
FIG1C = EXAMPLES / "fig1c-compaction.json"
LGI = ROOT / "tests" / "data" / "mig" / "a100-lgi.txt"
SIZES = ["--cpu", "80", "--ram-gb", "512", "--vm-cpu", "4", "--vm-ram-gb", "16"]


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["solve", str(FIG1C), "--time-limit", "-1"],
            "error: Invalid value for '--time-limit': Input should be greater than or equal to 0 (got '-1') "
            "(see 'origamig solve --help')",
        ),
        (
            ["solve", str(FIG1C), "--threads=0"],
            "error: Invalid value for '--threads': Input should be greater than or equal to 1 (got '0') "
            "(see 'origamig solve --help')",
        ),
        (["solve", str(FIG1C), "--solver", "gurobi"], "error: Invalid value for '--solver': "),
        (["solve", str(FIG1C), "--no-such-flag"], "error: No such option: --no-such-flag"),
        (["solve"], "error: Missing argument 'snapshot'. (see 'origamig solve --help')"),
        (["no-such-command"], "error: No such command 'no-such-command'. (see 'origamig --help')"),
        (["check", str(FIG1C), "--json=yes"], "error: Option '--json' does not take a value."),
        (["import", "--cpu", "lots"], "error: Invalid value for '--cpu': "),
    ],
)
def test_option_errors_are_one_error_line_and_exit_2(args: list[str], line: str) -> None:
    code, out, err = run_main(args)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith(line), err
    assert "╭" not in err and "Usage:" not in err  # no boxed panel


def test_version_is_the_distributions() -> None:
    code, out, err = run_main(["--version"])
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert (code, out, err) == (0, f"origamig {version}\n", "")


def test_license_file_is_the_licence_pyproject_declares() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    text = (ROOT / "LICENSE").read_text()
    assert declared == "Apache-2.0"
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "END OF TERMS AND CONDITIONS" in text and len(text.splitlines()) > 150  # the full text


# --- hostile JSON --------------------------------------------------------------------------------
def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.mark.parametrize("levels", [101, 5_000, 200_000])
def test_deeply_nested_json_is_one_line_everywhere(tmp_path: Path, levels: int) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text(_deep(levels) if levels < 100_000 else '{"a":' * levels + "1" + "}" * levels)
    out = tmp_path / "out.json"
    for args in (
        ["check", str(deep)],
        ["check", str(deep), "--json"],
        ["solve", str(deep)],
        ["check-plan", str(FIG1C), str(deep)],
        ["check-plan", str(deep), str(deep)],
        ["import", "--checkpoint", f"pm0={deep}", "--gpu-model", "A100-40GB", "--out", str(out)],
        ["import", "--host", f"pm0={LGI}", "--gpus", "1", *SIZES, "--merge", str(deep), "--out", str(out)],
        ["report", str(deep), "--png", str(tmp_path / "f.png")],
    ):
        code, _, err = run_main(args)
        assert code == 2, (args, err)
        assert err == f"error: {deep}: JSON nested deeper than 100 levels\n", (args, err)
        assert not out.exists() and not (tmp_path / "f.png").exists()


def test_nesting_up_to_the_limit_is_read(tmp_path: Path) -> None:
    doc = json.loads(FIG1C.read_text())
    doc["note"] = json.loads(_deep(99))  # unknown fields are kept: depth 100 with the document's own
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    assert run_main(["check", str(path)])[0] == 0


# --- file modes ----------------------------------------------------------------------------------
@pytest.fixture
def umask_027():
    old = os.umask(0o027)
    yield
    os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_out_files_follow_the_umask_and_keep_a_replaced_files_mode(tmp_path: Path, umask_027: None) -> None:
    snap = tmp_path / "c.json"
    code, _, err = run_main(["import", "--host", f"pm0={LGI}", "--gpus", "1", *SIZES, "--out", str(snap)])
    assert code == 0, err
    assert _mode(snap) == 0o640  # 0666 less the umask 027; a bare temp file would be 0600
    snap.chmod(0o644)
    code, _, err = run_main(
        ["import", "--host", f"pm1={LGI}", "--gpus", "1", *SIZES, "--merge", str(snap), "--out", str(snap)]
    )
    assert code == 0, err
    assert _mode(snap) == 0o644 and len(json.loads(snap.read_text())["pms"]) == 2
    solved = tmp_path / "solved.json"
    code, _, err = run_main(["solve", str(FIG1C), "--out", str(solved), "--time-limit", "5"])
    assert code == 0, err
    assert _mode(solved) == 0o640
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp file left


# --- check --json --------------------------------------------------------------------------------
def test_check_json_prints_a_document_for_an_invalid_snapshot(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    doc = json.loads(FIG1C.read_text())
    doc["pms"][0]["cpu"] = -4
    bad.write_text(json.dumps(doc))
    code, out, err = run_main(["check", str(bad), "--json"])
    assert code == 2
    assert json.loads(out) == {"valid": False, "errors": ["pms[0].cpu: -4 is negative"]}
    assert err == "error: pms[0].cpu: -4 is negative\n"
    code, out, err = run_main(["check", str(tmp_path / "missing.json"), "--json"])
    assert code == 2 and json.loads(out)["valid"] is False and "cannot read" in json.loads(out)["errors"][0]


def test_check_warns_about_pending_vms_that_fit_no_pm(tmp_path: Path) -> None:
    doc = {
        "version": 1,
        "pms": [
            {"id": "pm0", "cpu": 128, "ram_gb": 512, "gpus": ["A100-40GB"]},
            {"id": "pm1", "cpu": 64, "ram_gb": 1024, "gpus": ["A100-40GB"], "powered_off": True},
        ],
        "vms": [
            {"id": "huge", "cpu": 500, "ram_gb": 16, "gis": ["1g.5gb"]},
            {"id": "fits-pm1-only", "cpu": 60, "ram_gb": 900, "gis": ["7g.40gb"]},
            {"id": "two-full-gpus", "cpu": 4, "ram_gb": 16, "gis": ["7g.40gb", "7g.40gb"]},
            {"id": "hungry", "cpu": 100, "ram_gb": 900, "gis": ["1g.5gb"]},
        ],
    }
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    code, out, err = run_main(["check", str(path), "--json"])
    assert code == 0 and err == ""
    assert json.loads(out)["warnings"] == [
        "vms[0] (huge): pending, but fits no PM even when empty: no PM has 500 cores (the largest has 128)",
        "vms[2] (two-full-gpus): pending, but fits no PM even when empty: no PM has A100-40GB GPUs that can "
        "hold 7g.40gb + 7g.40gb at once",
        "vms[3] (hungry): pending, but fits no PM even when empty: no PM has room for all of it at once, "
        "even empty (100 cores, 900 GB, 1g.5gb)",
    ]
    code, out, err = run_main(["check", str(path)])
    assert code == 0 and "valid" in out
    assert [line.split(":")[0] for line in err.splitlines()] == ["warning"] * 3
