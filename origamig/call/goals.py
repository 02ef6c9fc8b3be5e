"""Goals an operator can name, as the weights of Eq. (5) they stand for (docs/solving.md#goals).

- `paper` (default): the snapshot's weights (the paper's unless the snapshot sets others).
- `admit`: admit the most pending VMs, with the fewest moves, and move nothing else. Only admitting
  (a_i) and moving (δ_i = 1) count; a_i = 2·(VMs in the snapshot) + 2 exceeds the cost of moving
  every VM (m_i + ω_i ≤ 2 each), so one more admitted VM beats any number of moves; no consolidation
  call follows the admission calls.
- `consolidate`: free servers. Switching a server off is worth b_j = 500, a GPU e_jk = 50, a move
  costs δ_i = 1, free starts count 0; admitting still comes first: a_i = 500 + 50·(GPUs of the
  largest server) + 1 beats switching off any one server with its GPUs; up to four rounds of
  consolidation calls follow the admission calls (one for `paper`).

Per-VM and per-PM weights written in the snapshot (`accept_weight`, `migration_penalty`, `weight`)
still apply, and the weight options of `solve` override the goal's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from enum import StrEnum

from origamig.cluster.records import PmSpec, Weights

CONSOLIDATE_PM = 500.0
CONSOLIDATE_GPU = 50.0
CONSOLIDATE_ROUNDS = 4


class Goal(StrEnum):
    """What `solve` optimizes."""

    PAPER = "paper"
    ADMIT = "admit"
    CONSOLIDATE = "consolidate"


def goal_weights(goal: Goal, base: Weights, pms: Sequence[PmSpec], vm_count: int) -> Weights:
    """The weights of `goal` for a snapshot of `pms` with `vm_count` VMs (running and pending)."""
    if goal is Goal.ADMIT:
        return replace(
            base,
            accept=2.0 * vm_count + 2.0,
            pm=0.0,
            gpu=0.0,
            free_start=0.0,
            migration=1.0,
            free_start_by_profile={},
        )
    if goal is Goal.CONSOLIDATE:
        most_gpus = max((len(p.gpus) for p in pms), default=0)
        return replace(
            base,
            accept=CONSOLIDATE_PM + CONSOLIDATE_GPU * most_gpus + 1.0,
            pm=CONSOLIDATE_PM,
            gpu=CONSOLIDATE_GPU,
            free_start=0.0,
            migration=1.0,
            free_start_by_profile={},
        )
    return base


def consolidation_rounds(goal: Goal) -> int:
    """Rounds of consolidation calls after the admission calls (docs/solving.md#the-call-loop): none
    for `admit`, one for `paper`, up to four for `consolidate` (rounds stop early once one changes
    nothing)."""
    return {Goal.ADMIT: 0, Goal.PAPER: 1, Goal.CONSOLIDATE: CONSOLIDATE_ROUNDS}[goal]
