"""`benchmarks/product/scale.py` on tiny clusters: every cell is solved by a real process, judged by the
independent replay, written at once, and skipped on a rerun."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from benchmarks.product import scale
from origamig.snapshot.document import parse_snapshot


def test_the_clusters_are_valid_snapshots_with_half_the_servers_in_use() -> None:
    doc = scale.cluster(40, pending=3)
    snap = parse_snapshot(doc)
    assert len(snap.pms) == 40 and len(snap.pending) == 3
    hosts = {pl.pm for pl in snap.placement.values()}
    assert len(hosts) == 20


def test_scale_solves_each_size_and_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "scale.json"
    monkeypatch.setattr(sys, "argv", ["scale", "--servers", "12,24", "--pending", "2", "--out", str(out)])
    scale.main()
    doc = json.loads(out.read_text())
    cells = doc["cells"]
    assert sorted(cells) == ["this 12", "this 24"]
    for cell in cells.values():
        assert cell["replay_ok"] and cell["admitted"] <= cell["pending"] == 2
        assert cell["wall_s"] > 0 and cell["peak_mb"] > 10  # a Python process's resident memory
    assert out.with_suffix(".png").stat().st_size > 0
    before = out.read_text()
    scale.main()  # every cell is there: nothing runs again
    assert json.loads(out.read_text())["cells"] == json.loads(before)["cells"]
