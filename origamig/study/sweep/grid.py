"""The cells of a policies × loads × seeds comparison at a scale (`origamig study`, Fig. 4's sweep)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from origamig.study.sweep.cells import Cell
from origamig.study.sweep.scale import Scale


def policy_load_cells(
    scale: Scale,
    loads: Sequence[float],
    policies: Sequence[str],
    options: Sequence[tuple[str, Any]] = (),
) -> list[Cell]:
    """One cell per (load, policy, seed of the scale): row = policy, column = load. OrigaMIG runs with
    the scale's call budget (`Scale.origamig_options`), `options` overriding; the other policies take
    `options` as given (each takes the ones it knows)."""
    out: list[Cell] = []
    for load in loads:
        for policy in policies:
            chosen = (
                scale.origamig_options(**dict(options)) if policy == "origamig" else tuple(sorted(options))
            )
            config = scale.config(load=load, policy_options=chosen)
            out.extend(Cell(policy, f"{load:g}", policy, config, seed) for seed in scale.seeds)
    return out
