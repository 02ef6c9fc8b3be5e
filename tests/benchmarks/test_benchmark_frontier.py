"""benchmarks/studies/frontier.py (the Pareto comparison): its rows and cells — every rival's knobs,
tuning seeds 1–5 kept apart from judging seeds 6–10 — its analysis on hand-made numbers (frontier,
matching on the tuning seeds, verdicts against the noise floor), and end to end on 8 PMs over 2 h +
2 h: tables, JSON, figure, replot; the overloaded Alibaba setting on a hand-written trace."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import pytest

from benchmarks.studies import frontier
from benchmarks.studies import frontier_report as report
from origamig.errors import UserError
from origamig.sim.trace import POD_FILE, load_pods
from origamig.study import sweep
from origamig.study.aggregate import MeanCi, mean_ci

TINY = dataclasses.replace(sweep.SMOKE, name="tiny", seeds=(1, 6))
SOME = ("ff", "dra", "tc-15min", "fgd-r0.1-15min", "fgd-tc", "grmu-l0.75-s1", "origamig-d2.5", "origamig-d20")


def test_the_rows_cover_every_rival_s_knobs() -> None:
    rows = frontier.ROWS
    options = {name: dict(r.options) for name, r in rows.items()}
    ours = [o for n, o in options.items() if rows[n].family == "origamig"]
    assert sorted(o["delta"] for o in ours if "delta" in o) == [2.5, 5, 10, 20]
    assert sorted(o["delta_per_gb"] for o in ours if "delta_per_gb" in o) == [0.055, 0.11, 0.22]
    assert sorted(o["period_s"] for n, o in options.items() if rows[n].family == "tc") == [900, 1800, 3600]
    fgd = {(o["ratio"], o["period_s"]) for n, o in options.items() if rows[n].family == "fgd"}
    assert fgd == {(r, m * 60.0) for r in (0.02, 0.05, 0.1) for m in (15, 60)}
    grmu = {(o["large_quota"], o["small_quota"]) for n, o in options.items() if rows[n].family == "grmu"}
    assert grmu == {(q, s) for q in (0.5, 0.75, 1.0) for s in (0.5, 1.0)}  # consolidating: its default
    assert options["grmu-arrival"] == {"consolidate": False}
    assert options["fgd-tc"] == {"arrival": "tc"} and options["origamig-fgd"]["arrival"] == "fgd"
    assert rows["dra"].label == "DRA, what pods get (kube)"
    assert set(frontier.ALIBABA_ROWS) <= set(rows)


def test_cells_keep_tuning_and_judging_seeds_apart() -> None:
    cells = frontier.cells(frontier.FULL, list(frontier.ROWS.values()))
    assert {c.seed for c in cells} == set(range(1, 11))
    assert all(c.col == ("tune" if c.seed <= 5 else "judge") for c in cells)
    assert all(c.config.pms == 128 and c.config.load == 0.85 for c in cells)
    for c in cells:
        if c.policy == "origamig":  # the sweeps' deterministic call budget, the arrival rule named
            opts = dict(c.config.policy_options)
            assert opts["work_limit"] == 100 and opts["arrival"] in ("tc", "fgd")
    assert len({c.key for c in cells}) == len(cells) == 30 * 10


def test_the_alibaba_setting_runs_every_rival_on_the_trace_at_an_overload() -> None:
    rows = frontier.chosen_rows(None, alibaba=True)
    assert {r.family for r in rows} == set(report.FAMILY_LABELS)  # every family, once at its default
    cells = frontier.cells(frontier.FULL, rows, alibaba=True, trace_dir="/somewhere")
    assert {(c.config.variant, c.config.load) for c in cells} == {("alibaba", 1.6)}
    elsewhere = frontier.cells(frontier.FULL, rows, alibaba=True, trace_dir="/elsewhere")
    assert [c.key for c in cells] == [c.key for c in elsewhere]  # where the trace is names no cell
    with pytest.raises(UserError, match="unknown nope"):
        frontier.chosen_rows("tc,nope", alibaba=False)


def test_the_frontier_keeps_the_points_nothing_beats_on_both_axes() -> None:
    # (migrations/h, active PMs): b beats c on both; a and b trade one for the other; d ties a.
    points = {"a": (0.0, 120.0), "b": (10.0, 115.0), "c": (12.0, 116.0), "d": (0.0, 121.0)}
    assert report.frontier(points) == ["a", "b"]


def _stats(*values: float) -> MeanCi:
    return mean_ci(values)


def test_matching_takes_our_busiest_setting_not_above_the_rival_s_rate() -> None:
    tune = {
        "o5": {"migrations_per_hour": _stats(14.0, 16.0)},
        "o10": {"migrations_per_hour": _stats(9.0, 9.4)},
        "o20": {"migrations_per_hour": _stats(5.0, 5.2)},
        "fgd": {"migrations_per_hour": _stats(11.0, 12.0)},
        "slow": {"migrations_per_hour": _stats(1.0, 1.0)},
    }
    assert report.matched(tune, ["o5", "o10", "o20"], "fgd") == "o10"  # 9.2 ≤ 11.5 < 15
    assert report.matched(tune, ["o5", "o10", "o20"], "slow") == "o20"  # none below: the slowest


def test_a_difference_counts_only_beyond_the_noise_floor_with_its_interval_clear_of_zero() -> None:
    floor = 0.25
    assert report.verdict(_stats(1.0, 1.2, 0.9), floor) == report.BETTER
    assert report.verdict(_stats(-1.0, -1.2, -0.9), floor) == report.WORSE
    assert report.verdict(_stats(0.2, 0.21, 0.19), floor) == report.TIE  # clear of zero, under the floor
    assert report.verdict(_stats(2.0, -1.0, 1.5), floor) == report.TIE  # beyond the floor, CI spans zero
    assert report.verdict(_stats(0.5, 0.6), floor) == report.BETTER  # two seeds: their range, clear of 0


def test_frontier_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chosen = [frontier.ROWS[n] for n in SOME]
    cells = frontier.cells(TINY, chosen)
    sw = sweep.run("frontier", TINY, cells, workers=1, show_progress=False, out_dir=tmp_path)
    assert {(r.col, r.seed) for r in sw.runs} == {("tune", 1), ("judge", 6)}
    findings = report.analyse(sw, chosen, 0.25)
    report.print_tables(sw, chosen, findings, 0.25)
    out = capsys.readouterr().out
    assert "Tuning seeds 1" in out and "Judging seeds 6" in out and "noise floor 0.25%" in out
    # Every rival is set beside one of OrigaMIG's δ rows, paired on the judging seed only.
    compared = findings["paired_on_judging_seeds"]
    assert set(compared) == {n for n in SOME if not n.startswith("origamig")}
    for rival, v in compared.items():
        assert v["origamig_row"] in ("origamig-d2.5", "origamig-d20") and v["seeds"] == 1
        ours = sw.by_seed(v["origamig_row"], "judge", "active_pms")[6]
        theirs = sw.by_seed(rival, "judge", "active_pms")[6]
        assert v["fewer_pms_pct"].mean == pytest.approx(100 * (theirs - ours) / theirs)
    # FF never migrates: an OrigaMIG row of the lowest tuning rate is its match.
    rates = {n: sw.metric(n, "tune", "migrations_per_hour").mean for n in ("origamig-d2.5", "origamig-d20")}
    assert rates[compared["ff"]["origamig_row"]] == min(rates.values())
    path = sweep.write_json(sw, {"findings": findings}, tmp_path)
    png = report.draw(sw, chosen, findings, tmp_path)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    doc = json.loads(path.read_text())
    assert {r["col"] for r in doc["runs"]} == {"tune", "judge"}
    back = sweep.load_sweep("frontier", TINY, tmp_path)
    assert report.analyse(back, chosen, 0.25) == findings
    # Judging seeds only, one OrigaMIG setting: it is every rival's match, and the record says why.
    judged = dataclasses.replace(sw, runs=[r for r in sw.runs if r.col == "judge"])
    alone = report.analyse(judged, [frontier.ROWS["ff"], frontier.ROWS["origamig-d20"]], 0.25)
    (ff,) = alone["paired_on_judging_seeds"].values()
    assert (ff["origamig_row"], ff["matched_by"]) == ("origamig-d20", "the only setting run")
    assert report.analyse(judged, chosen, 0.25)["paired_on_judging_seeds"] == {}  # two settings: none chosen


def _args(out: Path, *extra: str) -> argparse.Namespace:
    return frontier.build_parser().parse_args(["--out", str(out), "--workers", "1", "--no-progress", *extra])


def test_the_alibaba_setting_needs_its_trace_and_runs_on_one(tmp_path: Path, monkeypatch) -> None:
    with pytest.raises(UserError, match="--trace-dir"):
        frontier.main(_args(tmp_path, "--alibaba"))
    trace = tmp_path / "trace"
    trace.mkdir()
    header = (
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
        "creation_time,deletion_time,scheduled_time\n"
    )
    pods = [
        f"p{i},1000,1,1,{(125, 470, 1000)[i % 3]},,LS,Running,{i * 600},{i * 600 + 7200},{i * 600}"
        for i in range(200)
    ]
    (trace / POD_FILE).write_text(header + "".join(p + "\n" for p in pods))
    load_pods.cache_clear()
    monkeypatch.setattr(frontier, "QUICK", TINY)
    frontier.main(
        _args(tmp_path, "--alibaba", "--trace-dir", str(trace), "--families", "ff,tc-15min,grmu-arrival")
    )
    doc = json.loads((tmp_path / "frontier-alibaba-tiny.json").read_text())
    assert {r["row"] for r in doc["runs"]} == {"ff", "tc-15min", "grmu-arrival"}
    assert {(r["variant"], r["load"]) for r in doc["runs"]} == {("alibaba", 1.6)}
    assert doc["variant"] == "alibaba" and doc["groups"] == {"tune": [1], "judge": [6]}
