"""Turkkan Compaction (TC, Turkkan et al.; paper §6.3, docs/policies.md#tc), adapted to VMs on PMs.

Score (direction: larger is better). The joint utilization of a GPU is (s_m + s_c) / (S_m + S_c):
used memory and compute slices over the GPU's memory and compute slices.

Arrival rule. On each candidate PM (not locked, a GPU of the VM's class, enough free CPU/RAM), the
VM's GIs go largest first (memory, then compute slices, then request order), each to the GPU of its
class whose joint utilization *after* the assignment is the largest, at the default GI placement's
start (CF-max, lowest on ties). The PM whose GPUs used by the VM have the largest mean utilization
after placement wins. Tie-break key: (−utilization, gpu) per GI, (−mean, pm) per PM. A VM that fits
nowhere is rejected; a VM without GIs takes the first PM with CPU/RAM (as FF).
Complexity: O(|M| · |GIs| · |K_j|) table lookups per arrival.

Compaction: every `period_s` (default 900 s) `work` compacts each class (`compaction`), plans the
moves with the migration executor and returns them as `Work(kind="compaction")`; its `pms` (sources
and destinations) are locked until the moves end. Option `tc_rule`: "default" (second free GPU, ≥ 3
vacated) or "literal" (one free GPU, ≥ 2 vacated).
"""

from __future__ import annotations

import time

from origamig.call.kinds import CallKind
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import VmSpec
from origamig.errors import UserError
from origamig.policies.arrival_only import counted
from origamig.policies.arrival_rule import choose_pm
from origamig.policies.base import ArrivalDecision, Work, register
from origamig.policies.moves import count_moves, moves_work, plan_moves
from origamig.policies.tc.compaction import TcRule, compact
from origamig.policies.tc.rule import tc_fit_on_pm

DEFAULT_PERIOD_S = 900.0  # paper §6.3: each class every 15 min


@register("tc")
class TurkkanCompaction:
    """TC: fullest-GPU placement on arrival, periodic compaction of each class."""

    name = "tc"

    def __init__(self, period_s: float = DEFAULT_PERIOD_S, tc_rule: str = TcRule.DEFAULT) -> None:
        problems = []
        if not period_s > 0:
            problems.append(f"period_s: {period_s!r} must be a positive number of seconds")
        if tc_rule not in list(TcRule):
            problems.append(f"tc_rule: {tc_rule!r} is not one of {', '.join(TcRule)}")
        if problems:
            raise UserError(problems)
        self.period_s = float(period_s)
        self.rule = TcRule(tc_rule)
        self._next = self.period_s
        self._vacating = 0  # GPUs the compaction in flight vacates (one call at a time)
        self._c: dict[str, float] = dict.fromkeys(
            (
                "admitted",
                "rejected",
                "compactions",
                "compactions_with_moves",
                "compactions_discarded",
                "migrations",
                "parking_moves",
                "bytes_moved",
                "vacated_gpus",
                "trials",
                "trials_kept",
                "second_gpus",
                "wall_s",
            ),
            0,
        )

    def arrive(self, dc: DataCenter, vm: VmSpec, now: float, locked: frozenset[int]) -> ArrivalDecision:
        return counted(self._c, choose_pm(dc, vm, locked, tc_fit_on_pm))

    def depart(self, dc: DataCenter, vm_id: str, now: float) -> None:
        return None

    def next_check(self, now: float) -> float | None:
        return max(self._next, now)

    def work(self, dc: DataCenter, now: float, locked: frozenset[int] = frozenset()) -> Work | None:
        """One compaction of every class on the current state; None when nothing moves, or when a
        compaction is running (`locked`: TC compacts once per period, one call at a time).

        The call lasts its decision time plus the executor's modeled duration of the moves
        (`wall_s`), or the moves' duration alone (`modeled_s`, deterministic mode): the paper places
        no request on the PMs of a compaction until its moves end.
        """
        if locked:
            return None
        self._next = now + self.period_s
        t0 = time.perf_counter()
        result = compact(dc, self.rule)
        self._c["compactions"] += 1
        for key in ("trials", "trials_kept", "second_gpus"):
            self._c[key] += result.stats[key]
        plan = plan_moves(dc, result.moves) if result.moves else None
        decide_s = time.perf_counter() - t0
        self._c["wall_s"] += decide_s
        if plan is None:
            self._c["compactions_discarded"] += bool(result.moves)
            return None
        self._vacating = len(result.vacated)
        return moves_work(CallKind.COMPACTION, dc, result.moves, plan, decide_s)

    def finished(self, dc: DataCenter, work: Work, now: float) -> None:
        if not work.applied or work.plan is None:
            self._c["compactions_discarded"] += 1
            return
        self._c["compactions_with_moves"] += 1
        self._c["vacated_gpus"] += self._vacating
        count_moves(self._c, work.plan)

    def counters(self) -> dict[str, float]:
        return dict(self._c)
