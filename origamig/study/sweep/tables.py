"""A sweep's metrics as tables show them: labels and units, the paper's value at our scale, cells."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from origamig.study.aggregate import MeanCi
from origamig.study.spread import spread_text
from origamig.study.sweep.scale import Scale


@dataclass(frozen=True)
class Shown:
    """A metric as a table shows it: key in the run's metrics, label with unit, factor, digits, and how
    the paper's value scales to ours ("pms": with the PM count, "energy": PMs and measured hours)."""

    key: str
    label: str
    factor: float = 1.0
    digits: int = 1
    paper_key: str | None = None
    extensive: str | None = None


SHOWN = (
    Shown("acceptance", "Accept. (%)", 100, 1, "acceptance_pct"),
    Shown("active_pms", "Active PMs", 1, 1, "active_pms", "pms"),
    Shown("active_pms_pct", "Active PMs (% of PMs)", 1, 1),
    Shown("pms_per_100_gpus_served", "Active PMs per 100 GPUs served", 1, 2),
    Shown("active_gpus_pct", "Active GPUs (%)", 1, 1, "active_gpus_pct"),
    Shown("packing_density", "Packing (%)", 100, 1, "packing_pct"),
    Shown("energy_mwh", "Energy (MWh)", 1, 3, "energy_mwh", "energy"),
    Shown("energy_kwh_per_gpu_hour", "Energy per GPU-h (kWh)", 1, 3),
    Shown("switch_ons_per_hour", "Switch-ons/h", 1, 1, "switch_ons_per_hour", "pms"),
    Shown("migrations_per_hour", "Migr./h", 1, 1, "migrations_per_hour", "pms"),
    Shown("migrated_gb_per_hour", "Migrated GB/h", 1, 0, "migrated_gb_per_hour", "pms"),
    Shown("mean_wait_s", "Wait (s)", 1, 1, "mean_wait_s"),
    Shown("calls_per_hour", "Calls/h", 1, 1, "calls_per_hour", "pms"),
    Shown("median_call_s", "Median call (s)", 1, 2, "median_call_s"),
)
SHOWN_BY_KEY = {s.key: s for s in SHOWN}


def paper_at_scale(value: float | None, shown: Shown, scale: Scale) -> float | None:
    """The paper's value (128 PMs, 72 h measured) as it would read at `scale` (extensive metrics only)."""
    if value is None:
        return None
    if shown.extensive == "pms":
        return value * scale.pms / 128
    if shown.extensive == "energy":
        return value * scale.pms / 128 * scale.measure_h / 72
    return value


def fmt(stats: MeanCi, scale: float = 1.0, digits: int = 1) -> str:
    """A metric over seeds times `scale` as a table cell (`spread.spread_text`)."""
    return spread_text(stats, scale, digits)


def ref(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def print_table(title: str, header: Sequence[str], rows: Iterable[Sequence[str]], caption: str = "") -> None:
    """A rich table (first column left-aligned, the others right-aligned)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, caption=caption, show_lines=False)
    for n, h in enumerate(header):
        table.add_column(h, justify="left" if n == 0 else "right", no_wrap=n == 0)
    for row in rows:
        table.add_row(*row)
    Console(width=max(120, 14 * len(header))).print(table)
