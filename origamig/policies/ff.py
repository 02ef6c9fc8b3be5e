"""First-Fit (FF, paper §6.3): first-fit PM selection with the default GI placement.

Rule: `first_fit.first_fit` — the first PM in data-center order (not locked, with a GPU of the VM's
class and enough free CPU/RAM) on which every GI, largest first, gets the lowest-index GPU where the
default GI placement (CF-max start) finds a start; a VM that fits nowhere is rejected.
Tie-break: lowest PM, then lowest GPU; the start is the CF-max one, lowest on ties.
Complexity: O(|M| · |GIs| · |K_j|) table lookups per arrival. No periodic work, no migrations.
"""

from __future__ import annotations

from origamig.datacenter import DataCenter, VmSpec
from origamig.policies.base import ArrivalDecision, Placed, Rejection, Work, register
from origamig.policies.first_fit import first_fit


@register("ff")
class FirstFit:
    """FF: place on arrival by the shared first-fit rule, reject what does not fit."""

    name = "ff"

    def __init__(self) -> None:
        self._admitted = 0
        self._rejected = 0

    def arrive(self, dc: DataCenter, vm: VmSpec, now: float, locked: frozenset[int]) -> ArrivalDecision:
        hit = first_fit(dc, vm, locked)
        if isinstance(hit, Rejection):
            self._rejected += 1
            return hit
        self._admitted += 1
        return Placed(hit)

    def depart(self, dc: DataCenter, vm_id: str, now: float) -> None:
        return None

    def next_check(self, now: float) -> float | None:
        return None

    def work(self, dc: DataCenter, now: float) -> Work | None:
        return None

    def finished(self, dc: DataCenter, work: Work, now: float) -> None:
        return None

    def counters(self) -> dict[str, float]:
        return {"admitted": self._admitted, "rejected": self._rejected, "migrations": 0, "bytes_moved": 0}
