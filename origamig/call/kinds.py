"""The kinds of a call, one closed set each (written as their strings in JSON and in the service's
store).

A policy's call (`policies.base.Work.kind`, `neighborhood.Neighborhood.kind`) is a `CallKind`; a call
of `origamig solve` on servers given by hand (`--neighborhood all` or a list) is named by its
`ScopeMode` instead.
"""

from __future__ import annotations

from enum import StrEnum


class CallKind(StrEnum):
    """What a policy's call is for."""

    ADMISSION = "admission"  # OrigaMIG's and GRMU's: admit pending VMs
    CONSOLIDATION = "consolidation"  # OrigaMIG's (one GPU class) and GRMU's: free GPUs and servers
    COMPACTION = "compaction"  # TC's moves
    DESCHEDULE = "deschedule"  # FGD's re-placements
    DRAIN = "drain"  # the service's: empty one server (`policies/drain.py`)


class ScopeMode(StrEnum):
    """Which servers `origamig solve --neighborhood` gives its calls."""

    AUTO = "auto"  # Algorithm 1's neighborhoods, one per call
    ALL = "all"  # every server
    LIST = "list"  # the servers listed by id
