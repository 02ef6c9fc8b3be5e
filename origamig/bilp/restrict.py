"""Restriction to a neighborhood (paper §5.3): the free part of the BILP, in O(neighborhood).

A call optimizes the VMs running on the neighborhood's PMs M̂ plus the call's pending VMs, on M̂
only. Everything else is fixed at its current value: in the full model that means x_ij = 0 for a
region VM and a PM outside M̂, and every variable of an outside PM or VM at its current value. Fixed
variables only add a constant to Eq. (5) — the objective of the outside PMs and VMs — so the free
part is a model of its own: the region's PMs with their full capacities (nothing outside runs on
them) and the region's VMs. `Region` is that free part; `fixed_constant` is the constant. (The tests
apply the same restriction to a full model by fixing variables, and compare.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, PmSpec, VmSpec, Weights
from origamig.errors import PlacementError
from origamig.judge.objective import Objective, evaluate


@dataclass(frozen=True)
class Region:
    """The free part of a call: PMs (data-center indices), their VMs and the call's pending VMs."""

    pms: tuple[int, ...]
    pm_specs: dict[int, PmSpec]
    vms: dict[str, VmSpec]  # running VMs of the region first (by PM, then placement order), then pending
    previous: dict[str, Placement]  # the running VMs' current placement
    pending: tuple[str, ...]
    intra_pm_moves: bool = True  # the platform can move a VM between GIs of one PM

    @property
    def running(self) -> tuple[str, ...]:
        return tuple(self.previous)


def restrict(dc: DataCenter, region_pms: Sequence[int], pending: Sequence[str]) -> Region:
    """The free part for neighborhood `region_pms` and the call's `pending` VM ids. O(neighborhood)."""
    pms = tuple(dict.fromkeys(region_pms))
    problems = [f"region_pms: PM index {j} does not exist" for j in pms if not 0 <= j < len(dc.pms)]
    problems += [f"pending: VM {v!r} is not pending" for v in pending if v not in dc.pending]
    if problems:
        raise PlacementError(problems)
    vms: dict[str, VmSpec] = {}
    previous: dict[str, Placement] = {}
    for j in pms:
        for v in dc.vms_on(j):
            vms[v] = dc.vms[v]
            previous[v] = dc.placement[v]
    waiting = tuple(dict.fromkeys(pending))
    for v in waiting:
        vms[v] = dc.pending[v]
    return Region(pms, {j: dc.pms[j] for j in pms}, vms, previous, waiting, dc.intra_pm_moves)


def fixed_constant(dc: DataCenter, region: Region, weights: Weights) -> Objective:
    """Eq. (5) of everything outside the region at its current placement — O(data center).

    Solving the full model with the outside fixed gives the region's optimum plus this constant.
    Pending VMs outside the call count as not admitted (they contribute nothing).
    """
    inside = set(region.pms)
    outside_pms = [j for j in range(len(dc.pms)) if j not in inside]
    outside_vms = [v for v in dc.vms if v not in region.vms]
    return evaluate(dc.pms, dc.vms, dc.placement, dc.placement, weights, outside_pms, outside_vms)
