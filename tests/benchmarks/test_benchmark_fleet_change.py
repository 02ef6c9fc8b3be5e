"""`python -m benchmarks.product.fleet_change` end to end at a tiny size: every step timed, each size
written, a rerun skipping the sizes already there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks.product.fleet_change import STEPS
from tests.paths import ROOT


def test_fleet_change_smoke(tmp_path: Path) -> None:
    out = tmp_path / "fleet_change.json"
    cmd = [sys.executable, "-m", "benchmarks.product.fleet_change", "--pms", "30", "--repeats", "2"]
    cmd += ["--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads(out.read_text())
    (cell,) = doc["cells"].values()
    assert (cell["pms"], cell["vms"], cell["repeats"]) == (30, 90, 2)
    assert set(cell["median_ms"]) == set(STEPS) and all(len(ts) == 2 for ts in cell["ms"].values())
    assert all(t > 0 for ts in cell["ms"].values() for t in ts)
    assert doc["command"].startswith("python -m benchmarks.product.fleet_change --pms 30")
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert again.returncode == 0 and "already in" in again.stdout
