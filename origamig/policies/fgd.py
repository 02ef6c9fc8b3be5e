"""FGD — fragmentation gradient descent (Weng et al., USENIX ATC'23) for MIG, with its descheduler
(docs/policies.md#fgd).

Workload. The *typical VMs* are the shapes (GI profiles, CPU, RAM) of the GPU VMs that arrived so
far, each with its share p_m of those arrivals; the policy re-reads them after 1, 2, 4, … 256
arrivals and then every 256 (FGD takes them from the whole trace before it starts; an online policy
sees only the past). A VM without GIs is not a typical VM (FGD leaves CPU-only pods out).

Fragmentation of PM n for a class h, in memory slices:
    F_n = Σ_m p_m · frag_n(m) over the typical VMs m of class h,
    frag_n(m) = every free slice of the PM's class-h GPUs when m cannot be placed there at all (too
                little free CPU or RAM, or some GI of m finds no free start), else the free slices
                that no free permissible window of any of m's profiles covers, summed over the GPUs.
This is FGD's measure with MIG's start slices in place of a GPU's free share: a free slice counts as
a fragment for m when m could not use it.

Rule (`FgdRule`). On each candidate PM (not locked, a GPU of the VM's class, enough free CPU/RAM),
the VM's GIs go largest first, each to the (GPU, start) that leaves F_n smallest (CPU/RAM of the whole
VM already taken); the PM whose F_n grows least wins (the steepest descent). Tie-break key:
(F, gpu, start) per GI, (increase, pm) per PM. A VM that fits nowhere is rejected; a VM without GIs
takes first fit. `arrival="tc"` places arrivals by TC's rule instead (a hybrid: TC's arrival rule
with FGD's descheduler); the typical VMs are still read from the arrivals, for the descheduler.
OrigaMIG's `arrival="fgd"` takes this rule for its own arrivals (the other hybrid).

Descheduler (FGD's `fragOnePod`). Every `period_s` (default 900 s, as TC compacts): the PMs from the
most fragmented down, one VM each — the one whose leaving lowers its PM's F_n most, if any does — up
to ⌈`ratio` · running VMs⌉ VMs; then the chosen VMs are placed again by the rule, in the order they
were chosen, on the state without them. A VM the rule cannot place again stays where it was. The
changed placements go to the migration executor as one `Work(kind="deschedule")`, like TC's moves.

Complexity: per arrival O(|M| · |GIs| · |K_j| · starts · T · |K_j|) table lookups for T typical VMs,
remembered per PM until it changes; a descheduling scans every active PM and each of its VMs once.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from origamig.call.kinds import CallKind
from origamig.cluster.catalog import Profile
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.mig import Geometry
from origamig.cluster.records import GiSlot, Placement, VmSpec
from origamig.errors import PlacementError, UserError
from origamig.memo import remember
from origamig.policies.arrival_only import counted
from origamig.policies.arrival_rule import choose_pm, class_gpus, profile_on
from origamig.policies.base import ArrivalDecision, Rejection, Work, register
from origamig.policies.moves import count_moves, moves_work, plan_moves
from origamig.policies.tc.rule import tc_fit_on_pm

DEFAULT_PERIOD_S = 900.0  # the descheduler's period: TC's, so that the two move VMs as often
DEFAULT_RATIO = 0.02  # at most this share of the running VMs is descheduled per period
ARRIVAL_RULES = ("fgd", "tc")  # how FGD places arrivals: its own rule, or TC's (a hybrid)
REFRESH_EVERY = 256  # after the first 256 arrivals (read at each power of two), re-read every 256
TYPICAL_KEPT = 64  # the most frequent shapes kept as typical VMs (shares renormalized)


@dataclass(frozen=True)
class TypicalVm:
    """A shape of VM in the workload and its share of the arrivals."""

    gis: tuple[Profile, ...]  # largest first
    cpu_m: int
    ram_mb: int
    share: float

    @property
    def gpu_class(self) -> str:
        return self.gis[0].gpu_class


@dataclass(frozen=True)
class Workload:
    """The typical VMs, by GPU class (the one input FGD's measure takes besides the state)."""

    by_class: dict[str, tuple[TypicalVm, ...]]

    @classmethod
    def of(cls, counts: Counter[tuple[tuple[Profile, ...], int, int]]) -> Workload:
        """The most frequent shapes of `counts` (ties: first seen), their shares summing to one."""
        kept = counts.most_common(TYPICAL_KEPT)
        total = sum(n for _, n in kept)
        by_class: dict[str, list[TypicalVm]] = {}
        for (gis, cpu_m, ram_mb), n in kept:
            largest_first = tuple(sorted(gis, key=lambda p: (-p.memory_slices, -p.compute_slices)))
            t = TypicalVm(largest_first, cpu_m, ram_mb, n / total)
            by_class.setdefault(t.gpu_class, []).append(t)
        return cls({h: tuple(ts) for h, ts in by_class.items()})


def stranded_slices(geo: Geometry, occ: int, gis: tuple[Profile, ...]) -> int:
    """Free slices of a GPU with occupancy `occ` that no free window of any of `gis` covers."""
    return _stranded_table(geo, gis)[occ]


# (id(geometry), profile names) → (geometry, stranded slices per occupancy) (origamig/memo.py)
_STRANDED: dict[tuple[int, tuple[str, ...]], tuple[Geometry, list[int]]] = {}
STRANDED_KEPT = 1024


def _stranded_table(geo: Geometry, gis: tuple[Profile, ...]) -> list[int]:
    key = (id(geo), tuple(p.name for p in gis))
    hit = _STRANDED.get(key)
    if hit is None or hit[0] is not geo:
        windows = [geo.windows[p.index] for p in (profile_on(geo.model, q) for q in gis) if p is not None]
        table = []
        for occ in range(1 << geo.slices):
            cover = 0
            for window in windows:
                for _, mask in window:
                    if not occ & mask:
                        cover |= mask
            table.append(bin(geo.full & ~occ & ~cover).count("1"))
        hit = remember(_STRANDED, key, (geo, table), STRANDED_KEPT)
    return hit[1]


def _hosts(geos: Sequence[Geometry], occ: Sequence[int], gis: tuple[Profile, ...]) -> bool:
    """Whether every GI of `gis` (largest first), in turn, finds a free start on some GPU (first fit)."""
    taken = list(occ)
    for prof in gis:
        for i, geo in enumerate(geos):
            p = profile_on(geo.model, prof)
            z = None if p is None else geo.default_start(taken[i], p)
            if z is not None:
                taken[i] |= p.mask(z)  # type: ignore[union-attr]
                break
        else:
            return False
    return True


def fragmentation(
    geos: Sequence[Geometry],
    occ: Sequence[int],
    free_cpu_m: int,
    free_ram_mb: int,
    typical: Sequence[TypicalVm],
) -> float:
    """F_n of one PM's GPUs of a class (`geos`, `occ`) with the given free CPU/RAM (module doc)."""
    free = sum(g.free_count[o] for g, o in zip(geos, occ, strict=True))
    if not free:
        return 0.0
    total = 0.0
    for t in typical:
        if t.cpu_m > free_cpu_m or t.ram_mb > free_ram_mb or not _hosts(geos, occ, t.gis):
            total += t.share * free
        else:
            total += t.share * sum(stranded_slices(g, o, t.gis) for g, o in zip(geos, occ, strict=True))
    return total


def pm_fragmentation(dc: DataCenter, j: int, workload: Workload) -> float:
    """F_n of PM j summed over the classes of its GPUs."""
    total = 0.0
    for h, typical in workload.by_class.items():
        gpus = class_gpus(dc, j, h)
        if gpus:
            geos = [dc.gpu_geometry(j, k) for k in gpus]
            occ = [dc.occupancy(j, k) for k in gpus]
            total += fragmentation(geos, occ, dc.free_cpu_m(j), dc.free_ram_mb(j), typical)
    return total


class FgdFit:
    """The per-PM fit of FGD for one workload (`arrival_rule.PmFit`); one object per workload, so
    that answers remembered per PM (`DataCenter.remembered`) never outlive it."""

    def __init__(self, workload: Workload) -> None:
        self.workload = workload

    def __call__(
        self, dc: DataCenter, j: int, vm: VmSpec, order: tuple[int, ...]
    ) -> tuple[float, Placement] | None:
        gpus = class_gpus(dc, j, vm.gpu_class)
        geos = [dc.gpu_geometry(j, k) for k in gpus]
        occ = [dc.occupancy(j, k) for k in gpus]
        typical = self.workload.by_class.get(vm.gpu_class, ())
        free_cpu, free_ram = dc.free_cpu_m(j), dc.free_ram_mb(j)
        before = fragmentation(geos, occ, free_cpu, free_ram, typical)
        free_cpu, free_ram = free_cpu - vm.cpu_m, free_ram - vm.ram_mb
        slots: list[GiSlot | None] = [None] * len(vm.gis)
        after = before
        for n in order:
            best: tuple[float, int, int, int] | None = None  # (F, i, start, mask)
            for i, geo in enumerate(geos):
                p = profile_on(geo.model, vm.gis[n])
                if p is None:
                    continue
                for z in geo.free_starts(occ[i], p):
                    mask = p.mask(z)
                    trial = [*occ[:i], occ[i] | mask, *occ[i + 1 :]]
                    f = fragmentation(geos, trial, free_cpu, free_ram, typical)
                    if best is None or (f, i, z) < best[:3]:
                        best = (f, i, z, mask)
            if best is None:
                return None
            after, i, z, mask = best
            occ[i] |= mask
            slots[n] = GiSlot(gpus[i], z)
        return after - before, Placement(j, tuple(slots))  # type: ignore[arg-type]


class FgdRule:
    """FGD's arrival rule with the typical VMs it reads from the arrivals so far (`observe` each
    arriving VM, then `place` it); FGD and OrigaMIG's `arrival="fgd"` share it."""

    def __init__(self) -> None:
        self._shapes: Counter[tuple[tuple[Profile, ...], int, int]] = Counter()
        self._seen = 0
        self.fit = FgdFit(Workload({}))  # the per-PM fit (`arrival_rule.PmFit`) of the current workload

    @property
    def workload(self) -> Workload:
        return self.fit.workload

    def observe(self, vm: VmSpec) -> None:
        """Count an arriving VM's shape; re-read the typical VMs after 1, 2, 4, … 256 arrivals of GPU
        VMs, then every 256."""
        if not vm.gis:
            return
        self._shapes[(vm.gis, vm.cpu_m, vm.ram_mb)] += 1
        self._seen += 1
        n = self._seen
        if (n <= REFRESH_EVERY and n & (n - 1) == 0) or n % REFRESH_EVERY == 0:
            self.fit = FgdFit(Workload.of(self._shapes))

    def place(self, dc: DataCenter, vm: VmSpec, locked: frozenset[int]) -> Placement | Rejection:
        """Where the rule puts `vm` on the PMs not `locked` (the steepest descent), or why it fits nowhere."""
        return choose_pm(dc, vm, locked, self.fit)


@register("fgd")
class FragmentationGradientDescent:
    """FGD: each VM where the workload's fragmentation grows least; a periodic descheduler."""

    name = "fgd"

    def __init__(
        self,
        period_s: float = DEFAULT_PERIOD_S,
        ratio: float = DEFAULT_RATIO,
        deschedule: bool = True,
        arrival: str = "fgd",
    ) -> None:
        problems = []
        if not (isinstance(period_s, int | float) and period_s > 0):
            problems.append(f"period_s: {period_s!r} must be a positive number of seconds")
        if not (isinstance(ratio, int | float) and 0 <= ratio <= 1):
            problems.append(f"ratio: {ratio!r} must be a share between 0 and 1")
        if not isinstance(deschedule, bool):
            problems.append(f"deschedule: {deschedule!r} must be true or false")
        if arrival not in ARRIVAL_RULES:
            problems.append(f"arrival: {arrival!r} is not one of {', '.join(ARRIVAL_RULES)}")
        if problems:
            raise UserError(problems)
        self.period_s = float(period_s)
        self.ratio = float(ratio)
        self.deschedule = deschedule
        self.arrival = arrival
        self._next = self.period_s
        self._rule = FgdRule()
        self._c: dict[str, float] = dict.fromkeys(
            (
                "admitted",
                "rejected",
                "deschedulings",
                "deschedulings_with_moves",
                "deschedulings_discarded",
                "descheduled",
                "migrations",
                "parking_moves",
                "bytes_moved",
                "wall_s",
            ),
            0,
        )

    @property
    def workload(self) -> Workload:
        return self._rule.workload

    def arrive(self, dc: DataCenter, vm: VmSpec, now: float, locked: frozenset[int]) -> ArrivalDecision:
        self._rule.observe(vm)
        if self.arrival == "tc":
            return counted(self._c, choose_pm(dc, vm, locked, tc_fit_on_pm))
        return counted(self._c, self._rule.place(dc, vm, locked))

    def depart(self, dc: DataCenter, vm_id: str, now: float) -> None:
        return None

    def next_check(self, now: float) -> float | None:
        return max(self._next, now) if self.deschedule else None

    def work(self, dc: DataCenter, now: float, locked: frozenset[int] = frozenset()) -> Work | None:
        """One descheduling (module doc); None when nothing moves or one is running (`locked`)."""
        if locked or not self.deschedule:
            return None
        self._next = now + self.period_s
        t0 = time.perf_counter()
        self._c["deschedulings"] += 1
        target = descheduled_target(dc, self.workload, math.ceil(self.ratio * len(dc.placement)))
        plan = plan_moves(dc, target) if target else None
        decide_s = time.perf_counter() - t0
        self._c["wall_s"] += decide_s
        if plan is None:
            self._c["deschedulings_discarded"] += bool(target)
            return None
        return moves_work(CallKind.DESCHEDULE, dc, target, plan, decide_s)

    def finished(self, dc: DataCenter, work: Work, now: float) -> None:
        if not work.applied or work.plan is None:
            self._c["deschedulings_discarded"] += 1
            return
        self._c["deschedulings_with_moves"] += 1
        self._c["descheduled"] += len(work.target)
        count_moves(self._c, work.plan)

    def counters(self) -> dict[str, float]:
        return dict(self._c)


def descheduled_target(dc: DataCenter, workload: Workload, budget: int) -> dict[str, Placement]:
    """FGD's `fragOnePod` on a copy of `dc`: the new placement of every VM it moves (module doc)."""
    if budget <= 0 or not workload.by_class:
        return {}
    frag = {j: pm_fragmentation(dc, j, workload) for j in range(len(dc.pms)) if dc.is_active(j)}
    order = sorted((j for j, f in frag.items() if f > 0), key=lambda j: (-frag[j], j))
    work = dc.copy()
    victims: list[tuple[VmSpec, Placement]] = []
    for j in order:
        if len(victims) >= budget:
            break
        best: tuple[float, str] | None = None
        for vm_id in dc.vms_on(j):
            vm = dc.vms[vm_id]
            if not vm.migratable or not vm.gis:
                continue
            old = work.remove(vm_id)
            gain = frag[j] - pm_fragmentation(work, j, workload)
            work.place(vm, old)
            if gain > 0 and (best is None or gain > best[0]):
                best = (gain, vm_id)
        if best is not None:
            victims.append((dc.vms[best[1]], work.remove(best[1])))
    fit = FgdFit(workload)
    target: dict[str, Placement] = {}
    for vm, old in victims:
        hit = choose_pm(work, vm, frozenset(), fit)
        new = old if isinstance(hit, Rejection) else hit
        try:
            work.place(vm, new)
        except PlacementError:
            return {}  # its old place was taken by a VM placed again before it: keep everything
        if new != old:
            target[vm.id] = new
    return target
