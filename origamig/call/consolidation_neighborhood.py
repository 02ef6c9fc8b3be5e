"""Algorithm 1, ConsolidationCall(h): the neighborhood of a consolidation call for class h.

Sources S = active PMs of class h, fewest VMs first, kept only if emptying them is worth their VMs'
migrations (b_j + Σ e_jk > w·CF_j + Σ 2δ_i); receivers R = the other active PMs of class h plus the
active PMs without GPUs, most free memory slices first; at most M_max/2 sources; M̂ = S, then R, up
to the limits. The loop "while some source cannot be emptied into R, drop the last source" (a count
test that ignores start slices, `fit_counts.can_empty`) changes S only, not M̂, so by default the
call runs on M̂ whatever S ends as; the `Consolidation.SOURCES` reading instead skips the call when
no source survives the loop.
"""

from __future__ import annotations

from enum import StrEnum

from origamig.call.fit_counts import can_empty
from origamig.call.kinds import CallKind
from origamig.call.neighborhood import Neighborhood, NeighborhoodBuilder
from origamig.call.neighborhood_bounds import Bounds
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import NO_GPU_CLASS, Weights


def source_worth_emptying(dc: DataCenter, j: int, weights: Weights) -> bool:
    """Line 18 of Algorithm 1: b_j + Σ_{active k} e_jk > w_p·CF_j + Σ_{i on j} 2δ_i. Remembered with
    PM j's state (`DataCenter.remembered`) for the weights it reads: a check at thousands of PMs
    recomputes only the PMs changed since the last one."""
    key = (
        "worth",
        weights.pm,
        weights.gpu,
        weights.free_start,
        weights.migration,
        weights.migration_per_gb,
        weights.vm_weights,
    )
    return dc.remembered(j, key, lambda: _worth_emptying(dc, j, weights))


def _worth_emptying(dc: DataCenter, j: int, weights: Weights) -> bool:
    pm = dc.pms[j]
    active = [k for k in range(len(pm.gpus)) if dc.gpu_active(j, k)]
    gain = weights.b(pm) + weights.gpu * len(active)
    cost = weights.free_start * sum(dc.cf(j, k) for k in active)
    cost += sum(2 * weights.delta(dc.vms[v]) for v in dc.vms_on(j))
    return gain > cost


class Consolidation(StrEnum):
    """How a consolidation neighborhood is read from Algorithm 1 (the `consolidation` policy option)."""

    FILL = "fill"  # lines 17-22 as written: M̂ = S then R, up to M_max, even when no source survives
    SOURCES = "sources"  # an earlier reading: no call unless some source can be emptied into R


def select_consolidation(
    dc: DataCenter,
    gpu_class: str,
    weights: Weights,
    bounds: Bounds,
    locked: frozenset[int] = frozenset(),
    reading: Consolidation = Consolidation.FILL,
    visited: frozenset[int] = frozenset(),
    spill: bool = False,
) -> Neighborhood:
    """Algorithm 1, ConsolidationCall(h).

    `visited`: receivers to pass over (the rotating variant: PMs that earlier calls since the last
    change already held; sources are kept). `spill`: sources beyond the M_max/2 kept in S may serve
    as receivers (as written, R holds only PMs that failed the source filter).

    `Consolidation.FILL` (default): line 20 fills M̂ with the kept sources, then the receivers,
    before the loop of lines 21-22, and that loop only shrinks S — so the call runs on up to M_max
    active PMs of the class even when no source is worth emptying or none can be emptied; the BILP
    may still switch off a GPU by moving GIs inside a PM, or empty a PM that the count test did not
    expect to empty.
    `Consolidation.SOURCES`: the neighborhood is empty (no call) unless some source survives the loop.
    """
    reading = Consolidation(reading)  # ValueError on anything else
    members = [j for j in dc.class_pms.get(gpu_class, []) if dc.is_active(j) and j not in locked]
    sources = sorted(members, key=lambda j: (dc.vm_count(j), j))
    sources = [j for j in sources if source_worth_emptying(dc, j, weights)]
    source_set = set(sources)
    receivers = [j for j in members if j not in source_set]
    if gpu_class != NO_GPU_CLASS:
        receivers += [j for j in dc.class_pms.get(NO_GPU_CLASS, []) if dc.is_active(j) and j not in locked]
    b = NeighborhoodBuilder(dc, bounds)
    kept_sources: list[int] = []
    for j in sources:
        if len(kept_sources) >= max(1, bounds.pm_limit // 2):
            break
        if b.add(j):
            kept_sources.append(j)
    if spill:
        receivers += [j for j in sources if j not in b.chosen]
    receivers = [j for j in receivers if j not in visited]
    receivers.sort(key=lambda j: (-dc.free_memory_slices(j), -dc.free_cpu_m(j), j))
    kept_receivers: list[int] = []
    for j in receivers:
        if b.full:
            break
        if b.add(j):
            kept_receivers.append(j)
    if reading is Consolidation.FILL:
        return Neighborhood(tuple(b.pms), (), (), CallKind.CONSOLIDATION, gpu_class)
    while kept_sources and not can_empty(dc, kept_sources, kept_receivers):
        kept_receivers.append(kept_sources.pop())
    if not kept_sources:
        return Neighborhood((), (), (), CallKind.CONSOLIDATION, gpu_class)
    return Neighborhood(tuple(b.pms), (), (), CallKind.CONSOLIDATION, gpu_class)
