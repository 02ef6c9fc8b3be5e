"""TC's periodic compaction (Turkkan et al., paper §6.3, docs/policies.md#tc), on a read-only state.

Per class, once per period:
1. The active GPUs of the class, least utilized first: joint utilization (s_m+s_c)/(S_m+S_c) at the
   start of the compaction, ties by lowest (pm, gpu).
2. A GPU is vacated when every VM with a GI on it can be re-placed by TC's placement rule
   (`rule.tc_place`) on the *other active GPUs* of the class. A VM moves as a whole, CPU/RAM too: all
   its GIs are re-placed (a GI it has on another GPU leaves that GPU, which counts as vacated if it
   empties), largest VM first (memory, then compute slices, then id).
3. Moves use only resources free before the compaction: slices free then and not yet claimed, and,
   on another PM, CPU/RAM free then and not yet claimed (a VM staying on its PM keeps its CPU/RAM).
   Freed resources are never reused, so every move can run at once.
4. Each VM moves at most once; a GPU that received a VM is not vacated later in the compaction.
5. When a GPU cannot be vacated, a *trial* adds a free GPU of the class (an idle GPU of an active PM
   if there is one, else any idle GPU; lowest (pm, gpu)) and goes on vacating GPUs in order until
   one fails. Literal rule (`"literal"`): the trial's moves are kept only if it vacated ≥ 2 GPUs.
   Default rule (`"default"`, docs/policies.md#tc, the reading that matches the paper's migration rates): a
   trial that has added one free GPU and fails with fewer than 2 vacated adds a second free GPU, retries,
   and then keeps its moves only if it vacated ≥ 3 GPUs. A discarded trial leaves no trace and the
   scan goes on after the GPU that opened it; a kept one resumes at the GPU where it stopped.

Complexity: O(A · V · |M_h| · |K_j| · |GIs|) per class for A active GPUs and V VMs per GPU in the worst
case, with an undo journal (no state copies) for failed attempts and trials. Two exact prunings keep
it near O(A · V · candidates): per class, bit sets over its GPUs (those that may receive, and per
profile those with room for it) let the rule score only PMs where the VM's largest GI fits, and a
vacate first checks that condition for all its VMs before moving any (most attempts fail there).
Neither changes a decision: both skip only what the rule would reject. The journal and the bit sets
are `bookkeeping.py`; this module is the rule.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, VmSpec
from origamig.memo import remember
from origamig.policies.arrival_rule import class_gpus, gi_order, profile_on
from origamig.policies.tc.bookkeeping import ClassLayout, Gpu, GpuIndex, UndoJournal
from origamig.policies.tc.rule import tc_place


class TcRule(StrEnum):
    """The TC compaction rule (the `tc_rule` option of the TC policy, docs/policies.md)."""

    DEFAULT = "default"  # a second free GPU when at least three GPUs would be vacated
    LITERAL = "literal"  # the rule as written


@dataclass(frozen=True)
class CompactionResult:
    """What one compaction decided: the moves and how it got there."""

    moves: dict[str, Placement]
    vacated: tuple[Gpu, ...]
    added: tuple[Gpu, ...]
    stats: dict[str, int] = field(default_factory=dict)


class CompactionState:
    """The compaction's working view of `dc` (never mutated), with an undo journal."""

    def __init__(self, dc: DataCenter) -> None:
        self.dc = dc
        self.blocked: dict[Gpu, int] = {}  # slices not usable by a move: occupied before | claimed
        self.used_m: dict[Gpu, int] = {}
        self.used_c: dict[Gpu, int] = {}
        self.holders: dict[Gpu, tuple[str, ...]] = {}
        self.active: set[Gpu] = set()  # active when the compaction started (fixed)
        for j, pm in enumerate(dc.pms):
            for k in range(len(pm.gpus)):
                g = (j, k)
                occ = dc.occupancy(j, k)
                self.blocked[g] = occ
                self.used_m[g] = bin(occ).count("1")
                self.used_c[g] = dc.used_compute(j, k)
                self.holders[g] = tuple(sorted({v for v, _ in dc.gis_on(j, k).values()}))
                if occ:
                    self.active.add(g)
        self.free_cpu_m = [dc.free_cpu_m(j) for j in range(len(dc.pms))]  # before the compaction
        self.free_ram_mb = [dc.free_ram_mb(j) for j in range(len(dc.pms))]
        self.class_layout: ClassLayout = {
            h: [(j, [((j, k), dc.gpu_geometry(j, k)) for k in class_gpus(dc, j, h)]) for j in pms]
            for h, pms in dc.class_pms.items()
        }
        # The class's GPUs idle when the compaction started (fixed), in (pm, gpu) order.
        self.idle: dict[str, list[Gpu]] = {
            h: [g for _, gpus in layout for g, _ in gpus if g not in self.active]
            for h, layout in self.class_layout.items()
        }
        self.cpu_claim: dict[int, int] = {}
        self.ram_claim: dict[int, int] = {}
        self.pm_vms: dict[int, int] = {j: dc.vm_count(j) for j in range(len(dc.pms))}
        self.moved: dict[str, Placement] = {}
        self.receivers: dict[Gpu, bool] = {}
        self.vacated: dict[Gpu, bool] = {}
        self.added: dict[Gpu, bool] = {}
        self._gi_order: dict[str, tuple[int, ...]] = {}  # vm id -> gi_order(vm) (pure, cached)
        self._size_key: dict[str, tuple[int, int, str]] = {}  # vm id -> _largest_first(vm)
        self._by_size: dict[tuple[str, ...], list[VmSpec]] = {}  # holders -> their VMs, largest first
        # The journal undoes failed attempts and trials; the index only prunes `place_by_rule`'s scan
        # and follows every write (and undo) of `blocked`, `vacated` and `added`.
        self.journal = UndoJournal()
        self.index = GpuIndex(dc, self.class_layout)
        for layout in self.class_layout.values():
            for _, gpus in layout:
                for g, _ in gpus:
                    self._blocked_changed(g)
                    self._receiving_changed(g)

    def mark(self) -> int:
        return self.journal.mark()

    def rollback(self, mark: int) -> None:
        self.journal.rollback(mark)

    def _blocked_changed(self, g: Gpu) -> None:
        self.index.set_blocked(g, self.blocked[g])

    def _receiving_changed(self, g: Gpu) -> None:
        self.index.set_receiving(g, self.can_receive(g))

    # --- reading ------------------------------------------------------------------------------
    def order_of(self, vm: VmSpec) -> tuple[int, ...]:
        hit = self._gi_order.get(vm.id)
        if hit is None:
            hit = self._gi_order[vm.id] = gi_order(vm)
        return hit

    def size_key(self, vm: VmSpec) -> tuple[int, int, str]:
        hit = self._size_key.get(vm.id)
        if hit is None:
            hit = self._size_key[vm.id] = _largest_first(vm)
        return hit

    def where(self, vm_id: str) -> Placement:
        return self.moved.get(vm_id) or self.dc.placement[vm_id]

    def utilization(self, g: Gpu) -> float:
        geo = self.dc.gpu_geometry(*g)
        return (self.used_m[g] + self.used_c[g]) / (geo.slices + geo.model.compute_slices)

    def can_receive(self, g: Gpu) -> bool:
        return (g in self.active and g not in self.vacated) or g in self.added

    def may_vacate(self, g: Gpu) -> bool:
        return bool(self.holders[g]) and g not in self.receivers and g not in self.vacated

    def fits_pm(self, vm: VmSpec, j: int, home: int) -> bool:
        """A VM may go to PM j: its own PM, or CPU/RAM free before the compaction and unclaimed."""
        if j == home:
            return True
        return (
            self.free_cpu_m[j] - self.cpu_claim.get(j, 0) >= vm.cpu_m
            and self.free_ram_mb[j] - self.ram_claim.get(j, 0) >= vm.ram_mb
        )

    # --- moving -------------------------------------------------------------------------------
    def lift(self, vm: VmSpec) -> list[Gpu]:
        """Take the VM's GIs out of the utilization view (their slices stay blocked); its GPUs."""
        pl = self.where(vm.id)
        left = []
        for prof, slot in zip(vm.gis, pl.gis, strict=True):
            g = (pl.pm, slot.gpu)
            self.journal.set(self.used_m, g, self.used_m[g] - prof.memory_slices)
            self.journal.set(self.used_c, g, self.used_c[g] - prof.compute_slices)
            self.journal.set(self.holders, g, tuple(v for v in self.holders[g] if v != vm.id))
            left.append(g)
        self.journal.set(self.pm_vms, pl.pm, self.pm_vms[pl.pm] - 1)
        return left

    def land(self, vm: VmSpec, pl: Placement) -> None:
        """Put the lifted VM at `pl`, claiming its slices (and CPU/RAM on another PM)."""
        home = self.dc.placement[vm.id].pm
        for prof, slot in zip(vm.gis, pl.gis, strict=True):
            g = (pl.pm, slot.gpu)
            self.journal.set(
                self.blocked, g, self.blocked[g] | prof.mask(slot.start), then=self._blocked_changed
            )
            self.journal.set(self.used_m, g, self.used_m[g] + prof.memory_slices)
            self.journal.set(self.used_c, g, self.used_c[g] + prof.compute_slices)
            self.journal.set(self.holders, g, tuple(sorted({*self.holders[g], vm.id})))
            self.journal.set(self.receivers, g, True)
        if pl.pm != home:
            self.journal.set(self.cpu_claim, pl.pm, self.cpu_claim.get(pl.pm, 0) + vm.cpu_m)
            self.journal.set(self.ram_claim, pl.pm, self.ram_claim.get(pl.pm, 0) + vm.ram_mb)
        self.journal.set(self.pm_vms, pl.pm, self.pm_vms[pl.pm] + 1)
        self.journal.set(self.moved, vm.id, pl)

    def place_by_rule(self, vm: VmSpec, exclude: Gpu) -> Placement | None:
        """TC's placement rule over the GPUs that may receive, except `exclude`.

        A PM is scored by `tc_place` only if its largest GI fits on one of those GPUs (`self.index`) and
        it has the CPU/RAM: both are necessary for `tc_place` to succeed (slices only fill up while it
        places), so the PMs skipped are PMs it would reject, and the PMs scored come in the same order:
        the result is that of scoring every PM of the class."""
        home = self.dc.placement[vm.id].pm
        order = self.order_of(vm)
        best: tuple[Any, Placement] | None = None
        for j, gpus in self.index.candidate_pms(vm.gpu_class, vm.gis[order[0]].name, exclude):
            if not self.fits_pm(vm, j, home):
                continue
            views = [
                [g[1], geo, self.blocked[g], self.used_m[g], self.used_c[g]]
                for g, geo in gpus
                if g != exclude and self.can_receive(g)
            ]
            hit = tc_place(vm, order, j, views)
            if hit is not None and (best is None or hit[0] < best[0]):
                best = hit
        return None if best is None else best[1]

    def may_place(self, vm: VmSpec, exclude: Gpu) -> bool:
        """A necessary condition for `place_by_rule`, monotone while a vacate claims resources: a PM
        with its CPU/RAM (or its own) where its GIs have room on GPUs that may receive (not `exclude`):
        the largest on one GPU, and with two GIs, both on two GPUs or together on one."""
        home = self.dc.placement[vm.id].pm
        for j, gpus in self.index.candidate_pms(vm.gpu_class, vm.gis[self.order_of(vm)[0]].name, exclude):
            if self.fits_pm(vm, j, home) and (len(vm.gis) != 2 or self._pair_room(vm, gpus, exclude)):
                return True
        return False

    def _pair_room(self, vm: VmSpec, gpus: list[tuple[Gpu, Any]], exclude: Gpu) -> bool:
        """Both GIs of `vm` have room on the PM's GPUs that may receive (not `exclude`): each on its
        own GPU, or both on one at non-overlapping permitted starts (whatever the rule picks, it is
        one of these; more blocked slices never add one)."""
        a, b = vm.gis
        fa: list[int] = []
        fb: list[int] = []
        for i, (g, geo) in enumerate(gpus):
            if g == exclude or not self.can_receive(g):
                continue
            occ = self.blocked[g]
            pa, pb = profile_on(geo.model, a), profile_on(geo.model, b)
            if pa is None or pb is None:
                continue
            if geo.default_table[pa.index][occ] >= 0:
                fa.append(i)
            if geo.default_table[pb.index][occ] >= 0:
                fb.append(i)
            if _pair_fits(geo, pa.index, pb.index, occ):
                return True
        return any(x != y for x in fa for y in fb)

    def vacate(self, g: Gpu) -> bool:
        """Move every VM off GPU g by the rule; on failure nothing changes."""
        holders = self.holders[g]
        vms = self._by_size.get(holders)
        if vms is None:
            vms = self._by_size[holders] = sorted((self.dc.vms[v] for v in holders), key=self.size_key)
        # Necessary conditions, checked on the state before any VM moves: while they move, slices and
        # CPU/RAM only get claimed and the GPUs that may receive stay the same, so a VM that fails
        # them now fails them when its turn comes, and the vacate below would fail (changing nothing).
        for vm in vms:
            if vm.id in self.moved or not self.may_place(vm, g):
                return False
        mark = self.mark()
        sources: set[Gpu] = set()
        for vm in vms:
            if vm.id in self.moved:  # each VM moves at most once
                self.rollback(mark)
                return False
            sources.update(self.lift(vm))
            pl = self.place_by_rule(vm, exclude=g)
            if pl is None:
                self.rollback(mark)
                return False
            self.land(vm, pl)
        for s in sorted(sources):
            if not self.holders[s] and s in self.active:
                self.journal.set(self.vacated, s, True, then=self._receiving_changed)
        return True

    def add_free_gpu(self, gpu_class: str) -> Gpu | None:
        """An idle GPU of the class: on an active PM if any, else any; lowest (pm, gpu)."""
        pick: Gpu | None = None
        for g in self.idle[gpu_class]:
            if g in self.added:
                continue
            if self.pm_vms[g[0]] > 0:
                pick = g
                break
            if pick is None:
                pick = g
        if pick is not None:
            self.journal.set(self.added, pick, True, then=self._receiving_changed)
        return pick


# (geometry, profile index, profile index, used slices) -> fits; the key holds the geometry itself (it
# hashes by identity), so an id is never reused for another one while cached. Bounded: each geometry
# adds at most profiles² × 2^slices entries (origamig/memo.py).
_PAIR_FITS: dict[tuple[Any, int, int, int], bool] = {}
PAIR_FITS_KEPT = 1 << 18


def _pair_fits(geo: Any, ia: int, ib: int, occ: int) -> bool:
    """Profiles ia and ib of `geo` fit together on a GPU whose slices `occ` are used (cached)."""
    key = (geo, ia, ib, occ)
    hit = _PAIR_FITS.get(key)
    if hit is None:
        fits = any(
            not (ma & mb) and not (occ & (ma | mb)) for _, ma in geo.windows[ia] for _, mb in geo.windows[ib]
        )
        hit = remember(_PAIR_FITS, key, fits, PAIR_FITS_KEPT)
    return hit


def _largest_first(vm: VmSpec) -> tuple[int, int, str]:
    return (-vm.memory_slices, -sum(p.compute_slices for p in vm.gis), vm.id)


def _needed(added: int) -> int:
    """GPUs a trial must vacate to be kept: 2 with one free GPU added, 3 with two."""
    return added + 1


def compact_class(state: CompactionState, gpu_class: str, rule: TcRule, stats: dict[str, int]) -> None:
    """Run one class's compaction on `state` (see the module doc for the rule)."""
    order = sorted(
        (g for g in state.active if state.dc.pms[g[0]].gpus[g[1]].gpu_class == gpu_class),
        key=lambda g: (state.utilization(g), g),
    )
    i = 0
    while i < len(order):
        g = order[i]
        if not state.may_vacate(g) or state.vacate(g):
            i += 1
            continue
        mark = state.mark()
        if state.add_free_gpu(gpu_class) is None:
            i += 1
            continue
        stats["trials"] += 1
        kept, stop = _trial(state, order, i, gpu_class, rule, stats)
        if kept:
            stats["trials_kept"] += 1
            i = stop
        else:
            state.rollback(mark)
            i += 1


def _trial(
    state: CompactionState, order: list[Gpu], start: int, gpu_class: str, rule: TcRule, stats: dict[str, int]
) -> tuple[bool, int]:
    """Vacate GPUs from `order[start]` on with the added free GPU(s); (kept?, where it stopped)."""
    before = len(state.vacated)
    added = 1
    n = start
    while n < len(order):
        g = order[n]
        if not state.may_vacate(g):
            n += 1
            continue
        if state.vacate(g):
            n += 1
            continue
        if len(state.vacated) - before >= _needed(added):
            break
        if rule == TcRule.DEFAULT and added == 1 and state.add_free_gpu(gpu_class) is not None:
            added = 2
            stats["second_gpus"] += 1
            continue
        break
    return len(state.vacated) - before >= _needed(added), n


def compact(
    dc: DataCenter, rule: TcRule = TcRule.DEFAULT, classes: Iterable[str] | None = None
) -> CompactionResult:
    """One compaction of every GPU class of `dc` (or of `classes`), on a read-only `dc`."""
    rule = TcRule(rule)  # ValueError on an unknown rule
    state = CompactionState(dc)
    stats = {"trials": 0, "trials_kept": 0, "second_gpus": 0}
    for h in sorted(classes if classes is not None else (h for h in dc.active_gpus)):
        compact_class(state, h, rule, stats)
    moves = dict(sorted(state.moved.items()))
    stats["vacated"] = len(state.vacated)
    stats["moves"] = len(moves)
    return CompactionResult(moves, tuple(sorted(state.vacated)), tuple(sorted(state.added)), stats)
