"""A sweep's figure: titled with its scale (PMs, window, seeds) and how its error bars read."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from origamig.study.spread import ERRBAR_NOTE
from origamig.study.sweep.runs import Sweep

OURS_COLOR = "tab:blue"
POLICY_COLORS = {"ff": "tab:gray", "mfi": "tab:green", "tc": "tab:orange", "origamig": "tab:blue"}
POLICY_LABELS = {"ff": "FF", "mfi": "MFI", "tc": "TC", "origamig": "OrigaMIG"}


def figure(nrows: int, ncols: int, width: float, height: float, title: str) -> tuple[Any, Any]:
    """A matplotlib figure (Agg backend) with a suptitle naming the scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), squeeze=False)
    lines = textwrap.wrap(f"{title} ({ERRBAR_NOTE})", width=int(width * 11))
    fig.suptitle("\n".join(lines), fontsize=11)
    return fig, axes


def save_figure(fig: Any, sweep: Sweep, out_dir: Path, bottom: float = 0.0) -> Path:
    """Write <out_dir>/<name>-<scale>.png (the figure of the sweep's results file, redrawn with it);
    `bottom` leaves room for a figure-wide legend."""
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{sweep.name}-{sweep.scale.name}.png"
    lines = fig.get_suptitle().count("\n") + 1
    top = 1.0 - 0.2 * (lines + 0.5) / fig.get_figheight()  # room for the title (inches → fraction)
    fig.tight_layout(rect=(0, bottom, 1, top))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
