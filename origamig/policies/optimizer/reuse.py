"""Reusing a consolidation call's outcome (`reuse_unchanged`): a call proved to change nothing is not
solved again on the same state of the same PMs — its BILP would be the same model."""

from __future__ import annotations

from typing import Any

from origamig.call.neighborhood import Neighborhood
from origamig.cluster.datacenter import DataCenter
from origamig.policies.base import CallOutcome, Work

REUSE_CAPACITY = 4096  # unchanged calls remembered (the oldest is forgotten first)


def region_key(dc: DataCenter, nb: Neighborhood) -> tuple[Any, ...]:
    """What a call's BILP depends on: its PMs in order, their VMs in placement order with their
    placements (a VM id fixes its spec), and its pending VMs (`bilp.restrict`). O(neighborhood)."""
    running = tuple((v, dc.placement[v]) for j in nb.pms for v in dc.vms_on(j))
    return (nb.kind, nb.gpu_class, tuple(nb.pms), running, tuple(nb.pending), nb.rejected)


def reusable(work: Work, deterministic: bool) -> bool:
    """A call that changed nothing and would change nothing if solved again on the same state: its
    solver proved that keeping every VM in place is optimal (the optimum is a property of the model,
    not of the run), or, under a deterministic budget, stopped at it with nothing better (the same
    model gives the same answer)."""
    call = work.call
    if call is None or work.applied:
        return False
    if call.outcome == CallOutcome.NO_CHANGE and call.proved_optimal:
        return True
    return deterministic and call.outcome == CallOutcome.STOPPED_AT_LIMIT
