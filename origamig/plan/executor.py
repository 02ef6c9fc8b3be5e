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

Here: the main loop and chained plans; the planner's state, readiness and steps in
`executor_state.py`; the blocking digraph and parking in `executor_parking.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, VmSpec
from origamig.errors import PlacementError, UserError
from origamig.judge.check import moves_refused
from origamig.plan.executor_parking import Parking
from origamig.plan.steps import (
    DEFAULT_BANDWIDTH_GBIT_S,
    Infeasible,
    Migrate,
    Plan,
    PowerOff,
    PowerOn,
    Step,
    cost_of,
)

__all__ = ["Infeasible", "Plan", "chain_plans", "plan_migrations"]


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


class _Planner(Parking):
    """Plans on a copy of the state; `run` returns the plan or Infeasible (the copy is discarded)."""

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
