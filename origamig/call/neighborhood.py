"""Algorithm 1 of the paper: which PMs (M̂) and VMs (N̂) an OrigaMIG call optimizes — the record
and the builder that grows one under its bounds.

The neighborhoods themselves: `admission_neighborhood.py`, `consolidation_neighborhood.py`,
`random_neighborhood.py` (the ablation's); their bounds: `neighborhood_bounds.py`; the count tests
they read: `fit_counts.py`. Cost of one: a pass over the PMs of the classes involved plus sorting,
O(|M| log |M|).
"""

from __future__ import annotations

from dataclasses import dataclass

from origamig.call.kinds import CallKind, ScopeMode
from origamig.call.neighborhood_bounds import Bounds
from origamig.cluster.datacenter import DataCenter


@dataclass(frozen=True)
class Neighborhood:
    """The PMs and VMs of one call, plus the pending VMs Algorithm 1 rejects outright."""

    pms: tuple[int, ...]
    pending: tuple[str, ...]  # pending VMs of the call (in N̂)
    rejected: tuple[str, ...] = ()  # pending VMs that fit no PM even if empty
    kind: CallKind | ScopeMode = CallKind.ADMISSION  # a scope: the servers `solve` was given
    gpu_class: str | None = None

    def vm_count(self, dc: DataCenter) -> int:
        return sum(dc.vm_count(j) for j in self.pms) + len(self.pending)


class NeighborhoodBuilder:
    """Accumulates M̂ and |N̂| under the bounds."""

    def __init__(self, dc: DataCenter, bounds: Bounds) -> None:
        self.dc, self.bounds = dc, bounds
        self.pms: list[int] = []
        self.chosen: set[int] = set()
        self.vms = 0

    @property
    def full(self) -> bool:
        return len(self.pms) >= self.bounds.pm_limit

    def take_pending(self, j: int, force: bool) -> bool:
        """Count a pending VM in N̂ with its first PM j in M̂ (adding j if needed)."""
        if j in self.chosen:
            if not force and self.vms + 1 > self.bounds.n_max:
                return False
            self.vms += 1
            return True
        return self.add(j, force=force, extra_vms=1)

    def add(self, j: int, force: bool = False, extra_vms: int = 0) -> bool:
        if j in self.chosen:
            return True
        if self.full and not force:
            return False
        load = self.dc.vm_count(j) + extra_vms
        if not force and self.vms + load > self.bounds.n_max:
            return False
        self.pms.append(j)
        self.chosen.add(j)
        self.vms += load
        return True
