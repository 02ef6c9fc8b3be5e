"""How a metric's spread over seeds is shown: the 95% Student-t interval from 3 seeds on, the range
of the values (min–max) below 3 (a t-interval over two seeds is ±12.7 standard errors and says
nothing a reader can use)."""

from __future__ import annotations

from collections.abc import Sequence

from origamig.study.aggregate import MeanCi

SPREAD_NOTE = "± is the 95% CI over seeds when n ≥ 3; below 3 seeds (min–max) is the range of the seeds"
ERRBAR_NOTE = "bars: 95% CI over seeds when n ≥ 3, else min–max over seeds"


def errbar(stats: MeanCi, factor: float = 1.0) -> tuple[float, float]:
    """(below, above) the mean for an error bar: the 95% CI when n ≥ 3, else the range of the values."""
    if stats.mean is None:
        return (0.0, 0.0)
    mean = stats.mean * factor
    if stats.n >= 3 and stats.ci95 is not None:
        half = abs(stats.ci95 * factor)
        return (half, half)
    values = [v * factor for v in stats.values] or [mean]
    return (max(0.0, mean - min(values)), max(0.0, max(values) - mean))


def errbars(stats: Sequence[MeanCi], factor: float = 1.0) -> list[list[float]]:
    """`yerr`/`xerr` for matplotlib: [[below...], [above...]] of the non-empty `stats`."""
    pairs = [errbar(s, factor) for s in stats if s.mean is not None]
    return [[p[0] for p in pairs], [p[1] for p in pairs]]


def spread_text(stats: MeanCi, factor: float = 1.0, digits: int = 1, sep: str = " ± ") -> str:
    """`mean ± ci` from 3 seeds, `mean (min–max)` for 2, the mean alone for 1, `–` when empty."""
    if stats.mean is None:
        return "–"
    text = f"{stats.mean * factor:.{digits}f}"
    n = stats.n
    if n >= 3 and stats.ci95 is not None:
        return f"{text}{sep}{abs(stats.ci95 * factor):.{digits}f}"
    values = [v * factor for v in stats.values]
    if n >= 2 and values:
        return f"{text} ({min(values):.{digits}f}–{max(values):.{digits}f})"
    return text
