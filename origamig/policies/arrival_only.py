"""The shell shared by policies that only place arrivals (FF, MFI): no periodic work, no migrations.

A subclass gives `name` and `place(dc, vm, locked) -> Placement | Rejection`; this class turns the
answer into the Protocol's decisions and counts admissions and rejections.
"""

from __future__ import annotations

from collections.abc import MutableMapping

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, VmSpec
from origamig.policies.base import ArrivalDecision, Placed, Rejection, Work


def counted(counters: MutableMapping[str, float], hit: Placement | Rejection) -> ArrivalDecision:
    """The arrival decision for a rule's answer, counted as admitted or rejected in `counters`."""
    if isinstance(hit, Rejection):
        counters["rejected"] += 1
        return hit
    counters["admitted"] += 1
    return Placed(hit)


class ArrivalOnlyPolicy:
    """Place on arrival by `place`, reject what does not fit; nothing else."""

    name = "arrival-only"

    def __init__(self) -> None:
        self._c: dict[str, float] = {"admitted": 0, "rejected": 0}

    def place(self, dc: DataCenter, vm: VmSpec, locked: frozenset[int]) -> Placement | Rejection:
        raise TypeError(f"{type(self).__name__} must define place()")

    def arrive(self, dc: DataCenter, vm: VmSpec, now: float, locked: frozenset[int]) -> ArrivalDecision:
        return counted(self._c, self.place(dc, vm, locked))

    def depart(self, dc: DataCenter, vm_id: str, now: float) -> None:
        return None

    def next_check(self, now: float) -> float | None:
        return None

    def work(self, dc: DataCenter, now: float, locked: frozenset[int] = frozenset()) -> Work | None:
        return None

    def finished(self, dc: DataCenter, work: Work, now: float) -> None:
        return None

    def counters(self) -> dict[str, float]:
        return {**self._c, "migrations": 0, "bytes_moved": 0}
