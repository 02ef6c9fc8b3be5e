"""Optional features without their extra: one `error:` line naming the extra; the core needs none."""

from __future__ import annotations

import json
import subprocess
import sys
from contextlib import AbstractContextManager
from pathlib import Path
from unittest import mock

import pytest

from origamig.sim.metrics import METRIC_NAMES
from origamig.study.results import runs_document
from tests.cli_helpers import run_main
from tests.paths import ROOT

EXAMPLE = ROOT / "examples" / "fragmented-a100.json"
# The vendor packages of the extras: cpsat, sim, dask (and their submodules imported by name).
OPTIONAL = ("ortools", "matplotlib", "dask", "distributed")


def _absent(*names: str) -> AbstractContextManager[object]:
    """sys.modules entries of None: importing any of `names` (or a submodule) raises ImportError."""
    hidden = {m: None for m in list(sys.modules) if m.split(".")[0] in names}
    for name in names:
        hidden[name] = None
    return mock.patch.dict(sys.modules, hidden)


def _one_error_line(code: int, out: str, err: str, extra: str) -> str:
    assert code == 2, err
    assert "Traceback" not in err and err.count("\n") == 1 and err.startswith("error: ")
    assert f"pip install 'origamig[{extra}]'" in err
    return err.strip()


def test_cpsat_without_ortools_names_the_cpsat_extra() -> None:
    with _absent("ortools"):
        line = _one_error_line(*run_main(["solve", str(EXAMPLE), "--solver", "cpsat"]), "cpsat")
    assert line.startswith("error: --solver cpsat: ortools is not installed")


def test_report_without_matplotlib_names_the_sim_extra_and_writes_nothing(tmp_path: Path) -> None:
    cfg = {"load": 0.85, "pms": 4, "variant": "default", "warmup_s": 60.0, "measure_s": 60.0}
    run = {"policy": "ff", "seed": 1, "config": cfg, "metrics": dict.fromkeys(METRIC_NAMES, 0.5)}
    results = tmp_path / "r.json"
    results.write_text(json.dumps(runs_document([run])))
    png, md = tmp_path / "f.png", tmp_path / "t.md"
    with _absent("matplotlib"):
        code, out, err = run_main(["report", str(results), "--png", str(png), "--markdown", str(md)])
    assert _one_error_line(code, out, err, "sim").startswith("error: drawing a figure: matplotlib")
    assert not png.exists() and not md.exists()


def test_scheduler_without_distributed_names_the_dask_extra(tmp_path: Path) -> None:
    out_file = tmp_path / "runs.json"
    args = ["simulate", "--policy", "ff", "--pms", "4", "--seeds", "1", "--out", str(out_file)]
    with _absent("dask", "distributed"):
        line = _one_error_line(*run_main([*args, "--scheduler", "tcp://127.0.0.1:9"]), "dask")
    assert line.startswith("error: --scheduler: distributed is not installed")
    assert not out_file.exists()


def test_serve_without_the_web_stack_names_the_serve_extra(tmp_path: Path) -> None:
    token, state = tmp_path / "token", tmp_path / "state.db"
    token.write_text("a-token-of-at-least-sixteen-characters\n")
    args = ["serve", "--state", str(state), "--from", str(EXAMPLE), "--token-file", str(token)]
    with _absent("starlette", "uvicorn"):
        line = _one_error_line(*run_main(args), "serve")
    assert line.startswith("error: origamig serve: starlette is not installed")
    assert not state.exists()


# Run in a fresh interpreter: an import hook refuses every optional package, as a core install would.
_CORE_ONLY = """
import importlib.abc, sys
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {optional!r}:
            raise ImportError(f"refused {{name}}")
        return None
sys.meta_path.insert(0, Refuse())
sys.argv = ["origamig", "solve", {example!r}, "--json"]
from origamig.cli.app import main
main()
"""


@pytest.mark.slow
def test_the_core_install_solves_with_highs_without_any_extra() -> None:
    script = _CORE_ONLY.format(optional=OPTIONAL, example=str(EXAMPLE))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["solver"]["name"] == "highs" and doc["status"] == "improved"
