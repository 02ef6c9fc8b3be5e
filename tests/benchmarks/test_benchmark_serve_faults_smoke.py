"""`python -m benchmarks.product.serve_faults` at its smallest: the plan-memory cell from the command
line (JSON written, a rerun skips it), and one attack cell on this checkout's server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.product.serve_faults import attack
from tests.paths import ROOT


def test_the_plan_memory_cell_is_written_and_kept(tmp_path: Path) -> None:
    out = tmp_path / "serve_faults.json"
    cmd = [sys.executable, "-m", "benchmarks.product.serve_faults", "--cells", "plans", "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    cell = json.loads(out.read_text())["cells"]["plans"]
    small, large = cell["10 steps"], cell["40 steps"]
    assert 0 < small["memory_kib_per_plan"] < large["memory_kib_per_plan"]  # more steps, more memory
    assert 0 < small["state_kib_per_plan"] < large["state_kib_per_plan"]
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert again.returncode == 0 and "already in" in again.stdout


@pytest.mark.slow
def test_a_flood_under_a_small_file_limit_is_cut_and_the_probes_answered() -> None:
    cell = attack("flood-256", ROOT)
    assert cell["connected"] == 300 and cell["cut_s"] is not None, cell
    # A probe shares the flood's address here (loopback) and its share of connections: one caught in
    # the flood's first burst may be closed to make room; nearly all are answered.
    assert cell["probes"] > 0 and cell["probes_answered"] >= 0.9 * cell["probes"], cell
