"""No-good cuts: exclude a solution whose moves have no valid order, so that a re-solve finds another.

A solution is decoded from its GPU assignments (y, or x for a VM without GIs) and the configuration
q of each GPU (`compile.decode`: a GI that stays keeps its slot, the others take the configuration's
free starts in order). So the placement of a set of VMs B is fixed by the y of B's GIs and the q of
the GPUs that B's GIs land on; the row

    Σ_{GI v of i ∈ B} y[i,v,j,k]  +  Σ_{(j,k) touched} q[j,k,c]  ≤  (number of those literals) − 1

removes exactly the solutions that put B where the excluded target does, and nothing else
(docs/solving.md#no-good-cuts). B holds VMs that move or start, so the current placement — the
solver's always-feasible start — never satisfies every literal and stays feasible.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyomo.core as pyo
from pyomo.core.expr.numeric_expr import LinearExpression

from origamig.bilp.configurations import configuration_of
from origamig.bilp.model import BilpModel
from origamig.cluster.records import Placement


@dataclass(frozen=True)
class NoGood:
    """A target to exclude, by the placement of `vms` (the VMs whose moves could not be ordered)."""

    target: Mapping[str, Placement]  # the whole decoded target of the region
    vms: tuple[str, ...]


def touched_gpus(cuts: Sequence[NoGood]) -> frozenset[tuple[int, int]]:
    """(PM, GPU) of every GI of the cuts' VMs in their excluded targets: the GPUs whose q the rows
    name. Their configurations are left unpruned, so that an equally good configuration that pruning
    would have dropped (an equal one was kept instead) is still there once the kept one is excluded."""
    return frozenset(
        (pl.pm, slot.gpu)
        for cut in cuts
        for v in cut.vms
        if (pl := cut.target.get(v)) is not None
        for slot in pl.gis
    )


def add_no_goods(model: BilpModel, cuts: Sequence[NoGood]) -> None:
    """Add one row per cut to `model` (before it is compiled)."""
    if not cuts:
        return
    rows = pyo.ConstraintList()
    model.pyomo.add_component("no_good", rows)
    for cut in cuts:
        lits = _literals(model, cut.target, cut.vms)
        if lits and all(v.value == 1 for v in lits):
            raise ValueError("a no-good cut must not exclude the current placement (the solver's start)")
        if lits:
            rows.add(LinearExpression(lits) <= len(lits) - 1)


def _literals(model: BilpModel, target: Mapping[str, Placement], vms: Collection[str]) -> list[Any]:
    m, region = model.pyomo, model.region
    lits: list[Any] = []
    gpus: set[tuple[int, int]] = set()
    for i in vms:
        pl = target.get(i)
        if pl is None or i not in region.vms:
            continue
        if not pl.gis:
            lits.append(m.x[(i, pl.pm)])
        for v, slot in enumerate(pl.gis):
            lits.append(m.y[(i, v, pl.pm, slot.gpu)])
            gpus.add((pl.pm, slot.gpu))
    for j, k in sorted(gpus):
        md = model.gpu_models[(j, k)]
        slots = frozenset(
            (md.profile(region.vms[i].gis[v].name).index, slot.start)
            for i, pl in target.items()
            if pl.pm == j and i in region.vms
            for v, slot in enumerate(pl.gis)
            if slot.gpu == k
        )
        key = (j, k, configuration_of(md, slots))
        if key in m.q:
            lits.append(m.q[key])
    return lits
