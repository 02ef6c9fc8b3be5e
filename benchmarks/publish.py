"""How a benchmark script reports: the quantiles of its tables, and its finish — stamp run time and
machine load, print, write JSON and PNG."""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def quantile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0–1) of `values` by linear interpolation between order statistics (nan if empty)."""
    if not values:
        return float("nan")
    xs = sorted(values)
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def write_json(path: Path, doc: Any) -> None:
    """Write `doc` as a benchmark's JSON (indent 1) to `path`, making its folder if needed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1))


def publish(
    doc: dict[str, Any],
    out: Path,
    started: float,
    load_at_start: tuple[float, float, float],
    print_table: Callable[[dict[str, Any]], None],
    draw: Callable[[dict[str, Any], Path], None],
) -> None:
    """Add `wall_s` and the load average to `doc`, print its table, write `out` and `out`.png."""
    doc["wall_s"] = time.perf_counter() - started
    doc["meta"] = {"cpus": os.cpu_count(), "loadavg_start": load_at_start, "loadavg_end": os.getloadavg()}
    print_table(doc)
    write_json(out, doc)
    png = out.with_suffix(".png")
    draw(doc, png)
    print(f"wrote {out} and {png} in {doc['wall_s']:.0f} s")


def redraw(path: Path, show: Callable[[Any], None], draw: Callable[[Any, Path], None]) -> int:
    """`--from-json PATH`: a stored results file's table (`show`) and figure (`draw`, to PATH.png),
    nothing run; the script's exit code."""
    doc = json.loads(path.read_text())
    show(doc)
    draw(doc, path.with_suffix(".png"))
    return 0


def results_file(out: Path, default: Path) -> Path:
    """Where a benchmark writes: `out`, or `default`'s file name inside `out` when it is a folder."""
    return out / default.name if out.is_dir() else out


def scale_parser(doc: str, quick_help: str, full_help: str) -> argparse.ArgumentParser:
    """The arguments of a benchmark that records calls and replays them: `--quick` (the default) or
    `--full`, and `--replay FILE` to replay a recorded calls file instead of simulating."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help=quick_help)
    mode.add_argument("--full", action="store_true", help=full_help)
    ap.add_argument("--replay", type=Path, help="replay this recorded calls file instead of simulating")
    return ap
