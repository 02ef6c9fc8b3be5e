"""The migration executor: (current state, target placement) → Plan | Infeasible (docs/policies.md#executor).

A *step* moves (or starts) one VM: create its new GIs at their target slices, migrate (or start)
the VM, destroy its old GIs. Inside one PM, a GI whose slot does not change is kept (neither
created nor destroyed). A step is ready when its new slices are free — the VM's own old GIs count
as occupied — and, for a move between PMs or a start, the destination has the VM's CPU and RAM
free while the source still holds them. Ready steps run in their order in `target`, pass after pass.

When no step is ready, a VM that moves inside its PM and has some GIs whose target slices are free
moves those GIs first (a migrate from the PM to itself that keeps its other GIs in place), so GIs
that shift over their own old slices or over each other land in turn
(docs/solving.md#plans-that-shift-gis-in-turns).

When no step and no such partial move is ready, a networkx digraph records "step A waits for
resources that step B frees" (B's old slices overlap A's new ones, or A lacks CPU/RAM on the PM B
leaves). The VMs on its cycles (strongly connected components, self-loops included) are the parking
candidates; the one whose removal would make the most steps ready is parked (ties: order in
`target`) on

- free slices of its class that no remaining step's new GIs need, and
- on another PM (not one kept off: `keep_off`), free CPU/RAM beyond what the remaining steps arriving
  there need,

on its own PM first (only when it blocks nobody through CPU/RAM, so moving its GIs is enough: a VM
that blocks only itself moves one GI, any other moves every GI that sits on needed slices), then on
the other PMs:
powered-on ones first, in data-center order. Its step then starts from the parking
place. A parked VM blocks no step again, so each VM is parked at most once. If no candidate has a
parking place, the result is `Infeasible` and nothing has run. PMs the plan uses are switched on
before the first step, PMs left empty are switched off after the last.

Plan size: one step per moved or started VM plus one per parking move, plus at most one per GI for
a VM whose GIs move in turns; each step is 2·(changed GIs) + 1 ops. Cost: O(steps² · GIs) for the
passes, plus per blocked round O(steps · GIs) to build the digraph and score the candidates.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from origamig.cluster.catalog import Profile
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import GiSlot, Placement, VmSpec
from origamig.errors import PlacementError, UserError
from origamig.judge.check import moves_refused
from origamig.plan.steps import (
    DEFAULT_BANDWIDTH_GBIT_S,
    CreateGi,
    DestroyGi,
    Infeasible,
    Migrate,
    MoveRecord,
    Plan,
    PowerOff,
    PowerOn,
    Start,
    Step,
    cost_of,
    gi_bytes,
    move_bytes,
    transfer_seconds,
)

if TYPE_CHECKING:  # networkx loads when a plan first meets a blocked cycle (`_blocking_graph`)
    import networkx as nx

__all__ = ["Infeasible", "Plan", "chain_plans", "plan_migrations"]

_Freed = dict[tuple[int, int], int]  # (pm, gpu) → mask of slices a hypothetical removal frees


@dataclass
class _Move:
    """A remaining step of the plan: VM, where it must end, and whether it is a start."""

    vm: VmSpec
    target: Placement
    order: int
    start: bool


def plan_migrations(
    current: DataCenter,
    target: Mapping[str, Placement],
    *,
    bandwidth_gbit_s: float = DEFAULT_BANDWIDTH_GBIT_S,
    keep_off: frozenset[int] = frozenset(),
) -> Plan | Infeasible:
    """Order the moves from `current` to `target` into an always-valid plan (see the module doc).

    `target` gives the new placement of VMs that move (running in `current`) or start (pending in
    `current`); running VMs not in `target` stay. `current` is never mutated. A target that is not
    a valid final state, or names unknown VMs, raises `PlacementError`. No VM parks on a PM of
    `keep_off` it does not run on (cordoned servers: nothing new lands there).
    """
    if not bandwidth_gbit_s > 0:
        raise UserError(f"bandwidth_gbit_s: {bandwidth_gbit_s!r} must be positive")
    _validate_target(current, target)
    return _Planner(current, target, bandwidth_gbit_s, keep_off).run()


def _validate_target(current: DataCenter, target: Mapping[str, Placement]) -> None:
    unknown = [v for v in target if v not in current.vms and v not in current.pending]
    if unknown:
        raise PlacementError([f"target.{v}: VM is neither running nor pending" for v in unknown])
    refused = moves_refused(current.vms, current.placement, target, current.intra_pm_moves)
    if refused:
        raise PlacementError([f"target.{x.where.removeprefix('vm ')}: {x.message}" for x in refused])
    final = current.copy()
    final.apply_placement(target)  # raises PlacementError when the final state breaks a constraint


class _Planner:
    """Plans on a copy of the state; `run` returns the plan or Infeasible (the copy is discarded)."""

    def __init__(
        self,
        current: DataCenter,
        target: Mapping[str, Placement],
        bandwidth: float,
        keep_off: frozenset[int] = frozenset(),
    ) -> None:
        self.dc = current.copy()
        self.bandwidth = bandwidth
        self.keep_off = keep_off  # PMs no VM parks on
        self.was_active = current.is_active  # `current` is not changed while the plan is made
        self.remaining: dict[str, _Move] = {}
        for n, (v, pl) in enumerate(target.items()):
            if v in current.pending:
                vm = current.pending[v].placed_on(current.pms[pl.pm], pl)
                self.remaining[v] = _Move(vm, pl, n, True)
            elif current.placement[v] != pl:
                self.remaining[v] = _Move(current.vms[v], pl, n, False)
        self.steps: list[Step] = []
        self.moves: list[MoveRecord] = []
        self.parked: list[str] = []
        self.used_pms: set[int] = set()  # the PMs VMs went to
        self.left_pms: set[int] = set()  # the PMs VMs left: with `used_pms`, all whose power can change

    # --- main loop -----------------------------------------------------------------------------
    def run(self) -> Plan | Infeasible:
        while self.remaining:
            progressed = False
            for v in list(self.remaining):
                mv = self.remaining[v]
                if self._ready(mv):
                    self._execute(mv.vm, mv.target, parking=False)
                    del self.remaining[v]
                    progressed = True
            if not progressed and not self._shift_one():
                blocked = self._park_one()
                if blocked is not None:
                    return blocked
        return self._finish()

    def _shift_one(self) -> bool:
        """Move, inside its PM, the GIs of one waiting VM whose target slices are free now (the rest
        stay): GIs that shift over the VM's own slots or over each other then land in turn."""
        for v, mv in self.remaining.items():
            here = self.dc.placement.get(v)
            if mv.start or here is None or here.pm != mv.target.pm:
                continue
            free = [n for n in self._new_gis(mv.vm, mv.target) if self._slot_free(mv.vm, mv.target, n)]
            if not free:
                continue
            slots = tuple(mv.target.gis[n] if n in free else here.gis[n] for n in range(len(here.gis)))
            self._execute(mv.vm, Placement(here.pm, slots), parking=False)
            if self.dc.placement[v] == mv.target:
                del self.remaining[v]
            return True
        return False

    def _slot_free(self, vm: VmSpec, target: Placement, n: int) -> bool:
        slot = target.gis[n]
        return not self.dc.occupancy(target.pm, slot.gpu) & vm.gis[n].mask(slot.start)

    def _finish(self) -> Plan:
        pm_id = [p.id for p in self.dc.pms]
        on, off = _power_switches(self.was_active, self.dc.is_active, self.used_pms, self.left_pms)
        steps: list[Step] = [PowerOn(pm_id[j]) for j in on]
        steps += self.steps
        steps += [PowerOff(pm_id[j]) for j in off]
        return Plan(
            steps=tuple(steps),
            cost=cost_of(self.moves, steps, self.bandwidth),
            parked=tuple(self.parked),
            moves=tuple(self.moves),
            final_placement=dict(self.dc.placement),
        )

    # --- readiness -----------------------------------------------------------------------------
    def _new_gis(self, vm: VmSpec, target: Placement) -> list[int]:
        """Indices of the GIs the step creates: all of them, except unchanged ones inside one PM."""
        old = self.dc.placement.get(vm.id)
        if old is None or old.pm != target.pm:
            return list(range(len(vm.gis)))
        return [n for n in range(len(vm.gis)) if old.gis[n] != target.gis[n]]

    def _moves_pm(self, mv: _Move) -> bool:
        """True when the step needs CPU/RAM on its destination (a start or a move between PMs)."""
        return mv.start or self.dc.placement[mv.vm.id].pm != mv.target.pm

    def _ready(
        self, mv: _Move, freed: _Freed | None = None, freed_res: tuple[int, int, int] | None = None
    ) -> bool:
        """Can `mv` run now? `freed`/`freed_res` (pm, cpu, ram) pretend some resources were released."""
        j = mv.target.pm
        for n in self._new_gis(mv.vm, mv.target):
            slot = mv.target.gis[n]
            occ = self.dc.occupancy(j, slot.gpu)
            if freed:
                occ &= ~freed.get((j, slot.gpu), 0)
            if occ & mv.vm.gis[n].mask(slot.start):
                return False
        if not self._moves_pm(mv):
            return True
        cpu, ram = self.dc.free_cpu_m(j), self.dc.free_ram_mb(j)
        if freed_res is not None and freed_res[0] == j:
            cpu, ram = cpu + freed_res[1], ram + freed_res[2]
        return cpu >= mv.vm.cpu_m and ram >= mv.vm.ram_mb

    # --- execution -----------------------------------------------------------------------------
    def _execute(self, vm: VmSpec, target: Placement, *, parking: bool) -> None:
        """Append create_gi…, migrate|start, destroy_gi… for `vm` and apply the move to the copy."""
        pm_id = self.dc.pms[target.pm].id
        old = self.dc.placement.get(vm.id)
        created = self._new_gis(vm, target)
        gi_s = sum(self.dc.gpu_model(target.pm, target.gis[n].gpu).gi_create_s for n in created)
        for n in created:
            slot = target.gis[n]
            self.steps.append(CreateGi(vm.id, n, pm_id, slot.gpu, slot.start, parking))
        if old is None:
            self.steps.append(Start(vm.id, pm_id, parking))
            self.moves.append(
                MoveRecord(
                    vm.id, None, pm_id, parking, 0, 0.0, gi_operations=len(created), gi_operations_s=gi_s
                )
            )
            self.dc.place(vm, target)
        else:
            from_id = self.dc.pms[old.pm].id
            self.left_pms.add(old.pm)
            self.steps.append(Migrate(vm.id, from_id, pm_id, parking))
            inter = old.pm != target.pm
            n_bytes = move_bytes(vm) if inter else 0
            local = 0 if inter else gi_bytes(vm, created)
            gi_s += sum(self.dc.gpu_model(old.pm, old.gis[n].gpu).gi_destroy_s for n in created)
            record = MoveRecord(
                vm.id,
                from_id,
                pm_id,
                parking,
                n_bytes,
                transfer_seconds(n_bytes, self.bandwidth),
                local_bytes_copied=local,
                local_s=transfer_seconds(local, self.bandwidth),
                gi_operations=2 * len(created),
                gi_operations_s=gi_s,
            )
            self.moves.append(record)
            for n in created:
                slot = old.gis[n]
                self.steps.append(DestroyGi(vm.id, n, from_id, slot.gpu, slot.start, parking))
            self.dc.move(vm.id, target)
        self.used_pms.add(target.pm)

    # --- blocking and parking ------------------------------------------------------------------
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

    def _ready_resources(self, mv: _Move) -> bool:
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
        freed: _Freed = {}
        for prof, slot in zip(vm.gis, pl.gis, strict=True):
            freed[(pl.pm, slot.gpu)] = freed.get((pl.pm, slot.gpu), 0) | prof.mask(slot.start)
        res = (pl.pm, vm.cpu_m, vm.ram_mb)
        return sum(1 for p in g.predecessors(v) if self._ready(self.remaining[p], freed, res))

    def _reserved_slices(self) -> _Freed:
        """(pm, gpu) → slices that the new GIs of the remaining steps need."""
        out: _Freed = {}
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
        self, mv: _Move, reserved: _Freed, cpu_blocker: bool, blocks_only_itself: bool = False
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

    def _park_one_gi(self, vm: VmSpec, here: Placement, reserved: _Freed) -> Placement | None:
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
        self, vm: VmSpec, j: int, reserved: _Freed, keep: Placement | None
    ) -> tuple[GiSlot, ...] | None:
        """First-fit slots (largest GI first; lowest GPU, then start) on free, unreserved slices of PM j.

        With `keep` (a move inside PM j), a GI whose current slot needs no reserved slice stays.
        """
        taken: _Freed = {}
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

    def _first_free(self, prof: Profile, j: int, reserved: _Freed, taken: _Freed) -> GiSlot | None:
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


def chain_plans(current: DataCenter, plans: Sequence[Plan], final: DataCenter) -> Plan:
    """One plan that runs `plans` one after another from `current` (each planned from the state the
    previous one ends in) and ends in `final`.

    Their VM steps keep their order; their power steps are replaced by one set: every PM a VM step
    uses that is off in `current` is switched on before the first step, and every PM on at some
    point that `final` leaves empty is switched off after the last — so a PM that one plan empties
    and a later one uses again is neither switched off nor on in between.
    """
    pm_id = [p.id for p in current.pms]
    index = current.index
    vm_steps = [s for p in plans for s in p.steps if not isinstance(s, PowerOn | PowerOff)]
    used = {index[s.to_pm if isinstance(s, Migrate) else s.pm] for s in vm_steps}
    left = {index[s.from_pm] for s in vm_steps if isinstance(s, Migrate)}
    switch_on, switch_off = _power_switches(current.is_active, final.is_active, used, left)
    steps: list[Step] = [PowerOn(pm_id[j]) for j in switch_on]
    steps += vm_steps
    steps += [PowerOff(pm_id[j]) for j in switch_off]
    moves = tuple(m for p in plans for m in p.moves)
    bandwidth = plans[0].cost.bandwidth_gbit_s if plans else DEFAULT_BANDWIDTH_GBIT_S
    return Plan(
        steps=tuple(steps),
        cost=cost_of(moves, steps, bandwidth),
        parked=tuple(v for p in plans for v in p.parked),
        moves=moves,
        final_placement=dict(final.placement),
    )


def _power_switches(
    was_active: Callable[[int], bool], is_active: Callable[[int], bool], used: set[int], left: set[int]
) -> tuple[list[int], list[int]]:
    """The PMs a plan switches on (a VM goes to them, they were empty) and off (they were on or are
    switched on, and end empty), ascending. Only the PMs its VM steps touch — `used` (VMs went to
    them) and `left` (VMs left them) — can change, so no other PM is read."""
    switch_on = sorted(j for j in used if not was_active(j))
    switch_off = sorted(j for j in used | left if (was_active(j) or j in used) and not is_active(j))
    return switch_on, switch_off
