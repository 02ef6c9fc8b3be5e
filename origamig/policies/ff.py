"""First-Fit (FF, paper §6.3): first-fit PM selection with the default GI placement.

Rule: `first_fit.first_fit` — the first PM in data-center order (not locked, with a GPU of the VM's
class and enough free CPU/RAM) on which every GI, largest first, gets the lowest-index GPU where the
default GI placement (CF-max start) finds a start; a VM that fits nowhere is rejected.
Tie-break: lowest PM, then lowest GPU; the start is the CF-max one, lowest on ties.
Complexity: O(|M| · |GIs| · |K_j|) table lookups per arrival. No periodic work, no migrations.
"""

from __future__ import annotations

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, VmSpec
from origamig.policies.arrival_only import ArrivalOnlyPolicy
from origamig.policies.arrival_rule import first_fit
from origamig.policies.base import Rejection, register


@register("ff")
class FirstFit(ArrivalOnlyPolicy):
    """FF: place on arrival by the shared first-fit rule, reject what does not fit."""

    name = "ff"

    def place(self, dc: DataCenter, vm: VmSpec, locked: frozenset[int]) -> Placement | Rejection:
        return first_fit(dc, vm, locked)
