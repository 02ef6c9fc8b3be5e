"""`origamig simulate` and `origamig report` end to end (typer runner)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from origamig.cli.app import app, main
from origamig.cli.arguments import parse_duration
from origamig.errors import UserError
from origamig.sim.metrics import METRIC_NAMES
from origamig.study.seeds import parse_seeds

DOCUMENTED_METRIC_NAMES = (  # docs/simulator.md#metrics, verbatim
    "acceptance", "active_pms", "active_gpus", "packing_density", "energy_mwh", "energy_kwh_per_gpu_hour",
    "switch_ons_per_hour", "migrations_per_hour", "migrated_gb_per_hour", "mean_wait_s", "calls_per_hour",
    "median_call_s", "plan_duration_s_p50", "plan_duration_s_p95", "link_busy_share", "plan_wait_s",
)  # fmt: skip
QUICK = ["--pms", "16", "--warmup", "6h", "--measure", "6h"]


def invoke(args: list[str]):
    return CliRunner().invoke(app, args, catch_exceptions=False)


def test_metric_names_are_the_spec_names() -> None:
    assert METRIC_NAMES == DOCUMENTED_METRIC_NAMES


def test_parsers() -> None:
    assert parse_duration("48h", "--warmup") == 48 * 3600
    assert parse_duration("90", "--warmup") == 90 and parse_duration("2d", "x") == 172800
    assert parse_seeds("1..3,7") == (1, 2, 3, 7)
    # One meaning of --seeds everywhere: N is seeds 1..N, A..B a range.
    assert parse_seeds("5") == (1, 2, 3, 4, 5) and parse_seeds("3..3") == (3,)
    with pytest.raises(UserError, match="--warmup: '48 hours'"):
        parse_duration("48 hours", "--warmup")
    with pytest.raises(UserError, match="--seeds"):
        parse_seeds("5..1")


def test_simulate_json_and_report(tmp_path) -> None:
    out = tmp_path / "res.json"
    res = invoke(["simulate", "--policy", "ff,mfi", "--load", "0.6", "--load", "0.9", "--seeds", "1..2",
                  *QUICK, "--deterministic", "--json", "--out", str(out)])  # fmt: skip
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc == json.loads(out.read_text())
    assert len(doc["runs"]) == 2 * 2 * 2
    assert all(tuple(r["metrics"]) == DOCUMENTED_METRIC_NAMES for r in doc["runs"])
    assert {(r["policy"], r["load"]) for r in doc["summary"]} == {
        (p, x) for p in ("ff", "mfi") for x in (0.6, 0.9)
    }
    assert {r["baseline"] for r in doc["paired"]} == {"ff"} and len(doc["paired"]) == 2
    png, md = tmp_path / "fig4.png", tmp_path / "table.md"
    rep = invoke(["report", str(out), "--png", str(png), "--markdown", str(md)])
    assert rep.exit_code == 0, rep.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert md.read_text() == rep.stdout
    assert "| default | 0.9 | 16 | mfi | 2 |" in rep.stdout


def test_simulate_table_output() -> None:
    res = invoke(["simulate", "--policy", "ff", "--seeds", "1", *QUICK])
    assert res.exit_code == 0
    assert "active PMs" in res.stdout and "default" in res.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--policy", "nope"], "error: --policy: unknown policy 'nope'"),
        (["--policy", "ff", "--variant", "huge"], "error: --variant: unknown variant 'huge'"),
        (["--policy", "ff", "--load", "-1"], "error: --load: -1.0 must be positive"),
        (["--policy", "ff", "--solver", "gurobi"], "error: --solver: 'gurobi' is not one of highs, cpsat"),
        (
            ["--policy", "ff", "--requests", "/nonexistent.csv"],
            "error: --requests: /nonexistent.csv: no such file",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(monkeypatch, capsys, args: list[str], message: str) -> None:
    monkeypatch.setattr("sys.argv", ["origamig", "simulate", *args, *QUICK, "--seeds", "1"])
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


def test_report_rejects_a_file_that_is_not_results(tmp_path, monkeypatch, capsys) -> None:
    bad = tmp_path / "x.json"
    bad.write_text("{}")
    monkeypatch.setattr("sys.argv", ["origamig", "report", str(bad)])
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 2 and "runs: missing" in capsys.readouterr().err
