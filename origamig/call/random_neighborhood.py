"""The ablation's random neighborhoods (`random_neighborhoods`): random active PMs within the bounds."""

from __future__ import annotations

import random
from collections.abc import Sequence

from origamig.call.admission_neighborhood import select_admission
from origamig.call.kinds import CallKind
from origamig.call.neighborhood import Neighborhood, NeighborhoodBuilder
from origamig.call.neighborhood_bounds import Bounds
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import NO_GPU_CLASS


def select_random(
    dc: DataCenter,
    rng: random.Random,
    bounds: Bounds,
    queue: Sequence[str] = (),
    gpu_class: str | None = None,
    locked: frozenset[int] = frozenset(),
) -> Neighborhood:
    """The ablation's random neighborhoods: random active PMs within the bounds.

    An admission call still starts from the first PM that fits the oldest pending VM (so that every
    call reaches a decision for it), then adds random active PMs of the classes involved.
    """
    if queue:
        nb = select_admission(dc, queue[:1], Bounds(1, bounds.n_max, bounds.bound, 1), locked)
        if not nb.pending:
            return nb
        classes = set(dc.pending[queue[0]].gpu_classes)
    else:
        nb = Neighborhood((), (), (), CallKind.CONSOLIDATION, gpu_class)
        classes = {gpu_class or NO_GPU_CLASS}
    b = NeighborhoodBuilder(dc, bounds)
    for j in nb.pms:
        b.add(j, force=True, extra_vms=len(nb.pending))
    pool = sorted(
        j
        for h in classes
        for j in dc.class_pms.get(h, [])
        if dc.is_active(j) and j not in locked and j not in b.chosen
    )
    rng.shuffle(pool)
    for j in pool:
        if b.full:
            break
        b.add(j)
    return Neighborhood(tuple(b.pms), nb.pending, nb.rejected, nb.kind, gpu_class)
