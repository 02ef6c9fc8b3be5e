"""A fast primal answer for a region: greedy moves, each kept only when Eq. (5) rises.

The exact solve can take seconds to find a placement better than the start on a fragmented
neighborhood; an online caller with a budget of a second or less then gets nothing. `repair` looks
for a better placement in milliseconds, by moves a platform engineer would try by hand, on the
region's own PMs (docs/solving.md#fast-primal-answer):

1. admit each pending VM where it fits (the PM the LP relaxation leans to first, then the fullest);
2. make room for a pending VM that fits nowhere, on the hosts with the most free slices of its GPU
   class first: lay the PM out again with the VM on it, or move one of its VMs to another active PM;
3. empty a PM: its VMs to the other active PMs (the PMs whose LP φ is smallest first);
4. empty a GPU: its GIs to the other active GPUs of the same PM.

Every move is tried on a copy and kept only when Eq. (5) over the region (`objective.evaluate`, the
referee's measure) rises by more than `STRICTLY_BETTER`, so the answer is never worse than the start
and the search ends. A trial is valued by the terms of the PMs and VMs it touched (the rest of the
region adds the same to both sides), so a move costs what it touches, not the region. A GI goes
where the driver's default rule puts it on the GPU chosen (the free permissible start of maximal
CF); GPUs that are already active come first, the fullest first. Pinned
VMs (`migratable` false) never move; without intra-PM moves a VM that stays on its PM keeps its GIs.
The answer feeds the exact solver as its start (`compile.start_of`), so the solver's answer at any
limit is at least as good.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from origamig.bilp.restrict import Region
from origamig.cluster.catalog import Profile
from origamig.cluster.mig import geometry
from origamig.cluster.records import GiSlot, Placement, PmSpec, Weights
from origamig.judge.objective import evaluate, gpu_free_starts

STRICTLY_BETTER = 1e-6  # the rise in Eq. (5) a move must bring to be kept
ROUNDS = 3  # passes over the moves; each pass after the first runs only if the previous one gained


@dataclass(frozen=True)
class Repair:
    """A placement of the region better than its start: every running VM and the admitted pending."""

    target: dict[str, Placement]
    value: float  # Eq. (5) over the region
    start: float  # Eq. (5) of the start (pending VMs rejected)
    moves: int  # moves kept


class _Layout:
    """A working placement of the region: where each VM is, each GPU's used slices, each PM's CPU/RAM."""

    def __init__(self, pms: Sequence[PmSpec], region: Region, placement: Mapping[str, Placement]) -> None:
        self.pms, self.r = pms, region
        self.placement = dict(placement)
        self.occ: dict[tuple[int, int], int] = {}
        self.cpu = dict.fromkeys(region.pms, 0)
        self.ram = dict.fromkeys(region.pms, 0)
        self.count = dict.fromkeys(region.pms, 0)  # VMs on each PM
        for v, pl in placement.items():
            self._add(v, pl, +1)
        self.touched: set[int] = set()  # PMs and VMs changed since this layout was copied
        self.moved: set[str] = set()

    def copy(self) -> _Layout:
        """A copy to try moves on; it records the PMs and VMs they touch."""
        twin = _Layout.__new__(_Layout)
        twin.pms, twin.r = self.pms, self.r
        twin.placement, twin.occ = dict(self.placement), dict(self.occ)
        twin.cpu, twin.ram, twin.count = dict(self.cpu), dict(self.ram), dict(self.count)
        twin.touched, twin.moved = set(), set()
        return twin

    def _masks(self, v: str, pl: Placement) -> list[tuple[tuple[int, int], int]]:
        """The (GPU, slice mask) of each GI of VM `v` at `pl`."""
        vm, pm = self.r.vms[v], self.pms[pl.pm]
        return [
            ((pl.pm, slot.gpu), pm.gpus[slot.gpu].profile(prof.name).mask(slot.start))
            for prof, slot in zip(vm.placed_on(pm, pl).gis, pl.gis, strict=True)
        ]

    def _room(self, v: str, j: int) -> bool:
        """Whether PM j has the CPU and RAM VM `v` (not on it) needs."""
        vm, pm = self.r.vms[v], self.pms[j]
        return self.cpu[j] + vm.cpu_m <= pm.cpu_m and self.ram[j] + vm.ram_mb <= pm.ram_mb

    def _add(self, v: str, pl: Placement, sign: int) -> None:
        """Count VM `v` at `pl` in (sign +1) or out (-1); its GIs' slices are toggled (GIs never overlap)."""
        vm = self.r.vms[v]
        self.cpu[pl.pm] += sign * vm.cpu_m
        self.ram[pl.pm] += sign * vm.ram_mb
        self.count[pl.pm] += sign
        for g, mask in self._masks(v, pl):
            self.occ[g] = self.occ.get(g, 0) ^ mask

    def lift(self, v: str) -> Placement:
        pl = self.placement.pop(v)
        self._add(v, pl, -1)
        self.touched.add(pl.pm)
        self.moved.add(v)
        return pl

    def land(self, v: str, pl: Placement) -> None:
        self.placement[v] = pl
        self._add(v, pl, +1)
        self.touched.add(pl.pm)
        self.moved.add(v)

    def hosts(self) -> list[int]:
        """The region's PMs that host a VM, the fullest (most used GPU slices, then CPU) first."""
        used = {pl.pm for pl in self.placement.values()}
        return sorted(used, key=lambda j: (-self.slices_used(j), -self.cpu[j], j))

    def slices_used(self, j: int) -> int:
        return sum(self.occ.get((j, k), 0).bit_count() for k in range(len(self.pms[j].gpus)))

    def movable(self, v: str, to_pm: int) -> bool:
        """Whether VM `v` may take a new place on `to_pm` (a pending VM always may)."""
        before = self.r.previous.get(v)
        if before is None:
            return True
        vm = self.r.vms[v]
        if not vm.migratable:
            return False
        return before.pm != to_pm or self.r.intra_pm_moves

    def is_free(self, v: str, pl: Placement) -> bool:
        """Whether VM `v` (not in the layout) fits at `pl` as it is: CPU, RAM and every GI's slices."""
        if not self._room(v, pl.pm):
            return False
        taken: dict[tuple[int, int], int] = {}  # the VM's own GIs, so that two of them do not overlap
        for g, mask in self._masks(v, pl):
            if (self.occ.get(g, 0) | taken.get(g, 0)) & mask:
                return False
            taken[g] = taken.get(g, 0) | mask
        return True

    def fit(self, v: str, j: int) -> Placement | None:
        """Where VM `v`'s GIs go on PM j by the default rule (active, fullest GPUs first), or None."""
        if not self._room(v, j):
            return None
        for variant in self.r.vms[v].variants():
            slots = self._gis_on(variant.gis, j)
            if slots is not None:
                return Placement(j, slots)
        return None

    def _gis_on(self, gis: tuple[Profile, ...], j: int) -> tuple[GiSlot, ...] | None:
        pm = self.pms[j]
        occ = {k: self.occ.get((j, k), 0) for k in range(len(pm.gpus))}
        slots: list[GiSlot | None] = [None] * len(gis)
        largest_first = sorted(range(len(gis)), key=lambda n: (-gis[n].memory_slices, n))
        for n in largest_first:
            prof = gis[n]
            best: tuple[tuple[int, int, int], int, int, int] | None = None
            for k, md in enumerate(pm.gpus):
                if md.gpu_class != prof.gpu_class or not md.has_profile(prof.name):
                    continue
                here = md.profile(prof.name)
                geo = geometry(md)
                z = geo.default_start(occ[k], here)
                if z is None:
                    continue
                after = occ[k] | here.mask(z)
                key = (0 if occ[k] else 1, -occ[k].bit_count(), k)
                if best is None or key < best[0]:
                    best = (key, k, z, after)
            if best is None:
                return None
            _, k, z, after = best
            occ[k] = after
            slots[n] = GiSlot(k, z)
        return tuple(s for s in slots if s is not None)


def repair(
    pms: Sequence[PmSpec],
    region: Region,
    weights: Weights,
    lp_pm: Mapping[int, float] | None = None,
    lp_vm_pm: Mapping[tuple[str, int], float] | None = None,
) -> Repair | None:
    """A placement of `region` strictly better than its start (module docstring), or None.

    `pms` are the data center's PMs (indexed as the region's); `lp_pm` / `lp_vm_pm` the LP
    relaxation's φ_j and x_ij when known: PMs of small φ are emptied first, a pending VM tries the
    PMs of large x_ij first."""
    search = _Search(pms, region, weights, lp_pm or {}, lp_vm_pm or {})
    start = search.value
    for _ in range(ROUNDS):
        before = search.moves
        search.admit_pending()
        search.make_room()
        search.empty_pms()
        search.empty_gpus()
        if search.moves == before:
            break
    if search.moves == 0:
        return None
    return Repair(dict(search.layout.placement), search.value, start, search.moves)


class _Search:
    def __init__(
        self,
        pms: Sequence[PmSpec],
        region: Region,
        weights: Weights,
        lp_pm: Mapping[int, float],
        lp_vm_pm: Mapping[tuple[str, int], float],
    ) -> None:
        self.pms, self.r, self.w = pms, region, weights
        self.lp_pm, self.lp_vm_pm = lp_pm, lp_vm_pm
        self.layout = _Layout(pms, region, region.previous)
        r = self.r
        self.value = evaluate(pms, r.vms, region.previous, r.previous, weights, r.pms, r.vms).value
        self.moves = 0

    def _pm_term(self, layout: _Layout, j: int) -> float:
        """PM j's part of Eq. (5): its free starts less its cost and its active GPUs' (`evaluate`'s)."""
        pm, w = self.pms[j], self.w
        value = -w.b(pm) if layout.count[j] else 0.0
        for k, model in enumerate(pm.gpus):
            mask = layout.occ.get((j, k), 0)
            if mask:
                value += gpu_free_starts(model, mask, w) - w.gpu
        return value

    def _vm_term(self, layout: _Layout, v: str) -> float:
        """VM v's part of Eq. (5): its admission less its moves (`evaluate`'s)."""
        now = layout.placement.get(v)
        if now is None:
            return 0.0
        vm = self.r.vms[v]
        before = self.r.previous.get(v)
        if before is None:
            return self.w.a(vm)
        m = 1 if now.pm != before.pm else 0
        omega = 1 if (m or now.gis != before.gis) else 0
        return self.w.a(vm) - self.w.delta(vm) * (m + omega)

    def _value(self, trial: _Layout) -> float:
        """Eq. (5) over the region for `trial`, a copy of the current layout: the current value with
        the terms of the PMs and VMs the trial touched replaced."""
        here = self.layout
        change = sum(self._pm_term(trial, j) - self._pm_term(here, j) for j in trial.touched)
        change += sum(self._vm_term(trial, v) - self._vm_term(here, v) for v in trial.moved)
        return self.value + change

    def _keep_if_better(self, trial: _Layout) -> bool:
        value = self._value(trial)
        if value > self.value + STRICTLY_BETTER:
            self.layout, self.value = trial, value
            self.moves += 1
            return True
        return False

    def _waiting(self) -> list[str]:
        """Pending VMs not placed yet, the most valuable and then the largest first."""
        left = [v for v in self.r.pending if v not in self.layout.placement]
        return sorted(left, key=lambda v: (-self.w.a(self.r.vms[v]), -self.r.vms[v].memory_slices, v))

    def _pm_order_for(self, v: str, layout: _Layout) -> list[int]:
        """PMs to try for VM `v`: by the LP's x_vj (largest first), hosts before empty PMs, fullest first."""
        hosts = layout.hosts()
        rank = {j: n for n, j in enumerate(hosts)}
        return sorted(
            self.r.pms,
            key=lambda j: (-self.lp_vm_pm.get((v, j), 0.0), j not in rank, rank.get(j, 0), j),
        )

    def admit_pending(self) -> None:
        for v in self._waiting():
            for j in self._pm_order_for(v, self.layout):
                pl = self.layout.fit(v, j)
                if pl is None:
                    continue
                trial = self.layout.copy()
                trial.land(v, pl)
                if self._keep_if_better(trial):
                    break

    def make_room(self) -> None:
        """For each pending VM still waiting: on each host, lay the PM out again with the VM on it
        first, or move one of the PM's VMs to another host and then place the VM."""
        for v in self._waiting():
            for j in self._roomiest_for(v):
                if self._relayout_with(v, j) or self._displace_for(v, j):
                    break

    def _roomiest_for(self, v: str) -> list[int]:
        """The hosts by free memory slices on GPUs of VM `v`'s classes (most first: the least to
        move), then fullest first."""
        classes = set(self.r.vms[v].gpu_classes)
        hosts = self.layout.hosts()

        def free(j: int) -> int:
            gpus = self.pms[j].gpus
            return sum(
                md.memory_slices - self.layout.occ.get((j, k), 0).bit_count()
                for k, md in enumerate(gpus)
                if md.gpu_class in classes
            )

        return sorted(hosts, key=lambda j: -free(j))  # stable: fullest first among equals

    def _relayout_with(self, v: str, j: int) -> bool:
        trial = self.layout.copy()
        here = [u for u, pl in trial.placement.items() if pl.pm == j]
        if not all(trial.movable(u, j) for u in here):
            return False
        old = {u: trial.lift(u) for u in here}
        for u in [v, *sorted(here, key=self._largest_first)]:
            pl = old[u] if u in old and trial.is_free(u, old[u]) else trial.fit(u, j)
            if pl is None:
                return False
            trial.land(u, pl)
        return self._keep_if_better(trial)

    def _displace_for(self, v: str, j: int) -> bool:
        here = [u for u, pl in self.layout.placement.items() if pl.pm == j]
        for u in sorted(here, key=lambda u: (self.r.vms[u].memory_slices, u)):
            trial = self.layout.copy()
            trial.lift(u)
            if not self._place_elsewhere(trial, [u], avoid={j}):
                continue
            pl = trial.fit(v, j)
            if pl is None:
                continue
            trial.land(v, pl)
            if self._keep_if_better(trial):
                return True
        return False

    def empty_pms(self) -> None:
        """Each host in turn (smallest LP φ, then least used first): its VMs to the other hosts."""
        order = sorted(
            self.layout.hosts(),
            key=lambda j: (self.lp_pm.get(j, 1.0), self.layout.slices_used(j), self.layout.cpu[j], j),
        )
        emptied: set[int] = set()
        for j in order:
            here = [u for u, pl in self.layout.placement.items() if pl.pm == j]
            if not here:
                continue
            trial = self.layout.copy()
            for u in here:
                trial.lift(u)
            if self._place_elsewhere(trial, here, avoid={j, *emptied}) and self._keep_if_better(trial):
                emptied.add(j)

    def empty_gpus(self) -> None:
        """Each active GPU of each host (least used first): its GIs to the PM's other active GPUs."""
        for j in self.layout.hosts():
            gpus = [k for k in range(len(self.pms[j].gpus)) if self.layout.occ.get((j, k))]
            for k in sorted(gpus, key=lambda k: (self.layout.occ.get((j, k), 0).bit_count(), k)):
                self._empty_gpu(j, k)

    def _empty_gpu(self, j: int, k: int) -> bool:
        trial = self.layout.copy()
        on_k = [u for u, pl in trial.placement.items() if pl.pm == j and any(s.gpu == k for s in pl.gis)]
        if not on_k or not all(trial.movable(u, j) for u in on_k):
            return False
        for u in on_k:
            trial.lift(u)
        full = geometry(self.pms[j].gpus[k]).full
        trial.occ[(j, k)] = full  # closed while its GIs find other GPUs (it is empty now)
        for u in sorted(on_k, key=self._largest_first):
            pl = trial.fit(u, j)
            if pl is None:
                return False
            trial.land(u, pl)
        trial.occ[(j, k)] = 0
        return self._keep_if_better(trial)

    def _place_elsewhere(self, trial: _Layout, vms: Iterable[str], avoid: set[int]) -> bool:
        """Land each of `vms` (lifted from `trial`) on a host of `trial` outside `avoid`."""
        for u in sorted(vms, key=self._largest_first):
            spot = next(
                (
                    pl
                    for j in trial.hosts()
                    if j not in avoid and trial.movable(u, j)
                    for pl in (trial.fit(u, j),)
                    if pl is not None
                ),
                None,
            )
            if spot is None:
                return False
            trial.land(u, spot)
        return True

    def _largest_first(self, v: str) -> tuple[int, int, str]:
        vm = self.r.vms[v]
        return (-vm.memory_slices, -vm.cpu_m, v)
