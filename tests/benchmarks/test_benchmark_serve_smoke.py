"""`python -m benchmarks.product.serve_load` end to end at a tiny size: it runs, loses nothing, writes each
cell's JSON, and a rerun skips the cells already written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks.product.serve_load import ROUTES, kube_sample_size
from tests.paths import ROOT


def test_serve_load_smoke(tmp_path: Path) -> None:
    out = tmp_path / "serve_load.json"
    cmd = [sys.executable, "-m", "benchmarks.product.serve_load", "--pms", "20", "--vms-per-pm", "2"]
    cmd += ["--clients", "3", "--requests", "90", "--max-s", "120", "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    (cell,) = json.loads(out.read_text())["cells"].values()
    assert cell["requests"] == 90 and cell["lost"] == 0 and cell["errors"] == 0
    assert cell["startup_s"] > 0 and cell["server_peak_mb"] > 10  # a Python process with its packages
    assert set(cell["routes"]) == set(ROUTES) and cell["routes"]["healthz"]["count"] > 0
    assert all(r["p50_ms"] <= r["p99_ms"] for r in cell["routes"].values() if r["count"])
    assert set(cell["aborted_causes"]) == {"timeout", "stale_before_first_step", "stale_later"}
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert again.returncode == 0 and "already in" in again.stdout


def test_the_node_sample_is_kube_schedulers_default() -> None:
    # percentageOfNodesToScore's default: 50% less 1% per 125 nodes, at least 5%, at least 100 nodes.
    assert [kube_sample_size(n) for n in (50, 100, 1000, 5000, 10000)] == [50, 100, 420, 500, 500]
