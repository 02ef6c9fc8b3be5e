"""The executor's way out of a blocked round (`Parking`): the digraph of steps waiting on each other,
the VM on its cycles to park, and where it parks (plan/executor.py)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from origamig.cluster.catalog import Profile
from origamig.cluster.records import GiSlot, Placement, VmSpec
from origamig.plan.executor_state import PlannerState, RemainingStep, SliceMasks
from origamig.plan.steps import Infeasible

if TYPE_CHECKING:  # networkx loads when a plan first meets a blocked cycle (`_blocking_graph`)
    import networkx as nx


class Parking(PlannerState):
    """The blocking graph and the parking moves of a planner."""

    def _blocking_graph(self) -> nx.DiGraph:
        """Edge A → B (attribute `cpu`): step A waits for slices (or CPU/RAM) that step B frees."""
        import networkx as nx

        g = nx.DiGraph()
        g.add_nodes_from(self.remaining)
        for a, mv in self.remaining.items():
            j = mv.target.pm
            for n in self._new_gis(mv.vm, mv.target):
                slot = mv.target.gis[n]
                mask = mv.vm.gis[n].mask(slot.start)
                for z, (owner, m) in self.dc.gis_on(j, slot.gpu).items():
                    if owner in self.remaining and self.dc.vms[owner].gis[m].mask(z) & mask:
                        g.add_edge(a, owner, cpu=False)
            if self._moves_pm(mv) and not self._ready_resources(mv):
                for b in self.dc.vms_on(j):
                    other = self.remaining.get(b)
                    if other is not None and other.target.pm != j:
                        if g.has_edge(a, b):
                            g.edges[a, b]["cpu"] = True
                        else:
                            g.add_edge(a, b, cpu=True)
        return g

    def _ready_resources(self, mv: RemainingStep) -> bool:
        j = mv.target.pm
        return self.dc.free_cpu_m(j) >= mv.vm.cpu_m and self.dc.free_ram_mb(j) >= mv.vm.ram_mb

    def _park_one(self) -> Infeasible | None:
        """Park the best cycle candidate that has a parking place; Infeasible when none has."""
        import networkx as nx

        g = self._blocking_graph()
        on_cycle: set[str] = set()
        for comp in nx.strongly_connected_components(g):
            if len(comp) > 1 or any(g.has_edge(v, v) for v in comp):
                on_cycle.update(comp)
        candidates = sorted(
            (v for v in on_cycle if not self.remaining[v].start and v not in self.parked),
            key=lambda v: (-self._removal_score(g, v), self.remaining[v].order),
        )
        reserved = self._reserved_slices()
        for v in candidates:
            cpu_blocker = any(g.edges[p, v]["cpu"] for p in g.predecessors(v))
            blocks_only_itself = set(g.predecessors(v)) == {v}
            place = self._parking_place(self.remaining[v], reserved, cpu_blocker, blocks_only_itself)
            if place is not None:
                self._execute(self.remaining[v].vm, place, parking=True)
                self.parked.append(v)
                return None
        names = sorted(on_cycle, key=lambda v: self.remaining[v].order)
        what = ", ".join(names) if names else ", ".join(sorted(self.remaining))
        return Infeasible(
            f"no parking place for any VM of the blocked cycle ({what}): no free slices of their class "
            "and CPU/RAM that no remaining step needs",
            tuple(names),
        )

    def _removal_score(self, g: nx.DiGraph, v: str) -> int:
        """How many steps would be ready if VM `v` vanished (only steps waiting on `v` can change)."""
        vm, pl = self.dc.vms[v], self.dc.placement[v]
        freed: SliceMasks = {}
        for prof, slot in zip(vm.gis, pl.gis, strict=True):
            freed[(pl.pm, slot.gpu)] = freed.get((pl.pm, slot.gpu), 0) | prof.mask(slot.start)
        res = (pl.pm, vm.cpu_m, vm.ram_mb)
        return sum(1 for p in g.predecessors(v) if self._ready(self.remaining[p], freed, res))

    def _reserved_slices(self) -> SliceMasks:
        """(pm, gpu) → slices that the new GIs of the remaining steps need."""
        out: SliceMasks = {}
        for mv in self.remaining.values():
            for n in self._new_gis(mv.vm, mv.target):
                slot = mv.target.gis[n]
                key = (mv.target.pm, slot.gpu)
                out[key] = out.get(key, 0) | mv.vm.gis[n].mask(slot.start)
        return out

    def _arrivals(self, skip: str) -> dict[int, tuple[int, int]]:
        """PM → CPU/RAM the remaining steps (except `skip`'s) will need there on arrival."""
        out: dict[int, tuple[int, int]] = {}
        for v, mv in self.remaining.items():
            if v != skip and self._moves_pm(mv):
                c, r = out.get(mv.target.pm, (0, 0))
                out[mv.target.pm] = (c + mv.vm.cpu_m, r + mv.vm.ram_mb)
        return out

    def _parking_place(
        self, mv: RemainingStep, reserved: SliceMasks, cpu_blocker: bool, blocks_only_itself: bool = False
    ) -> Placement | None:
        """Where `mv`'s VM can park: its own PM first (if slices are all it blocks; one GI is enough
        when the VM blocks only itself, its GIs trading places), then other PMs."""
        vm, here = mv.vm, self.dc.placement[mv.vm.id]
        local = self.dc.intra_pm_moves  # else the platform moves VMs only between PMs
        if local and vm.gis and blocks_only_itself:
            one = self._park_one_gi(vm, here, reserved)
            if one is not None:
                return one
        if local and vm.gis and not cpu_blocker:
            slots = self._fit_gis(vm, here.pm, reserved, keep=here)
            if slots is not None and slots != here.gis:
                return Placement(here.pm, slots)
        arrivals = self._arrivals(mv.vm.id)
        for j in self._other_pms(here.pm):
            c, r = arrivals.get(j, (0, 0))
            if self.dc.free_cpu_m(j) - c < vm.cpu_m or self.dc.free_ram_mb(j) - r < vm.ram_mb:
                continue
            slots = self._fit_gis(vm, j, reserved, keep=None)
            if slots is not None:
                return Placement(j, slots)
        return None

    def _park_one_gi(self, vm: VmSpec, here: Placement, reserved: SliceMasks) -> Placement | None:
        """`here` with one GI that sits on reserved slices moved to free, unreserved slices of its PM."""
        for n, (prof, slot) in enumerate(zip(vm.gis, here.gis, strict=True)):
            if not prof.mask(slot.start) & reserved.get((here.pm, slot.gpu), 0):
                continue
            spot = self._first_free(prof, here.pm, reserved, {})
            if spot is not None:
                return Placement(here.pm, tuple(spot if m == n else s for m, s in enumerate(here.gis)))
        return None

    def _other_pms(self, here: int) -> Iterable[int]:
        """Other PMs, but those kept off: those on (or that the plan switches on) first, then the off
        ones; index order."""
        targets = {mv.target.pm for mv in self.remaining.values()}
        pms = range(len(self.dc.pms))
        on = {j for j in pms if self.dc.is_active(j) or j in targets or j in self.used_pms}
        others = (j for j in pms if j != here and j not in self.keep_off)
        return sorted(others, key=lambda j: (j not in on, j))

    def _fit_gis(
        self, vm: VmSpec, j: int, reserved: SliceMasks, keep: Placement | None
    ) -> tuple[GiSlot, ...] | None:
        """First-fit slots (largest GI first; lowest GPU, then start) on free, unreserved slices of PM j.

        With `keep` (a move inside PM j), a GI whose current slot needs no reserved slice stays.
        """
        taken: SliceMasks = {}
        slots: list[GiSlot | None] = [None] * len(vm.gis)
        for n in sorted(range(len(vm.gis)), key=lambda n: (-vm.gis[n].memory_slices, n)):
            prof = vm.gis[n]
            if keep is not None:
                cur = keep.gis[n]
                if not prof.mask(cur.start) & reserved.get((j, cur.gpu), 0):
                    slots[n] = cur
                    continue
            slots[n] = self._first_free(prof, j, reserved, taken)
            if slots[n] is None:
                return None
        return tuple(s for s in slots if s is not None)

    def _first_free(self, prof: Profile, j: int, reserved: SliceMasks, taken: SliceMasks) -> GiSlot | None:
        for k in range(self.dc.gpu_count(j)):
            model = self.dc.gpu_model(j, k)
            if model.gpu_class != prof.gpu_class or not model.has_profile(prof.name):
                continue
            busy = self.dc.occupancy(j, k) | reserved.get((j, k), 0) | taken.get((j, k), 0)
            for z in prof.starts:
                m = prof.mask(z)
                if not busy & m:
                    taken[(j, k)] = taken.get((j, k), 0) | m
                    return GiSlot(k, z)
        return None
