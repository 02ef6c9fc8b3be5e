"""Goals an operator can name, and the weights of Eq. (5) each call decides with (docs/solving.md#goals).

- `balanced` (default of `solve` and `serve`): admit every pending VM that fits, first; then spend the
  fewest moves; then pack (servers and GPUs on, free starts, as the snapshot's weights count them).
  Admission calls weigh these three *lexicographically*: their weights come in tiers computed for
  the call's own neighborhood, so that one more admitted VM outweighs any number of moves and one
  move fewer outweighs any packing (`tiered`). One round of consolidation calls follows, with the
  snapshot's weights: a move there is made only where the weights say it pays.
- `admit`: the same admission calls, and no consolidation call: nothing moves unless that lets a VM in.
- `consolidate`: free servers. Switching a server off is worth b_j = 500, a GPU e_jk = 50, a move
  costs δ_i = 1, free starts count 0; admitting still comes first: a_i = 500 + 50·(GPUs of the
  largest server) + 1 beats switching off any one server with its GPUs; up to four rounds of
  consolidation calls follow the admission calls.
- `paper`: the snapshot's weights (the paper's 100 / 50 / 20 / 1 / 10 unless it sets others) for
  every call, one round of consolidation: the paper's trade-off, in which a VM whose admission
  costs more than it is worth (switching on a server and GPUs for it) is turned away. The simulator
  keeps it, so that the reproduction stands.

Per-PM weights (`weight`) and per-profile free-start weights apply under every goal; per-VM weights
(`accept_weight`, `migration_penalty`) are relative to the paper's scale and apply under `paper` and
`consolidate` and in consolidation calls, not in the tiers of an admission call.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import PmSpec, Weights

CONSOLIDATE_PM = 500.0
CONSOLIDATE_GPU = 50.0
CONSOLIDATE_ROUNDS = 4


class Goal(StrEnum):
    """What `solve` and `serve` optimize."""

    BALANCED = "balanced"
    ADMIT = "admit"
    CONSOLIDATE = "consolidate"
    PAPER = "paper"


DEFAULT_GOAL = Goal.BALANCED


@dataclass(frozen=True)
class CallWeights:
    """The weights each call of a goal decides with, from the snapshot's (or the options') `base`."""

    goal: Goal
    base: Weights

    @property
    def admits_first(self) -> bool:
        """Whether admission calls rank admitting lexicographically first (no VM that fits is turned
        away for its cost)."""
        return self.goal in (Goal.BALANCED, Goal.ADMIT)

    @property
    def rounds(self) -> int:
        """Rounds of consolidation calls after the admission calls (docs/solving.md#the-call-loop):
        none for `admit`, one for `balanced` and `paper`, up to four for `consolidate` (rounds stop
        early once one changes nothing)."""
        return {Goal.ADMIT: 0, Goal.CONSOLIDATE: CONSOLIDATE_ROUNDS}.get(self.goal, 1)

    def consolidation(self, pms: Sequence[PmSpec]) -> Weights:
        """The weights of a consolidation call (and of the report): the goal's own trade-off."""
        if self.goal is Goal.CONSOLIDATE:
            most_gpus = max((len(p.gpus) for p in pms), default=0)
            return replace(
                self.base,
                accept=CONSOLIDATE_PM + CONSOLIDATE_GPU * most_gpus + 1.0,
                pm=CONSOLIDATE_PM,
                gpu=CONSOLIDATE_GPU,
                free_start=0.0,
                migration=1.0,
                migration_per_gb=None,
                free_start_by_profile={},
            )
        if self.goal is Goal.ADMIT:  # nothing but moves counts once the admissions are settled
            return replace(self.base, pm=0.0, gpu=0.0, free_start=0.0, free_start_by_profile={})
        return self.base

    def admission(self, dc: DataCenter, pms: Sequence[int]) -> Weights:
        """The weights of an admission call on PMs `pms` of `dc`."""
        if self.admits_first:
            return tiered(self.base, dc, pms)
        return self.consolidation(dc.pms)


def tiered(base: Weights, dc: DataCenter, pms: Sequence[int]) -> Weights:
    """Weights under which an admission call on PMs `pms` ranks (admitted VMs, −moves, packing)
    lexicographically, with the packing terms of `base` (b_j, e, w_p) as the last tier.

    Packing differs between two placements of the region by at most P = Σ_j (b_j + Σ_k (e + CF_w of
    an empty GPU k)); a move unit (m_i or ω_i) then costs D = P + 1, and admitting a VM is worth
    A = 2·D·(running VMs of the region) + P + 1, more than every move and all packing together.
    Integers (rounded up), so that the solver's objective step stays 1."""
    packing = 0.0
    for j in pms:
        pm = dc.pms[j]
        packing += base.b(pm) + sum(base.gpu + _empty_cf(base, g.profiles) for g in pm.gpus)
    p = math.ceil(packing)
    move = p + 1
    running = sum(dc.vm_count(j) for j in pms)
    return replace(base, accept=float(2 * move * running + p + 1), migration=float(move), vm_weights=False)


def _empty_cf(base: Weights, profiles: Sequence) -> float:
    """Σ_p w_p · (permitted starts of p): the free-start term of an empty GPU, its largest."""
    return sum(base.w(p.name) * len(p.starts) for p in profiles)


def goal_of(name: str | Goal) -> Goal:
    """The goal called `name` (`ValueError` naming the choices if unknown)."""
    try:
        return Goal(name)
    except ValueError:
        raise ValueError(f"{name!r} is not a goal (goals: {', '.join(g.value for g in Goal)})") from None
