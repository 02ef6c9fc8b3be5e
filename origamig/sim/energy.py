"""Power of a PM and its GPUs (docs/simulator.md#energy, paper §6.2 and Table 7).

A PM that hosts no VM is off and draws nothing (switching is free). An active PM draws its server's
SPECpower curve at its CPU load (share of its cores the VMs use), interpolated linearly. A GPU with
GIs draws P_idle + (P_max − P_idle)·u, u the share of its compute slices in use; a GPU without GIs
on an active PM draws P_idle (a GPU cannot power off while its PM runs).
"""

from __future__ import annotations

from collections.abc import Sequence

from origamig.cluster.catalog import Catalog, PmModel, default_catalog
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import PmSpec


def gpu_power_w(idle_w: float, max_w: float, used_compute: int, compute_slices: int) -> float:
    """Power of one GPU of an active PM with `used_compute` of its `compute_slices` in use."""
    return idle_w + (max_w - idle_w) * used_compute / compute_slices


class PowerModel:
    """Per-PM power curves looked up once; `pm_power_w(dc, j)` is O(GPUs of the PM)."""

    def __init__(self, pms: Sequence[PmSpec], catalog: Catalog | None = None) -> None:
        cat = catalog or default_catalog()
        self.curves: list[PmModel] = [cat.pm(p.power_model) for p in pms]
        self.cpu_m = [p.cpu_m for p in pms]
        self.gpus = [tuple((g.idle_power_w, g.max_power_w, g.compute_slices) for g in p.gpus) for p in pms]

    def pm_power_w(self, dc: DataCenter, j: int) -> float:
        """Power of PM j in state `dc`: 0 when it hosts no VM."""
        return self.pm_state(dc, j)[0]

    def gpu_share(self, dc: DataCenter, j: int) -> float:
        """GPUs' worth of compute in use on PM j (a GI counts as its share of compute slices)."""
        return self.pm_state(dc, j)[1]

    def pm_state(self, dc: DataCenter, j: int) -> tuple[float, float]:
        """(power in W, GPUs' worth of compute in use) of PM j, in one pass over its GPUs."""
        if not dc.is_active(j):
            return 0.0, 0.0
        watts = self.curves[j].power_at(1.0 - dc.free_cpu_m(j) / self.cpu_m[j])
        share = 0.0
        for k, (idle, peak, compute) in enumerate(self.gpus[j]):
            used = dc.used_compute(j, k)
            watts += idle + (peak - idle) * used / compute
            share += used / compute
        return watts, share

    def total_w(self, dc: DataCenter) -> float:
        return sum(self.pm_power_w(dc, j) for j in range(len(self.cpu_m)))
