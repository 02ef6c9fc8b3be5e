"""What `check` and `solve` print and write for operators: ids printed as written (rich markup in an
id is text, not a style), nothing written before the command succeeded, bad numbers refused in one
line each (docs/operators.md)."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from origamig.judge.check import check_placement
from origamig.snapshot.document import load_snapshot
from tests.cli_helpers import run_main
from tests.paths import ROOT
from tests.profiles import examples

# Characters an id may not hold: control characters, line and paragraph separators, surrogates.
NOT_IN_IDS = ("Cc", "Cs", "Zl", "Zp", "Cf")
MARKUP = "[]/:@#$`'\" \\"


def id_text() -> st.SearchStrategy[str]:
    """Ids of any printable unicode, rich markup and emoji codes (`[red]`, `[/bold]`, `:x:`) included."""
    letters = st.characters(exclude_categories=NOT_IN_IDS)
    chunks = st.one_of(
        st.text(letters, min_size=1, max_size=6),
        st.sampled_from(["[/bold]", "[red]x[/red]", "[/]", ":x:", "[link=x]", "\\[", "[bold"]),
        st.text(st.sampled_from(MARKUP), min_size=1, max_size=4),
    )
    return st.lists(chunks, min_size=1, max_size=3).map("".join).filter(lambda s: s.strip() != "")


def two_a30_snapshot(pm: str, r1: str, r2: str, pending: str) -> dict[str, Any]:
    """One PM with two A30s, a 1g.6gb at start 1 of each, a pending 4g.24gb: admitting it moves one."""

    def running(vm: str, gpu: int) -> dict[str, Any]:
        return {
            "id": vm,
            "cpu": 4,
            "ram_gb": 16,
            "gis": ["1g.6gb"],
            "placement": {"pm": pm, "gis": [{"gpu": gpu, "start": 1}]},
        }

    return {
        "version": 1,
        "pms": [{"id": pm, "cpu": 64, "ram_gb": 256, "gpus": ["A30-24GB", "A30-24GB"]}],
        "vms": [
            running(r1, 0),
            running(r2, 1),
            {"id": pending, "cpu": 16, "ram_gb": 64, "gis": ["4g.24gb"]},
        ],
    }


@settings(
    max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ids=st.lists(id_text(), min_size=4, max_size=4, unique=True))
def test_any_printable_id_is_printed_as_written_by_check_and_solve(tmp_path: Path, ids: list[str]) -> None:
    pm, r1, r2, pending = ids
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(two_a30_snapshot(pm, r1, r2, pending)), encoding="utf-8")
    out, script = tmp_path / "out.json", tmp_path / "plan.sh"
    for file in (out, script):
        file.unlink(missing_ok=True)

    code, stdout, stderr = run_main(["check", str(path)])  # an exception here is a traceback
    assert (code, stderr) == (0, "") and "valid" in stdout

    code, stdout, stderr = run_main(
        ["solve", str(path), "--neighborhood", "all", "--out", str(out), "--script", str(script)]
    )
    assert code == 0, stderr
    assert f"admitted: {pending}\n" in stdout
    moved = [v for v in (r1, r2) if f"│ {v} " in stdout]
    assert len(moved) >= 1 and f"│ {pm} " in stdout
    result = load_snapshot(out)  # the written state holds the ids exactly and is valid
    assert set(result.vms) == {r1, r2, pending} and set(result.placement) == {r1, r2, pending}
    assert check_placement(result.pms, result.vms, result.placement) == []
    assert script.read_text(encoding="utf-8").startswith("#!/bin/sh")


@pytest.mark.parametrize(
    "bad",
    ["a\nb", "a\x1b[2Jb", "tab\there", "a\u2028", "\ud800", "h10\u200d0-01", "pm\u202e10-h", "\ufeffvm"],
    ids=["newline", "escape", "tab", "LS", "surrogate", "zero-width-joiner", "right-to-left-override", "bom"],
)
def test_an_id_that_cannot_be_printed_is_one_error_line(tmp_path: Path, bad: str) -> None:
    doc = two_a30_snapshot("pm0", "r1", "r2", "p")
    doc["vms"][2]["id"] = bad
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(doc), encoding="utf-8")  # ensure_ascii: the surrogate is written escaped
    out = tmp_path / "out.json"
    for command in (["check", str(path)], ["solve", str(path), "--out", str(out)]):
        code, stdout, stderr = run_main(command)
        char = next(c for c in bad if unicodedata.category(c) in NOT_IN_IDS)
        assert (code, stdout) == (2, "") and not out.exists()
        assert stderr.startswith("error: vms[2].id: ") and stderr.count("\n") == 1
        assert f"holds the character U+{ord(char):04X}" in stderr


def test_nothing_is_written_when_the_report_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import origamig.cli.solve as solve_cli

    def broken(*args: Any) -> Any:
        raise RuntimeError("drawing failed")

    monkeypatch.setattr(solve_cli, "report", broken)
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(two_a30_snapshot("pm0", "r1", "r2", "p")))
    out, script = tmp_path / "out.json", tmp_path / "plan.sh"
    with pytest.raises(RuntimeError, match="drawing failed"):
        run_main(["solve", str(path), "--neighborhood", "all", "--out", str(out), "--script", str(script)])
    assert not out.exists() and not script.exists()


HUGE = 10**4000


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("pms", 0, "cpu"), HUGE),
        (("pms", 0, "ram_gb"), 1e300),
        (("vms", 0, "cpu"), HUGE),
        (("vms", 2, "ram_gb"), 1_000_001),
        (("vms", 0, "placement", "gis", 0, "gpu"), HUGE),
        (("vms", 0, "placement", "gis", 0, "start"), -HUGE),
        (("weights",), {"accept": HUGE}),
    ],
    ids=["pm cpu", "pm ram", "vm cpu", "vm ram", "gpu index", "start", "weight"],
)
def test_a_number_beyond_a_million_is_one_error_line_naming_field_and_value(
    tmp_path: Path, where: tuple[Any, ...], value: Any
) -> None:
    doc = two_a30_snapshot("pm0", "r1", "r2", "p")
    node: Any = doc
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(doc))
    out = tmp_path / "out.json"
    field = (
        "weights.accept"
        if where == ("weights",)
        else ".".join(f"{k}" if isinstance(k, str) else f"[{k}]" for k in where).replace(".[", "[")
    )
    for command in (["check", str(path)], ["solve", str(path), "--out", str(out)]):
        code, stdout, stderr = run_main(command)
        assert (code, stdout) == (2, "") and not out.exists()
        assert stderr.count("\n") == 1 and stderr.startswith(f"error: {field}: "), stderr
        assert ("is negative" in stderr) if where[-1] == "start" else ("implausibly large" in stderr)
        assert len(stderr) < 200  # the value is shortened, not printed in full


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--accept", "inf", "inf is not a finite number"),
        ("--pm", "2e6", "2000000 is implausibly large (at most 1,000,000)"),
        ("--migration", "-1", "-1 is negative"),
        ("--time-limit", "inf", "inf is not a finite number"),
        (
            "--threads",
            "10000000000000000000000",
            "10000000000000000000000 is implausibly large (at most 1,000,000)",
        ),
    ],
)
def test_a_bad_number_option_is_one_error_line(option: str, value: str, says: str) -> None:
    snap = ROOT / "examples" / "fig1a-noncontiguous.json"
    code, stdout, stderr = run_main(["solve", str(snap), option, value])
    assert (code, stdout, stderr) == (2, "", f"error: {option}: {says}\n")


def test_check_plan_refuses_an_index_beyond_a_million_in_one_line_per_field(tmp_path: Path) -> None:
    snap = ROOT / "examples" / "fragmented-a100.json"
    plan = tmp_path / "plan.json"
    step = {"op": "create_gi", "vm": "vm5", "gi": 0, "pm": "pm0", "gpu": HUGE, "start": 0}
    plan.write_text(json.dumps([step]))
    code, stdout, stderr = run_main(["check-plan", str(snap), str(plan)])
    assert (code, stdout) == (2, "")
    shown = "1" + "0" * 36 + "..."
    assert stderr == f"error: {plan}: plan[0].gpu: {shown} is implausibly large (at most 1,000,000)\n"


def test_piped_output_is_never_cut_or_wrapped(tmp_path: Path) -> None:
    long_pm, long_vm = "rack-7/" + "p" * 120, "tenant-42/" + "v" * 150
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(two_a30_snapshot(long_pm, long_vm, "r2", "p")))
    for command in (["check", str(path)], ["solve", str(path), "--neighborhood", "all"]):
        code, stdout, stderr = run_main(command)  # stdout is not a terminal here
        assert (code, stderr) == (0, "") and "…" not in stdout
    assert f"│ {long_pm} " in stdout and (f"│ {long_vm} " in stdout or "│ r2 " in stdout)
