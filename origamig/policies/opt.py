"""OPT (paper §6.8): the full BILP over the whole data center from a given state.

Not an online policy: it answers "what is the best placement reachable from this state", keeping
every running VM placed and admitting only the currently pending VMs. It bounds what any policy can
reach from that state (an upper bound on Eq. 5) and is used by the optimality-gap study.
"""

from __future__ import annotations

from origamig.bilp import Limits, RegionSolution, solve_region
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Weights


def solve_opt(
    dc: DataCenter,
    weights: Weights | None = None,
    solver: str = "highs",
    limits: Limits | None = None,
) -> RegionSolution:
    """Solve the BILP over every PM and every pending VM of `dc` (optionally time-limited)."""
    return solve_region(
        dc,
        range(len(dc.pms)),
        list(dc.pending),
        weights or Weights(),
        solver=solver,
        limits=limits or Limits(time_limit_s=3600.0),
    )
