"""benchmarks/paper/growth_regime.py (Fig. 7 in the paper's regime): its cells — calls at the
paper's median or at its 10 s limit, the measured day after five tenant lifetimes, three seeds — and,
end to end on 8 and 16 PMs over 1 h + 1 h, its tables, JSON, figure and replot."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from benchmarks import sweep_cli
from benchmarks.paper import growth_regime as regime
from origamig.errors import UserError
from origamig.study import sweep

TINY = dataclasses.replace(regime.QUICK, name="tiny", warmup_h=1, measure_h=1, work_limit=20)


def test_cells_run_every_regime_at_every_size_over_three_seeds_after_a_steady_warm_up() -> None:
    cells = regime.cells(regime.FULL, regime.SIZES)
    assert {c.seed for c in cells} == {1, 2, 3}
    assert (regime.FULL.warmup_h, regime.FULL.measure_h) == (120, 24)  # five tenant lifetimes, one day
    rows = {(c.col, c.row) for c in cells}
    assert rows == {
        (str(p), r) for p in (128, 256, 512, 1024) for r in ("ff", "tc", *map(regime.row_of, regime.REGIMES))
    }
    for c in cells:
        options = dict(c.config.policy_options)
        assert c.config.load == 0.85 and c.config.pms == int(c.col)
        if c.row == "origamig-paper-median":
            # The modeled call (0.33 s at the median) scaled to the paper's median at this size.
            expected = regime.paper_median_call_s(c.config.pms) / regime.OUR_MEDIAN_CALL_S
            assert options["call_time_scale"] == pytest.approx(expected, abs=1e-3)
            assert c.config.deterministic and options["work_limit"] == 100
        elif c.row == "origamig-wall-10s":
            assert not c.config.deterministic and "work_limit" not in options
            assert options["time_limit_s"] == 10.0
        elif c.row == "origamig-modeled":
            assert c.config.deterministic and "call_time_scale" not in options
    # The paper's medians at its two sizes, geometric between (4.26 · (9.97 / 4.26)^(1/3) at 256).
    assert regime.paper_median_call_s(128) == pytest.approx(4.26)
    assert regime.paper_median_call_s(1024) == pytest.approx(9.97)
    assert regime.paper_median_call_s(256) == pytest.approx(4.26 * (9.97 / 4.26) ** (1 / 3))
    assert len({c.key for c in cells}) == len(cells)


def test_an_unknown_regime_is_named() -> None:
    with pytest.raises(UserError, match="unknown 'paper'"):
        regime.regime_config(regime.FULL, 128, "paper")


def test_growth_regime_smoke(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cells = regime.cells(TINY, (8, 16), ("modeled", "paper-median"))
    sw = sweep.run(regime.NAME, TINY, cells, workers=1, show_progress=False, out_dir=tmp_path)
    findings = regime.analyse(sw, (8, 16))
    regime.print_tables(sw, findings)
    out = capsys.readouterr().out
    assert "OrigaMIG, paper regime: calls at the paper's median" in out
    assert "OrigaMIG, our regime: modeled calls" in out
    assert set(findings["16"]["rows"]) == {"ff", "tc", "origamig-modeled", "origamig-paper-median"}
    assert findings["16"]["rows"]["origamig-paper-median"]["call_time_scale"] == regime.call_time_scale(16)
    assert findings["8"]["rows"]["ff"]["fewer_pms_than_ff_pct"] is None
    path = sweep.write_json(sw, {"findings": findings}, tmp_path)
    png = regime.draw(sw, findings, tmp_path)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    doc = json.loads(path.read_text())
    assert {r["col"] for r in doc["runs"]} == {"8", "16"}
    back = sweep.load_sweep(regime.NAME, TINY, tmp_path)
    assert regime.analyse(back, (8, 16)) == findings


def test_another_warm_up_gets_a_results_file_of_its_own() -> None:
    growth_day = sweep_cli.with_warmup(regime.FULL, 48)
    assert (growth_day.name, growth_day.warmup_h) == ("full-warmup48h", 48)
    assert sweep_cli.with_warmup(regime.FULL, 120) is regime.FULL
    assert sweep_cli.with_warmup(regime.FULL, None) is regime.FULL
    args = regime.build_parser().parse_args(["--warmup", "48"])
    assert args.warmup == 48
