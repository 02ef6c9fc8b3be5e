"""`python -m benchmarks.serve_load` end to end at a tiny size: it runs, loses nothing, writes its JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_serve_load_smoke(tmp_path: Path) -> None:
    out = tmp_path / "serve_load.json"
    cmd = [sys.executable, "-m", "benchmarks.serve_load", "--pms", "20", "--vms", "30"]
    cmd += ["--clients", "3", "--requests", "60", "--max-s", "120", "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(out.read_text())
    assert result["requests"] == 60 and result["lost"] == [] and result["errors"] == []
    assert set(result["routes"]) == {"post", "delete", "filter", "prioritize"}
    assert all(r["p50_ms"] <= r["p99_ms"] for r in result["routes"].values() if r["count"])
