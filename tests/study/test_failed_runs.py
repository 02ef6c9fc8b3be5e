"""A run that raises comes back as a `FailedRun` and never ends the others; a rerun retries it.

The failing run is a real one: a request file whose GPU model does not exist passes the up-front
checks (the file is there) and fails when the run reads it, in whatever process runs it. Writing a
good file at the same path makes the same run succeed on a rerun.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from origamig.sim.scenario import SimConfig
from origamig.study import runner, sweep
from origamig.study.runner import FailedRun, RunSpec, run_all, run_one
from tests.cli_helpers import run_main

H = 3600.0
CONFIG = SimConfig(load=1.0, pms=8, warmup_s=2 * H, measure_s=2 * H, deterministic=True)
HEADER = "id,arrival_s,lifetime_s,gpu_model,gis,cpu,ram_gb\n"
BAD = HEADER + "job1,0,7200,NO-SUCH-GPU,3g.20gb,,\n"
GOOD = HEADER + "job1,0,7200,A100-40GB,3g.20gb,,\n"


def comparable(result: object) -> object:
    if isinstance(result, FailedRun):
        return ("failed", result.policy, result.seed, result.error)
    return (result.policy, result.seed, result.metrics, result.events)


@pytest.fixture
def requests_file(tmp_path: Path) -> Path:
    path = tmp_path / "requests.csv"
    path.write_text(BAD)
    return path


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failing_run_comes_back_failed_and_the_others_finish(requests_file: Path, workers: int) -> None:
    specs = [
        RunSpec(CONFIG, "ff", 1),
        RunSpec(CONFIG.replace(requests_file=str(requests_file)), "tc", 1),
        RunSpec(CONFIG, "tc", 2),
    ]
    finished: list[int] = []
    results = run_all(specs, workers=workers, done=lambda i, r: finished.append(i))
    assert sorted(finished) == [0, 1, 2]
    failed = results[1]
    assert isinstance(failed, FailedRun) and (failed.policy, failed.seed) == ("tc", 1)
    assert failed.error.startswith("RequestsFileError: ")
    assert "unknown GPU model 'NO-SUCH-GPU'" in failed.error
    assert "\n" not in failed.error and "Traceback" in failed.traceback
    assert failed.config["requests_file"] == str(requests_file)
    assert "tc load 1.0 seed 1 failed: RequestsFileError" in failed.describe()
    alone = [comparable(run_one(specs[i])) for i in (0, 2)]
    assert [comparable(r) for r in (results[0], results[2])] == alone


def test_keep_going_off_raises_the_runs_own_exception(requests_file: Path) -> None:
    with pytest.raises(runner.UserError, match="NO-SUCH-GPU"):
        run_all([RunSpec(CONFIG.replace(requests_file=str(requests_file)), "ff", 1)], keep_going=False)


def test_a_failed_run_kept_in_a_folder_is_retried_on_a_rerun(requests_file: Path, tmp_path: Path) -> None:
    keep = tmp_path / "runs"
    specs = [RunSpec(CONFIG, "ff", 1), RunSpec(CONFIG.replace(requests_file=str(requests_file)), "ff", 1)]
    first = run_all(specs, keep_dir=keep)
    assert isinstance(first[1], FailedRun) and not isinstance(first[0], FailedRun)
    assert len(list(keep.glob("*.json"))) == 1  # only the finished run is stored as finished
    requests_file.write_text(GOOD)
    ran: list[int] = []
    again = run_all(specs, keep_dir=keep, done=lambda i, r: ran.append(i))
    assert not any(isinstance(r, FailedRun) for r in again)
    assert comparable(again[0]) == comparable(first[0]) and again[1].requests == 1
    assert len(list(keep.glob("*.json"))) == 2


def test_the_sweep_stores_a_failed_cell_as_failed_and_a_rerun_retries_it(
    requests_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scale = sweep.SMOKE
    cells = [
        sweep.Cell("FF", "", "ff", scale.config(), 1),
        sweep.Cell("FF", "own", "ff", scale.config(requests_file=str(requests_file)), 1),
        sweep.Cell("TC", "", "tc", scale.config(), 1),
    ]
    done = sweep.run("failing", scale, cells, workers=1, show_progress=False, out_dir=tmp_path)
    out = capsys.readouterr().out
    assert "failing: 1 cells failed (a rerun tries them again):" in out
    assert "  FF own seed 1: RequestsFileError: " in out
    stored = json.loads(sweep.results_path("failing", scale, tmp_path).read_text())
    assert [r["cell"] for r in stored["runs"]] == [cells[0].key, cells[2].key]
    assert [f["cell"] for f in stored["failed"]] == [cells[1].key]
    assert "NO-SUCH-GPU" in stored["failed"][0]["error"]
    assert [r.cell for r in done.runs] == [cells[0].key, cells[2].key]
    sweep.list_cells("failing", scale, cells, tmp_path)
    assert "failed: RequestsFileError: " in capsys.readouterr().out

    requests_file.write_text(GOOD)
    again = sweep.run("failing", scale, cells, workers=1, show_progress=False, out_dir=tmp_path)
    assert "2 of 3 cells already in the results file, skipped" in capsys.readouterr().out
    assert sorted(r.cell for r in again.runs) == sorted(c.key for c in cells) and not again.failed
    assert "failed" not in json.loads(sweep.results_path("failing", scale, tmp_path).read_text())


def test_simulate_reports_failed_runs_in_one_line_each(requests_file: Path) -> None:
    args = ["simulate", "--policy", "ff,tc", "--seeds", "1", "--pms", "8", "--warmup", "2h"]
    args += ["--measure", "2h"]
    code, out, err = run_main([*args, "--requests", str(requests_file), "--json"])
    assert code == 1
    lines = [line for line in err.splitlines() if "failed: RequestsFileError" in line]
    assert len(lines) == 2 and all("unknown GPU model 'NO-SUCH-GPU'" in line for line in lines)
    assert "2 of 2 runs failed" in err
    assert "Traceback" not in err
    assert json.loads(out)["runs"] == []
