"""The executor's planner state (`PlannerState`): the steps that remain, the plan built so far on a copy
of the state, when a step is ready, and how running one step writes its ops (plan/executor.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, VmSpec
from origamig.plan.steps import (
    CreateGi,
    DestroyGi,
    Migrate,
    MoveRecord,
    Start,
    Step,
    gi_bytes,
    move_bytes,
    transfer_seconds,
)

SliceMasks = dict[tuple[int, int], int]  # (pm, gpu) → mask of slices (freed, reserved or taken)


@dataclass
class RemainingStep:
    """A remaining step of the plan: VM, where it must end, and whether it is a start."""

    vm: VmSpec
    target: Placement
    order: int
    start: bool


class PlannerState:
    """A plan in the making on a copy of the state (the copy is discarded with it)."""

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
        self.remaining: dict[str, RemainingStep] = {}
        for n, (v, pl) in enumerate(target.items()):
            if v in current.pending:
                vm = current.pending[v].placed_on(current.pms[pl.pm], pl)
                self.remaining[v] = RemainingStep(vm, pl, n, True)
            elif current.placement[v] != pl:
                self.remaining[v] = RemainingStep(current.vms[v], pl, n, False)
        self.steps: list[Step] = []
        self.moves: list[MoveRecord] = []
        self.parked: list[str] = []
        self.used_pms: set[int] = set()  # the PMs VMs went to
        self.left_pms: set[int] = set()  # the PMs VMs left: with `used_pms`, all whose power can change

    # --- readiness -----------------------------------------------------------------------------
    def _new_gis(self, vm: VmSpec, target: Placement) -> list[int]:
        """Indices of the GIs the step creates: all of them, except unchanged ones inside one PM."""
        old = self.dc.placement.get(vm.id)
        if old is None or old.pm != target.pm:
            return list(range(len(vm.gis)))
        return [n for n in range(len(vm.gis)) if old.gis[n] != target.gis[n]]

    def _moves_pm(self, mv: RemainingStep) -> bool:
        """True when the step needs CPU/RAM on its destination (a start or a move between PMs)."""
        return mv.start or self.dc.placement[mv.vm.id].pm != mv.target.pm

    def _ready(
        self,
        mv: RemainingStep,
        freed: SliceMasks | None = None,
        freed_res: tuple[int, int, int] | None = None,
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
