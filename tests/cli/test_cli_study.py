"""`origamig study`: a resumable policies × loads × seeds comparison, its listing, its figure rule;
the progress display in a log; `report`'s figure title and its --force rule."""

from __future__ import annotations

import io
import json
from pathlib import Path

from origamig.cli.results_view import scale_text
from origamig.study.progress import Job, RunsProgress
from origamig.study.runner import FailedRun
from origamig.study.sweep import code_id
from tests.cli_helpers import run_main

SMOKE = ["--scale", "smoke", "--policy", "ff,tc", "--seeds", "2", "--no-progress"]


def test_a_study_stores_every_cell_and_a_rerun_runs_none(tmp_path: Path) -> None:
    code, out, err = run_main(["study", "demo", *SMOKE, "--out", str(tmp_path)])
    assert code == 0, err
    doc = json.loads((tmp_path / "demo-smoke.json").read_text())
    assert sorted((r["policy"], r["seed"]) for r in doc["runs"]) == [
        ("ff", 1),
        ("ff", 2),
        ("tc", 1),
        ("tc", 2),
    ]
    assert {r["code"] for r in doc["runs"]} == {code_id()}
    assert "smoke scale: 8 PMs, 2 h warm-up + 2 h measured, seeds 1,2" in out
    assert "(min–max)" in out  # two seeds: ranges, not t-intervals
    # The same command again finds every cell done and runs nothing: the file's runs are unchanged.
    code, out, err = run_main(["study", "demo", *SMOKE, "--out", str(tmp_path)])
    assert code == 0, err
    assert "4 of 4 cells already in the results file, skipped" in out
    again = json.loads((tmp_path / "demo-smoke.json").read_text())
    assert again["runs"] == doc["runs"]
    # One more seed: the listing says what is done and what is left.
    code, out, _ = run_main(["study", "demo", *SMOKE[:-2], "3", "--out", str(tmp_path), "--cells"])
    assert code == 0
    assert out.count("done (") == 4 and sum(line.endswith(" left") for line in out.splitlines()) == 2
    assert "4 of 6 cells done, 2 left" in out


def test_a_study_never_replaces_a_figure_without_force(tmp_path: Path) -> None:
    png = tmp_path / "fig.png"
    png.write_bytes(b"mine")
    code, _, err = run_main(["study", "demo", *SMOKE, "--out", str(tmp_path), "--png", str(png)])
    assert (
        code == 2
        and err == f"error: --png: {str(png)!r} exists; give another path or --force to replace it\n"
    )
    assert png.read_bytes() == b"mine"
    assert not (tmp_path / "demo-smoke.json").exists()  # refused before running
    code, _, err = run_main(["study", "demo", *SMOKE, "--out", str(tmp_path), "--png", str(png), "--force"])
    assert code == 0, err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_study_input_is_one_error_line(tmp_path: Path) -> None:
    for args, message in (
        (["--seeds", "0"], "error: --seeds: '0' is not N (seeds 1..N)"),
        (["--seeds", "3..1"], "error: --seeds: '3..1' is not N (seeds 1..N)"),
        (["--scale", "huge"], "error: --scale: 'huge' is not one of quick, full, smoke"),
        (["--workers", "0"], "error: --workers: 0 must be at least 1"),
    ):
        code, _, err = run_main(["study", "demo", "--scale", "smoke", *args, "--out", str(tmp_path)])
        assert code == 2 and err.startswith(message) and err.count("\n") == 1, err
    assert not list(tmp_path.iterdir())


def test_report_never_replaces_a_figure_without_force(tmp_path: Path) -> None:
    results = tmp_path / "r.json"
    code, _, err = run_main(["simulate", "--policy", "ff", "--pms", "4", "--seeds", "2", "--warmup", "1h",
                             "--measure", "1h", "--out", str(results), "--json"])  # fmt: skip
    assert code == 0, err
    png = tmp_path / "fig4.png"
    png.write_bytes(b"mine")
    for extra in ([], ["--what-if"]):
        code, _, err = run_main(["report", str(results), "--png", str(png), *extra])
        assert code == 2 and "--force to replace it" in err and png.read_bytes() == b"mine"
    code, _, err = run_main(["report", str(results), "--png", str(png), "--force"])
    assert code == 0, err and png.read_bytes()[:4] == b"\x89PNG"


def test_figure_titles_name_the_scale_window_and_seeds() -> None:
    def row(pms: int, seeds: list[int]) -> dict:
        return {"seeds": seeds, "setup": {"pms": pms, "warmup_s": 86400.0, "measure_s": 7200.0}}

    assert scale_text([row(32, [1, 2, 3, 7])]) == "32 PMs, 24 h warm-up + 2 h measured, seeds 1-3, 7"
    assert scale_text([row(16, [1]), row(32, [1])]) == "16/32 PMs, 24 h warm-up + 2 h measured, seed 1"


def test_progress_in_a_log_is_a_plain_line_per_finished_run() -> None:
    class Done:
        wall_s, events = 2.5, 100

    log = io.StringIO()
    with RunsProgress("t", [Job("ff seed 1", 7200.0), Job("tc seed 1", 7200.0)], stream=log) as shown:
        shown.finished(0, Done())
        shown.finished(1, FailedRun("tc", 1, {"load": 0.85}, "ValueError: boom"))
    lines = log.getvalue().splitlines()
    assert lines[0].startswith("[1/2] ff seed 1: 2 sim h in 2.5 s; ") and "left" in lines[0]
    assert lines[1].startswith("[2/2] tc seed 1: FAILED: ValueError: boom")


def test_the_live_bar_counts_simulated_hours_as_runs_report() -> None:
    screen = io.StringIO()
    with RunsProgress("t", [Job("a", 3600.0 * 10)], bar=True, stream=screen) as shown:
        live = shown.live(0)
        live(3600.0 * 4, 1000, 3)
        assert shown.done_h + sum(shown.live_h.values()) == 4.0
        assert shown._bar.tasks[0].completed == 4.0
    assert "sim h" in screen.getvalue()
