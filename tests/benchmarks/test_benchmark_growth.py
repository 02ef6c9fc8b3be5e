"""benchmarks/paper/growth.py (the paper's Fig. 7): its cells — one column per PM count, OrigaMIG rows
deduplicated by calls per check — and, end to end on 8 and 16 PMs over 1 h + 1 h, its tables, JSON,
figure, replot and adoption of runs of other code at every size."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import pytest

from benchmarks.paper import growth
from origamig.errors import UserError
from origamig.sim.scenario import build_pms
from origamig.study import sweep

TINY = dataclasses.replace(growth.QUICK, name="tiny", warmup_h=1, measure_h=1, work_limit=20)


def test_cells_one_column_per_size_and_one_run_per_calls_per_check() -> None:
    cells = growth.cells(growth.FULL, (128, 256, 512, 4096))
    by_col: dict[str, list[str]] = {}
    for c in cells:
        by_col.setdefault(c.col, []).append(c.row)
        assert c.config.pms == int(c.col) and c.config.load == growth.LOAD
        assert (c.config.warmup_s, c.config.measure_s) == (48 * 3600, 24 * 3600)
        options = dict(c.config.policy_options)
        if c.policy == "origamig":
            assert options["work_limit"] == 100 and options["time_limit_s"] is None
            assert options.get("calls_per_step", 1) == (
                1 if c.row == "origamig" else int(c.row.split("-k")[1])
            )
        else:
            assert options == {}
    # side-scaled is K = PMs/128: the paper's OrigaMIG at 128 PMs, side-4 at 512: no second run.
    assert by_col == {
        "128": ["ff", "tc", "origamig", "origamig-k4"],
        "256": ["ff", "tc", "origamig", "origamig-k4", "origamig-k2"],
        "512": ["ff", "tc", "origamig", "origamig-k4"],
        "4096": ["ff", "tc", "origamig", "origamig-k4", "origamig-k32"],
    }
    assert len({c.key for c in cells}) == len(cells)
    # The same row at two sizes is two cells (the PM count is in the key's fingerprint).
    assert len({c.key.split("|")[-1] for c in cells if c.row == "ff"}) == 4


def test_solve_workers_reach_the_side_rows_and_keep_every_cell_key() -> None:
    # The processes that solve a check's calls change the wall time only: a run with them resumes,
    # and is stored as, the cell of the run without them.
    plain = growth.cells(growth.FULL, (128, 512))
    parallel = growth.cells(growth.FULL, (128, 512), solve_workers=2)
    assert [c.key for c in parallel] == [c.key for c in plain]
    for c in parallel:
        side = dict(c.config.policy_options).get("calls_per_step", 1) > 1
        assert dict(c.config.policy_options).get("solve_workers") == (2 if side else None)


def test_every_size_keeps_the_mix_and_the_load_per_pm() -> None:
    for pms in (128, 1024):
        (cell,) = [c for c in growth.cells(growth.FULL, (pms,), ("ff",))]
        gpus = [tuple(g.name for g in pm.gpus) for pm in build_pms(cell.config)]
        assert gpus.count(("A100-40GB", "A100-40GB")) == 3 * pms // 4
        assert gpus.count(("A30-24GB", "A30-24GB")) == pms // 4


def test_row_names_and_sizes_are_checked() -> None:
    assert growth.calls_per_step("side-scaled", 2048) == 16
    assert growth.calls_per_step("side-8", 128) == 8
    with pytest.raises(UserError, match="unknown 'side-0'"):
        growth.calls_per_step("side-0", 128)
    with pytest.raises(UserError, match="multiple of 4"):
        growth.parse_sizes("128,130", growth.SIZES)
    assert growth.parse_sizes(None, growth.QUICK_SIZES) == (128, 256)


def _args(out: Path, **changes: object) -> argparse.Namespace:
    args = growth.build_parser().parse_args(["--out", str(out), "--workers", "1", "--no-progress"])
    for k, v in changes.items():
        setattr(args, k, v)
    return args


def test_growth_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    names = ("ff", "tc", "origamig", "side-2", "side-scaled")
    cells = growth.cells(TINY, (8, 16), names)
    sw = sweep.run(growth.NAME, TINY, cells, workers=1, show_progress=False, out_dir=tmp_path)
    findings = growth.analyse(sw, (8, 16))
    growth.print_tables(sw, findings)
    out = capsys.readouterr().out
    assert "8 PMs (6 x 2 A100 + 2 x 2 A30)" in out and "16 PMs (12 x 2 A100 + 4 x 2 A30)" in out
    assert set(findings["16"]) == {"ff", "tc", "origamig", "origamig-k2"}
    assert findings["16"]["origamig"]["names"] == ["origamig", "side-scaled"]
    assert findings["16"]["origamig-k2"]["calls_per_step"] == 2
    assert findings["16"]["ff"]["fewer_pms_than_ff_pct"] is None
    rebuilt = sweep.cells_of(sw.runs, sw.scale)
    assert {c.key for c in rebuilt} == {c.key for c in cells}  # stored runs rebuild at their own size
    path = sweep.write_json(sw, {"findings": findings}, tmp_path)
    png = growth.draw(sw, findings, tmp_path)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    doc = json.loads(path.read_text())
    assert {r["col"] for r in doc["runs"]} == {"8", "16"}
    back = sweep.load_sweep(growth.NAME, TINY, tmp_path)
    assert growth.analyse(back, (8, 16)) == findings

    # Runs of other code are adopted at every size: each record names its PM count.
    for r in doc["runs"]:
        r["code"] = "other"
    path.write_text(json.dumps(doc))
    with pytest.raises(UserError, match="made by other code"):
        sweep.stored_runs(growth.NAME, TINY, tmp_path)
    sweep.adopt(growth.NAME, TINY, tmp_path, 1, None, show=False)
    assert len(sweep.stored_runs(growth.NAME, TINY, tmp_path)) == len(cells)


def test_gather_puts_rows_run_by_separate_commands_in_one_table(tmp_path: Path) -> None:
    folders = {name: tmp_path / name for name in ("ff", "tc")}
    for name, folder in folders.items():
        sweep.run(growth.NAME, TINY, growth.cells(TINY, (8,), (name,)), 1, None, False, folder)
    sw = growth.gathered(TINY, [folders["ff"], folders["tc"]])
    assert sorted(r.row for r in sw.runs) == ["ff", "tc"]
    findings = growth.analyse(sw, (8,))
    tc = findings["8"]["tc"]
    ff_pms = findings["8"]["ff"]["active_pms"]
    assert tc["fewer_pms_than_ff_pct"] == pytest.approx(100 * (ff_pms - tc["active_pms"]) / ff_pms)
    twice = growth.gathered(TINY, [folders["ff"], folders["tc"], folders["ff"]])  # the same run: once
    assert sorted(r.row for r in twice.runs) == ["ff", "tc"]
    doc_path = sweep.results_path(growth.NAME, TINY, folders["ff"])
    doc = json.loads(doc_path.read_text())
    doc["runs"][0]["metrics"]["active_pms"] += 1  # another run of the same cell
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / doc_path.name).write_text(json.dumps(doc))
    with pytest.raises(UserError, match="--gather: ff at 8 PMs differs between"):
        growth.gathered(TINY, [folders["ff"], tmp_path / "other"])
