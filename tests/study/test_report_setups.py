"""`report` never averages runs of different setups: a 16-PM and a 32-PM run are two rows."""

from __future__ import annotations

import json
from pathlib import Path

from origamig.sim.metrics import METRIC_NAMES
from origamig.study.aggregate import summarize
from origamig.study.results import load_runs, runs_document
from tests.cli_helpers import run_main


def run(policy: str, seed: int, pms: int, active: float, **config: object) -> dict:
    cfg = {"load": 0.85, "pms": pms, "variant": "default", "warmup_s": 3600.0, "measure_s": 3600.0}
    cfg |= {"deterministic": True, "solver": "highs", "requests_file": None, "trace_dir": None}
    cfg |= {"debug_check": False, "policy_options": {}} | config
    metrics = dict.fromkeys(METRIC_NAMES, 0.5) | {"active_pms": active}
    return {"policy": policy, "seed": seed, "config": cfg, "metrics": metrics}


def write(path: Path, runs: list[dict]) -> Path:
    path.write_text(json.dumps(runs_document(runs)))
    return path


def test_two_scales_are_two_rows_never_one_average(tmp_path: Path) -> None:
    small = write(tmp_path / "16.json", [run("ff", 1, 16, 12.0), run("ff", 2, 16, 14.0)])
    large = write(tmp_path / "32.json", [run("ff", 1, 32, 25.0)])
    doc = runs_document(load_runs([small, large]))
    rows = sorted(doc["summary"], key=lambda r: r["pms"])
    assert [(r["pms"], r["seeds"], r["metrics"]["active_pms"]["mean"]) for r in rows] == [
        (16, [1, 2], 13.0),
        (32, [1], 25.0),
    ]
    code, out, err = run_main(["report", str(small), str(large), "--png", str(tmp_path / "f.png")])
    assert code == 0, err
    assert "| default | 0.85 | 16 | ff | 2 | " in out and "| default | 0.85 | 32 | ff | 1 | " in out
    # Two seeds show their range, not a t-interval (12, 14 → 13 ± 12.7); never (12+14+25)/3.
    assert "13.0 (12.0–14.0)" in out and "±" not in out.split("Paired")[0] and "25.0" in out
    assert err.startswith("note: the results come from 2 different setups (PMs: 16, 32)")


def test_the_same_scale_with_another_window_or_solver_is_kept_apart_and_labelled(tmp_path: Path) -> None:
    runs = [
        run("ff", 1, 16, 10.0),
        run("ff", 1, 16, 11.0, solver="cpsat"),
        run("tc", 1, 16, 9.0),
        run("tc", 1, 16, 8.0, solver="cpsat"),
    ]
    rows = summarize(runs)
    assert len(rows) == 4 and {r["setup"]["solver"] for r in rows} == {"highs", "cpsat"}
    doc = runs_document(runs)
    assert sorted((p["setup"]["solver"], p["metrics"]["active_pms"]["mean"]) for p in doc["paired"]) == [
        ("cpsat", -3.0),
        ("highs", -1.0),
    ]
    path = write(tmp_path / "r.json", runs)
    code, out, _ = run_main(["report", str(path), "--png", str(tmp_path / "f.png")])
    assert code == 0
    assert "| default | 0.85 | 16 | solver=cpsat | ff | 1 |" in out
    assert "| default | 0.85 | 16 | solver=highs | tc | 1 |" in out


def test_a_later_run_of_the_same_setup_replaces_an_earlier_one(tmp_path: Path) -> None:
    first = write(tmp_path / "a.json", [run("ff", 1, 16, 10.0)])
    again = write(tmp_path / "b.json", [run("ff", 1, 16, 12.0), run("ff", 1, 32, 20.0)])
    runs = load_runs([first, again])
    assert sorted((r["config"]["pms"], r["metrics"]["active_pms"]) for r in runs) == [(16, 12.0), (32, 20.0)]
