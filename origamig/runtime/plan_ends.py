"""How plans end short of done, and what they leave (docs/plans.md#ending-early): a VM that leaves
takes its moves; a VM placed by others makes moves that hold its place yield; a controller ends a
plan (a failed step, a timeout, a cancel) and its PMs back off; a step carried out after its plan
ended is recorded as what happened; GIs left on hosts stay held until a client confirms them gone;
plans read back after a restart hold again what they held. The base of `PlanBook`."""

from __future__ import annotations

from collections.abc import Iterable

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import GiSlot, Placement, VmSpec
from origamig.errors import PlacementError
from origamig.plan.steps import CreateGi, DestroyGi, Migrate, Start
from origamig.runtime.migration import MigrationModel, Move, held_at_destination, old_gi
from origamig.runtime.plan_run import (
    ENDED_MOVES,
    AbortCause,
    Backoff,
    MoveState,
    OrphanGi,
    PlanEffects,
    PlanRun,
    PlanStatus,
    dest_key,
    new_gi_key,
    nth_held,
    old_gi_key,
)

BACKOFF_S = 30.0  # a plan's PMs kept from calls after its controller ended it early
BACKOFF_CAP_S = 900.0


class PlanEnds:
    """The records of a plan book and how its plans end (module doc); `PlanBook` adds how they start
    and move on."""

    # PMs nothing new lands on (cordoned): no arrival, no call, no VM of an adopted target, no parking
    # move; the VMs on them stay until they leave or are moved off. A class default: checkpoints
    # pickled before it existed read back with none.
    cordoned: frozenset[int] = frozenset()

    def __init__(
        self,
        dc: DataCenter,
        effects: PlanEffects,
        model: MigrationModel | None = None,
        confirm_orphans: bool = False,
    ) -> None:
        self.dc = dc
        self.effects = effects
        self.model = model or MigrationModel()
        self.confirm_orphans = confirm_orphans
        self.plans: dict[int, PlanRun] = {}
        self.links: dict[int, tuple[int, int]] = {}  # PM → (plan, move) copying over its link
        self.backoff: dict[int, Backoff] = {}
        self.next_id = 1
        self.moves_ended = 0  # moves that ended (done or cut short) so far: the loop waits on it

    def __getstate__(self) -> dict[str, object]:
        """Pickled (a simulation's checkpoint) without its effects: the driver binds itself again."""
        return {**self.__dict__, "effects": None}

    def running(self) -> list[PlanRun]:
        """The plans running, oldest first."""
        return [p for p in self.plans.values() if p.running]

    def _spec(self, run: PlanRun, m: Move) -> VmSpec:
        """The VM of move m as it runs at its target."""
        assert m.vm is not None and m.target is not None
        vm = self.dc.vms.get(m.vm)
        if vm is not None:
            return vm
        return run.reserved[m.vm].placed_on(self.dc.pms[m.target.pm], m.target)

    def _free_links(self, run: PlanRun, m: Move) -> None:
        for j in m.pms:
            if self.links.get(j) == (run.id, m.n):
                del self.links[j]

    def _end_if_done(self, run: PlanRun, now: float) -> None:
        if run.running and all(s in ENDED_MOVES for s in run.state):
            self._close(run, PlanStatus.DONE, now)
            for j in run.all_pms():
                self.backoff.pop(j, None)

    def _close(
        self,
        run: PlanRun,
        status: PlanStatus,
        now: float,
        reason: str = "",
        cause: AbortCause = AbortCause.NONE,
    ) -> None:
        run.status, run.reason, run.cause, run.ended_s = status, reason, cause, now
        if run.reserved:  # VMs it did not start keep their turn in the queue
            self.dc.requeue(list(run.reserved.values()))
            run.reserved = {}
        self.effects.plan_ended(run, now)

    def reserves(self, vm_id: str) -> int | None:
        """The running plan that is to start pending VM `vm_id` (None when none is)."""
        return next((p.id for p in self.running() if vm_id in p.reserved), None)

    # --- a VM leaves, a VM placed by others ----------------------------------------------------
    def vm_leaves(self, vm_id: str, now: float) -> None:
        """VM `vm_id` (running, or pending and reserved by a plan) leaves: its moves go with it."""
        for run in self.running():
            touched = False
            for m in run.moves:
                if m.vm != vm_id or run.state[m.n] in ENDED_MOVES:
                    continue
                if run.state[m.n] == MoveState.RUNNING:
                    self._cancel(run, m, now)
                run.state[m.n] = MoveState.REMOVED
                touched = True
            if run.reserved.pop(vm_id, None) is not None or touched:
                self._end_if_done(run, now)

    def yield_to(self, vm: VmSpec, placement: Placement, now: float) -> None:
        """Make room for `vm`, placed by others at `placement`: moves under way that hold what it needs
        there, and of which nothing was carried out yet, are cancelled (their plans are planned again
        once nothing of them runs), until it fits or no such move is left."""
        for run in self.running():
            for m in run.running_moves():
                if self.dc.fits(vm, placement):
                    return
                if m.target is None or m.target.pm != placement.pm or run.acked[m.n]:
                    continue
                self._cancel(run, m, now)
                run.state[m.n] = MoveState.WAITING  # re-planned with the rest of its plan
                run.stale = True

    def yieldable(self) -> list[str]:
        """The holds that a VM placed by others could make yield (moves with nothing carried out)."""
        return [dest_key(r, m) for r in self.running() for m in r.running_moves() if not r.acked[m.n]]

    # --- a controller ends a plan --------------------------------------------------------------
    def end(
        self, run: PlanRun, status: PlanStatus, reason: str, now: float, cause: AbortCause = AbortCause.NONE
    ) -> None:
        """End running `run` early (a step failed, a timeout, a client's cancel): its running moves are
        cancelled, the others never start, and its PMs back off."""
        for m in run.moves:
            if run.state[m.n] == MoveState.RUNNING:
                self._cancel(run, m, now)
            elif run.state[m.n] == MoveState.WAITING:
                run.state[m.n] = MoveState.CANCELLED
        self._close(run, status, now, reason, cause)
        for j in run.all_pms():
            level = self.backoff[j].level + 1 if j in self.backoff else 0
            self.backoff[j] = Backoff(now + min(BACKOFF_S * 2**level, BACKOFF_CAP_S), level)

    def _cancel(self, run: PlanRun, m: Move, now: float) -> None:
        """Cancel running move m: what it holds is free again, but for the GIs it leaves on the hosts
        (orphans, when a client confirms them gone; else removed at once)."""
        dc = self.dc
        done = run.steps[m.steps[0] : m.steps[0] + run.acked[m.n]]
        key = dest_key(run, m)
        if key in dc.holds:
            spec, _ = dc.unhold(key)
            if self.confirm_orphans and m.target is not None:
                for i, c in zip(m.steps, done, strict=False):
                    if isinstance(c, CreateGi):
                        prof = spec.gis[nth_held(m, c.gi)]
                        self._orphan(run, new_gi_key(run, m, c.gi), m, c.gi, prof.name, m.target, i)
        for g in m.created:
            gkey = old_gi_key(run, m, g)
            if gkey not in dc.holds:
                continue
            if self.confirm_orphans and m.source is not None:
                spec, _ = dc.holds[gkey]
                step = next(i for i in m.steps if isinstance(s := run.steps[i], DestroyGi) and s.gi == g)
                slot = m.source.gis[g]
                pm = dc.pms[m.source.pm].id
                run.orphans[gkey] = OrphanGi(
                    gkey, m.vm or "", g, spec.gis[0].name, pm, slot.gpu, slot.start, step
                )
            else:
                dc.unhold(gkey)
        run.state[m.n] = MoveState.CANCELLED
        run.ended_s_of[m.n] = now
        self.moves_ended += 1
        self._free_links(run, m)
        self.effects.touched(m.pms)

    def _orphan(
        self, run: PlanRun, key: str, m: Move, g: int, profile: str, where: Placement, step: int
    ) -> None:
        """Hold GI g of move m's VM, left on a host at `where`, as an orphan."""
        dc = self.dc
        slot = where.gis[g]
        prof = dc.gpu_model(where.pm, slot.gpu).profile(profile)
        dc.hold(key, VmSpec(m.vm or key, 0, 0, (prof,)), Placement(where.pm, (slot,)))
        run.orphans[key] = OrphanGi(
            key, m.vm or "", g, profile, dc.pms[where.pm].id, slot.gpu, slot.start, step
        )

    def confirm_gone(self, run: PlanRun, key: str) -> None:
        """A client confirms orphan GI `key` of `run` gone from its host: its slices are free."""
        orphan = run.orphans.pop(key)
        self.dc.unhold(orphan.key)
        self.effects.touched([self.dc.index[orphan.pm]])

    # --- a step carried out after its plan ended -----------------------------------------------
    def late_step(self, run: PlanRun, i: int, now: float) -> str | None:
        """Record step i of ended `run`, carried out by the platform after the plan ended (the next
        step of a move cut short): the state becomes what the platform made it. Why it cannot be
        (the live state says otherwise), or None when recorded."""
        m = run.moves[run.move_of_step(i)]
        if (
            run.state[m.n] != MoveState.CANCELLED
            or run.acked[m.n] >= len(m.steps)
            or m.steps[run.acked[m.n]] != i
        ):
            return f"step {i} was not the next step of a move under way when plan {run.id} ended"
        step, dc = run.steps[i], self.dc
        try:
            if isinstance(step, CreateGi):
                assert m.target is not None
                prof = self._spec(run, m).gis[step.gi].name if m.vm in dc.vms else None
                if prof is None:
                    return f"step {i}: its VM {m.vm} is gone"
                self._orphan(run, new_gi_key(run, m, step.gi), m, step.gi, prof, m.target, i)
            elif isinstance(step, Migrate | Start):
                why = self._late_core(run, m, i, now)
                if why is not None:
                    return why
            elif isinstance(step, DestroyGi):
                key = old_gi_key(run, m, step.gi)
                if key in run.orphans:
                    self.confirm_gone(run, key)
        except PlacementError as exc:
            return f"step {i} does not fit the live state: {exc}"
        run.acked[m.n] += 1
        self.effects.touched(m.pms)
        return None

    def _late_core(self, run: PlanRun, m: Move, i: int, now: float) -> str | None:
        """A late `migrate` or `start`: the VM runs at its target, on the GIs left there for it."""
        dc = self.dc
        assert m.vm is not None and m.target is not None
        new = [new_gi_key(run, m, g) for g in m.created]
        if any(k not in run.orphans for k in new):
            return f"step {i}: not every GI it runs on was created"
        if m.source is not None and dc.placement.get(m.vm) != m.source:
            return f"step {i}: {m.vm} no longer runs where the move started"
        if m.source is None and m.vm not in dc.pending:
            return f"step {i}: {m.vm} is no longer pending"
        kept = {k: dc.unhold(k) for k in new}
        for k in new:
            del run.orphans[k]
        try:
            if m.source is None:
                vm = dc.pending[m.vm]
                dc.place(vm, m.target)
                run.started.append(m.vm)
                self.effects.vm_started(run, m, now)
            else:
                vm = dc.vms[m.vm]
                dc.move(m.vm, m.target)
                for g in m.created:
                    spec, where = old_gi(vm, m, g)
                    gkey = old_gi_key(run, m, g)
                    dc.hold(gkey, spec, where)
                    step = next(n for n in m.steps if isinstance(s := run.steps[n], DestroyGi) and s.gi == g)
                    slot = where.gis[0]
                    run.orphans[gkey] = OrphanGi(
                        gkey, m.vm, g, spec.gis[0].name, dc.pms[where.pm].id, slot.gpu, slot.start, step
                    )
                self.effects.vm_moved(run, m, now)
        except PlacementError:
            for k, (spec, where) in kept.items():  # as it was: the GIs stay orphans
                dc.hold(k, spec, where)
            raise
        return None

    # --- a restart -----------------------------------------------------------------------------
    def restore(self, runs: Iterable[PlanRun]) -> None:
        """Plans read back after a restart: what their running moves and orphan GIs held is held again
        on the state read back (where each VM runs as its acknowledged steps left it)."""
        dc = self.dc
        for run in runs:
            self.plans[run.id] = run
            self.next_id = max(self.next_id, run.id + 1)
            for m in run.running_moves() if run.running else ():
                done = run.steps[m.steps[0] : m.steps[0] + run.acked[m.n]]
                if not any(isinstance(s, Migrate | Start) for s in done):
                    dc.hold(dest_key(run, m), *held_at_destination(self._spec(run, m), m))
                else:
                    destroyed = {s.gi for s in done if isinstance(s, DestroyGi)}
                    vm = dc.vms[m.vm] if m.vm is not None else None
                    for g in m.created:
                        if vm is not None and g not in destroyed and m.source is not None:
                            dc.hold(old_gi_key(run, m, g), *old_gi(vm, m, g))
                if m.inter_pm:
                    for j in m.pms:
                        self.links[j] = (run.id, m.n)
            for key, o in run.orphans.items():
                if key in dc.holds:
                    continue
                j = dc.index[o.pm]
                prof = dc.gpu_model(j, o.gpu).profile(o.profile)
                dc.hold(key, VmSpec(o.vm or key, 0, 0, (prof,)), Placement(j, (GiSlot(o.gpu, o.start),)))
