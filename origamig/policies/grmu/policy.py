"""GRMU (Siavashi and Momtazpour, arXiv 2502.01909), adapted to VMs on PMs (docs/policies.md#grmu).

Source. A multi-stage placement of MIG-enabled VMs: GPUs split by quota into two baskets, one for
large-profile and one for small-profile workloads, each with a capacity limit; intra-GPU migrations
that defragment a single GPU; inter-GPU migrations for consolidation. Only the paper's abstract and
the first lines of its introduction could be read; the readings below, where it is silent, are ours
(docs/policies.md#grmu lists them).

Rule, per arriving VM (`arrive`), stage by stage:
1. Direct placement by the basket rule (`baskets.py`): each GI on a GPU of its basket or on an idle
   GPU its basket's limit lets it open; first fit among the PMs that switch on the least hardware.
2. Intra-GPU defragmentation (`defrag.py`): one GPU of a PM repacked, its GIs moved to other starts
   on the same GPU, so that the VM fits; fewest GIs moved.
3. Inter-GPU migration (`consolidation.make_room`): one GPU vacated, its VMs moved to other active
   GPUs of their baskets, so that the VM fits; fewest VMs moved.
4. Otherwise the VM is rejected — even when idle GPUs exist, if its basket is at its limit.
Our Protocol moves VMs only in `work`: a VM that needs stage 2 or 3 is `Deferred`, the policy asks
for a check at the same instant, and that `work` decides again on the state it is given and returns
the moves and the start as one call, planned by the migration executor. A VM without GIs goes to the
first PM with its CPU and RAM, as in every baseline.

Periodic consolidation (`consolidate=True`, the default, every `period_s`): GPUs vacated onto other
active GPUs of their baskets (`consolidation.consolidate`) — the abstract's "inter-GPU migrations for
consolidation". `consolidate=False` is the weaker reading of arrival stages only: it migrates about
as rarely as the paper reports (about 1% of the VMs), with consolidation about half of the VMs
admitted are moved (docs/policies.md#grmu).
Calls lock their PMs until their moves end; every live migration of their plans is counted.
Complexity: an arrival O(|M| · |K_j| · |GIs|); one that fits nowhere directly adds remembered repacks
(≤ 2^|GIs on a GPU| subsets per GPU) and at most one vacate per active GPU of its class.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from origamig.call.kinds import CallKind
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, VmSpec
from origamig.errors import UserError
from origamig.policies.arrival_rule import first_fit, no_fit
from origamig.policies.base import ArrivalDecision, Deferred, Placed, Rejection, Work, register
from origamig.policies.grmu.baskets import LARGE, SMALL, Baskets, arrival_score, choose
from origamig.policies.grmu.consolidation import Moves, consolidate, make_room
from origamig.policies.grmu.defrag import defrag_score
from origamig.policies.moves import count_moves, moves_work, plan_moves

if TYPE_CHECKING:
    from origamig.plan.steps import Plan

DEFAULT_PERIOD_S = 900.0  # TC's period: both baselines consolidate on the same clock
STAGE_REASONS = {
    "defrag": "no GPU of its basket has room; waits for one GPU to be defragmented",
    "migrate": "no GPU of its basket has room; waits for the VMs of one GPU to move to others",
}
COUNTERS = (
    "admitted",
    "rejected",
    "rejected_by_limit",
    "deferred_defrag",
    "deferred_migrate",
    "admission_calls",
    "admission_calls_discarded",
    "consolidations",
    "consolidations_with_moves",
    "consolidations_discarded",
    "migrations",
    "migrations_admission",
    "migrations_consolidation",
    "parking_moves",
    "bytes_moved",
    "vacated_gpus",
    "wall_s",
)


def _problems(
    large_share: Any,
    large_quota: Any,
    small_quota: Any,
    period_s: Any,
    defrag: Any,
    make_room: Any,
    consolidate: Any,
) -> list[str]:
    out = []
    for name, value in (
        ("large_share", large_share),
        ("large_quota", large_quota),
        ("small_quota", small_quota),
    ):
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
            out.append(f"--option {name}: {value!r} must be a number in (0, 1]")
    if isinstance(period_s, bool) or not isinstance(period_s, int | float) or not period_s > 0:
        out.append(f"--option period_s: {period_s!r} must be a positive number of seconds")
    for name, value in (("defrag", defrag), ("make_room", make_room), ("consolidate", consolidate)):
        if not isinstance(value, bool):
            out.append(f"--option {name}: {value!r} must be true or false")
    return out


@register("grmu")
class Grmu:
    """GRMU: two baskets with limits; an arrival that fits nowhere gets one GPU repacked, or one GPU's
    VMs moved to other GPUs; periodic consolidation (off with `consolidate=False`)."""

    name = "grmu"

    def __init__(
        self,
        large_share: float = 0.5,
        large_quota: float = 0.75,
        small_quota: float = 1.0,
        period_s: float = DEFAULT_PERIOD_S,
        defrag: bool = True,
        make_room: bool = True,
        consolidate: bool = True,
    ) -> None:
        problems = _problems(large_share, large_quota, small_quota, period_s, defrag, make_room, consolidate)
        if problems:
            raise UserError(problems)
        self.baskets = Baskets(float(large_share), float(large_quota), float(small_quota))
        self.period_s = float(period_s)
        self.defrag = defrag
        self.make_room = make_room
        self.consolidate = consolidate
        self._next = self.period_s
        self._waiting: dict[str, None] = {}  # deferred VMs not yet handed to a call, oldest first
        self._vacating = 0  # GPUs the consolidation in flight empties
        self._running = False  # a call of ours runs (from `work` to `finished`)
        self._c: dict[str, float] = dict.fromkeys(COUNTERS, 0)

    # --- arrivals --------------------------------------------------------------------------------
    def arrive(self, dc: DataCenter, vm: VmSpec, now: float, locked: frozenset[int]) -> ArrivalDecision:
        placed, moves, stage = self._place(dc, vm, locked, moves=True)
        if placed is not None and not moves:
            self._c["admitted"] += 1
            return Placed(placed)
        if placed is not None:
            self._c[f"deferred_{stage}"] += 1
            self._waiting[vm.id] = None
            return Deferred(STAGE_REASONS[stage])
        self._c["rejected"] += 1
        return self._rejection(dc, vm, locked)

    def _place(
        self, dc: DataCenter, vm: VmSpec, locked: frozenset[int], moves: bool
    ) -> tuple[Placement | None, Moves, str]:
        """Where the VM goes, the moves that make room for it and the stage that found them: none
        (`direct`), GIs moved on one GPU (`defrag`) or the VMs of one GPU moved to others (`migrate`);
        `moves=False` allows direct placements only."""
        if not vm.gis:
            hit = first_fit(dc, vm, locked)
            return (None if isinstance(hit, Rejection) else hit), (), "direct"
        direct = choose(dc, vm, locked, self.baskets, arrival_score)
        if direct is not None:
            return direct[1], (), "direct"
        if moves and self.defrag and dc.intra_pm_moves:
            fix = choose(dc, vm, locked, self.baskets, defrag_score)
            if fix is not None:
                return fix[1].placement, fix[1].moved, "defrag"
        if moves and self.make_room:
            room = make_room(dc, self.baskets, vm, locked)
            if room is not None:
                return room[0], room[1], "migrate"
        return None, (), "direct"

    def _rejection(self, dc: DataCenter, vm: VmSpec, locked: frozenset[int]) -> Rejection:
        """Why the VM is refused: the basket limits when the rule without them would place it."""
        base = no_fit(dc, vm, locked)
        free = {**base.free, **self._basket_state(dc, vm)}
        unlimited = replace(self.baskets, large_quota=1.0, small_quota=1.0)
        if vm.gis and choose(dc, vm, locked, unlimited, arrival_score) is not None:
            self._c["rejected_by_limit"] += 1
            return Rejection(
                "its GPU basket is at its capacity limit and none of its GPUs has room", base.needed, free
            )
        return Rejection(base.reason, base.needed, free)

    def _basket_state(self, dc: DataCenter, vm: VmSpec) -> dict[str, Any]:
        """The GPUs each basket of the VM's class holds, over its limit (for a rejection's record)."""
        if not vm.gis:
            return {}
        held, limits = self.baskets.held(dc, vm.gpu_class), self.baskets.limits(dc, vm.gpu_class)
        return {
            "large_basket_gpus": f"{held[LARGE]}/{limits[LARGE]}",
            "small_basket_gpus": f"{held[SMALL]}/{limits[SMALL]}",
        }

    def depart(self, dc: DataCenter, vm_id: str, now: float) -> None:
        return None

    # --- calls -----------------------------------------------------------------------------------
    def next_check(self, now: float) -> float | None:
        if self._waiting:
            return now
        return max(self._next, now) if self.consolidate else None

    def work(self, dc: DataCenter, now: float, locked: frozenset[int] = frozenset()) -> Work | None:
        """The pending VMs' admission (with the moves that make room) first, else a consolidation
        when one is due; one call at a time (None while `locked`)."""
        if locked or self._running:  # a call's PMs may be none (it only rejects): the flag holds it
            return None
        if dc.pending:
            return self._admit(dc)
        if not self.consolidate or now < self._next:
            return None
        self._next = now + self.period_s
        return self._consolidation(dc)

    def _admit(self, dc: DataCenter) -> Work:
        """Every pending VM, oldest first, placed by the stages on the state the earlier ones leave;
        if the executor finds no plan for their moves, again by direct placements only."""
        t0 = time.perf_counter()
        self._waiting.clear()
        target, admitted, rejected = self._admissions(dc, moves=True)
        plan = plan_moves(dc, target) if target else None
        if target and plan is None:
            self._c["admission_calls_discarded"] += 1
            target, admitted, rejected = self._admissions(dc, moves=False)
            plan = plan_moves(dc, target) if target else None
        self._c["admission_calls"] += 1
        why = dict.fromkeys(rejected, "fits on no GPU of its basket, even after moving the GIs of one GPU")
        return self._call(CallKind.ADMISSION, dc, target, plan, t0, admitted, rejected, why)

    def _admissions(self, dc: DataCenter, moves: bool) -> tuple[dict[str, Placement], list[str], list[str]]:
        """The target (moved and started VMs), the pending VMs admitted and those rejected."""
        state = dc.copy()
        target: dict[str, Placement] = {}
        admitted: list[str] = []
        rejected: list[str] = []
        for v, vm in dc.pending.items():
            placement, moved, _ = self._place(state, vm, frozenset(), moves)
            if placement is None:
                rejected.append(v)
                continue
            state.apply_placement(dict(moved))  # at once: a repack may swap GIs
            target.update(moved)
            state.place(vm, placement)
            target[v] = placement
            admitted.append(v)
        return target, admitted, rejected

    def _consolidation(self, dc: DataCenter) -> Work | None:
        t0 = time.perf_counter()
        result = consolidate(dc, self.baskets)
        self._c["consolidations"] += 1
        plan = plan_moves(dc, result.moves) if result.moves else None
        if plan is None:
            self._c["consolidations_discarded"] += bool(result.moves)
            self._c["wall_s"] += time.perf_counter() - t0
            return None
        self._vacating = len(result.vacated)
        return self._call(CallKind.CONSOLIDATION, dc, result.moves, plan, t0)

    def _call(
        self,
        kind: CallKind,
        dc: DataCenter,
        target: dict[str, Placement],
        plan: Plan | None,
        t0: float,
        admitted: list[str] | None = None,
        rejected: list[str] | None = None,
        reasons: dict[str, str] | None = None,
    ) -> Work:
        """The Work of a call: it holds the PMs its moves and starts touch until its moves end."""
        decide_s = time.perf_counter() - t0
        self._c["wall_s"] += decide_s
        self._running = True
        return moves_work(kind, dc, target, plan, decide_s, admitted or (), rejected or (), reasons)

    def finished(self, dc: DataCenter, work: Work, now: float) -> None:
        self._running = False
        self._c["rejected"] += len(work.rejected)
        if work.kind != CallKind.CONSOLIDATION:
            if work.applied:
                self._c["admitted"] += len(work.admitted)
            else:  # a call not applied leaves its VMs pending: ask again
                self._waiting.update((v, None) for v in work.admitted if v in dc.pending)
        if not work.applied or work.plan is None:
            self._c["consolidations_discarded"] += work.kind == CallKind.CONSOLIDATION
            return
        count_moves(self._c, work.plan)
        self._c[f"migrations_{work.kind}"] += work.plan.cost.migrations
        if work.kind == CallKind.CONSOLIDATION:
            self._c["consolidations_with_moves"] += 1
            self._c["vacated_gpus"] += self._vacating

    def counters(self) -> dict[str, float]:
        return dict(self._c)
