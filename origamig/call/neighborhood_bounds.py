"""How large a neighborhood of an OrigaMIG call may be (Algorithm 1's M_max and N_max).

At most `m_max` PMs; a PM whose VMs would raise |N̂| above `n_max` is skipped, except the first PM
chosen for the oldest pending VM. With `bound="vms"` only `n_max` bounds a neighborhood (and `pm_cap`
PMs, a safety cap). `derived_bounds` scales the paper's bounds to servers with more GPUs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from origamig.cluster.records import PmSpec


class Bound(StrEnum):
    """What bounds a neighborhood."""

    PMS = "pms"  # M_max PMs and N_max VMs (the paper's)
    VMS = "vms"  # N_max VMs only, and `pm_cap` PMs as a safety cap (paper §7's proposal)


@dataclass(frozen=True)
class Bounds:
    """Neighborhood limits: M_max PMs and N_max VMs (paper: 16 and 64), or VMs only."""

    m_max: int = 16
    n_max: int = 64
    bound: Bound = Bound.PMS
    pm_cap: int = 256

    def __post_init__(self) -> None:
        object.__setattr__(self, "bound", Bound(self.bound))  # ValueError on anything else

    @property
    def pm_limit(self) -> int:
        return self.m_max if self.bound is Bound.PMS else self.pm_cap


# --- bounds for bigger servers ---------------------------------------------------------------------
NEIGHBORHOOD_GPUS = 32  # the paper's neighborhood: M_max = 16 PMs of 2 GPUs, N_max = 64 VMs
VMS_PER_GPU = 2  # N_max per GPU of the neighborhood (64 / 32)
MIN_M_MAX = 4  # room for two sources and two receivers in a consolidation call


def derived_bounds(pms: Sequence[PmSpec]) -> tuple[int, int]:
    """(M_max, N_max) that keep the paper's neighborhood size in GPUs on PMs with more GPUs.

    With g the mean number of GPUs of the PMs that have GPUs: M_max = max(4, ⌈32 / g⌉) PMs and
    N_max = round(2 · M_max · g) VMs — 16 and 64 for the paper's 2-GPU servers, 8 and 64 for 4-GPU
    servers, 4 and 64 for 8-GPU servers. Without GPUs: the paper's 16 and 64.
    """
    counts = [len(pm.gpus) for pm in pms if pm.gpus]
    if not counts:
        return Bounds.m_max, Bounds.n_max
    g = sum(counts) / len(counts)
    m_max = max(MIN_M_MAX, math.ceil(NEIGHBORHOOD_GPUS / g - 1e-9))
    return m_max, round(VMS_PER_GPU * m_max * g)
