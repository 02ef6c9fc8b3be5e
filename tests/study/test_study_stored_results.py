"""The stored quick results of benchmarks/results/ recompute identically with this code.

The cheapest stored cell of each policy other than OrigaMIG (seconds each) is run again from the
configuration its record names and compared field by field (metrics, counters, requests, calls):
the sweep engine, the simulator and the policies compute what they computed when the file was made.
`python -m benchmarks.<group>.<name> --quick --adopt` does the same for OrigaMIG's cells (minutes)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from benchmarks import RESULTS
from origamig.study import sweep
from origamig.study.sweep.records import differences, record

STORED = ("loads", "migration_penalty", "extensions")


@pytest.mark.parametrize("name", STORED)
def test_stored_quick_cells_recompute_identically(name: str) -> None:
    stored = sweep.load_sweep(name, sweep.QUICK, RESULTS)
    cheap = [r for r in sweep.adoption_sample(stored.runs) if r.policy != "origamig"]
    assert cheap, f"{name}: no stored FF/MFI/TC cell to recompute"
    cells = sweep.cells_of(cheap, stored.scale)
    assert [c.key for c in cells] == [r.cell for r in cheap]  # the record names its whole config
    results = sweep.run_all([c.spec() for c in cells])
    for r, cell, result in zip(cheap, cells, results, strict=True):
        assert differences(r, record(cell, result, "now")) == [], f"{name}: {r.cell}"


def test_a_changed_result_is_told_apart() -> None:
    stored = sweep.load_sweep("loads", sweep.QUICK, RESULTS)
    ff = next(r for r in stored.runs if r.policy == "ff")
    before = ff.metrics["active_pms"]
    assert before is not None
    changed = replace(ff, metrics={**ff.metrics, "active_pms": before + 1e-9})
    after = changed.metrics["active_pms"]
    assert differences(ff, changed) == [f"metrics.active_pms: {before!r} stored, {after!r} now"]
    timed = {"wall_s": 1.0, "median_call_s": 2.0, "time_solve_s": 3.0}  # the machine's timings
    assert differences(ff, replace(ff, counters={**ff.counters, **timed})) == []


def test_a_cell_key_names_its_settings_not_where_the_trace_is() -> None:
    stored = sweep.load_sweep("loads", sweep.QUICK, RESULTS)
    cell = sweep.cells_of(stored.runs[:1], stored.scale)[0]
    elsewhere = cell.config.replace(trace_dir="/some/copy/of/the/trace")
    assert sweep.cell_key(cell.row, cell.col, cell.policy, cell.seed, elsewhere) == cell.key
    busier = cell.config.replace(load=cell.config.load + 0.05)
    assert sweep.cell_key(cell.row, cell.col, cell.policy, cell.seed, busier) != cell.key
