"""The plans running in time, one book for every driver and every policy (docs/plans.md#in-time).

A call's target is adopted when its call ends, against the live state as it is then: its plan is
kept when it still runs step by step on that state, else the target is planned again; a target that
no longer fits as a whole keeps the parts of it that do (parts that share no PM), and each part of
the plan that shares no PM with the others runs as a plan of its own. Pending VMs its start moves
will start leave the queue (`PlanRun.reserved`); if their plan ends first, they go back to its head.

Moves start in the executor's order as their resources come free (`advance`): a move starts once
every earlier move of its plan on one of its PMs has ended, the migration links it copies over (a
move between PMs: the source's and the destination's) carry no other move, and what it holds at its
destination is free. It then holds that destination (`DataCenter.hold`) and nothing else until its
steps are done (`step_done`): its `migrate` moves the VM (its old GIs stay held until their
`destroy_gi`), its `start` starts it.

A target is adopted without what it would land on a cordoned PM (`cordoned`: nothing new lands
there, parking moves included) and without the VMs a running plan moves (a drain adopted while the
call solved).

One rule for a changed state: a move whose turn came but whose destination was taken meanwhile —
not by a move under way, which ends — makes its plan stale: no more of its moves start, and once
those running have ended the rest is planned again from the live state (or dropped when that finds
nothing). A VM that leaves takes its moves with it (a running one is cancelled).

A plan ended by its controller (a step failed, or not acknowledged in time, or a client cancelled it)
backs off its PMs: the next calls keep off them for `BACKOFF_S` doubling per abort in a row, up to
`BACKOFF_CAP_S`. What a cancelled move leaves on the hosts — a GI created but never used, an old GI
not destroyed — stays held as an orphan until a client confirms it gone (`confirm_orphans`; a
simulated controller removes it at once).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from origamig.cluster.records import Placement, VmSpec
from origamig.plan.steps import DestroyGi, Migrate, PowerOff, Start, Step
from origamig.policies.base import Work
from origamig.runtime.adoption import parts, plans_for, replan, runs_now
from origamig.runtime.migration import Move, held_at_destination, moves_of, old_gi
from origamig.runtime.plan_ends import PlanEnds
from origamig.runtime.plan_run import (
    ENDED_MOVES,
    AbortCause,
    MoveState,
    PlanRun,
    PlanStatus,
    dest_key,
    old_gi_key,
)


class _Verdict(Enum):
    START = "start"
    WAIT = "wait"
    STALE = "stale"
    SKIP = "skip"


class PlanBook(PlanEnds):
    """Every plan adopted on one state (module doc)."""

    # --- reading -------------------------------------------------------------------------------
    def busy_pms(self, now: float) -> frozenset[int]:
        """The PMs the next calls keep off: those a running plan's moves not ended touch, those that
        hold resources no VM owns (GIs left on a host until confirmed gone: a call's model sees VMs
        only), and those backing off."""
        busy = {j for p in self.running() for j in p.pms()}
        busy.update(pl.pm for _, pl in self.dc.holds.values())
        busy.update(j for j, b in self.backoff.items() if b.until > now)
        return frozenset(busy)

    def moving_on(self, j: int) -> bool:
        """A move under way touches PM j."""
        return any(j in m.pms for p in self.running() for m in p.running_moves())

    def waiting_needs(self, j: int) -> list[tuple[VmSpec, Placement]]:
        """What moves still waiting will hold on PM j when they start (a VM placed by others there is
        kept off it when it has a choice)."""
        out = []
        for p in self.running():
            for m in p.live_moves():
                waiting = p.state[m.n] == MoveState.WAITING
                if waiting and m.vm is not None and m.target is not None and m.target.pm == j:
                    out.append(held_at_destination(self._spec(p, m), m))
        return out

    # --- adoption ------------------------------------------------------------------------------
    def adopt(self, work: Work, now: float) -> list[PlanRun]:
        """The plans of applied call `work`, adopted on the live state now (module doc): without the
        VMs that left, that a running plan moves (one adopted while the call solved: a drain), or that
        would land on a cordoned PM."""
        dc = self.dc
        moved = {m.vm for p in self.running() for m in p.live_moves() if m.vm is not None}
        target = {
            v: pl
            for v, pl in work.target.items()
            if (v in dc.vms or v in dc.pending) and v not in moved and not self._lands_cordoned(v, pl.pm)
        }
        if not target:
            return []
        kept = work.plan if len(target) == len(work.target) else None
        if kept is not None and runs_now(dc, kept, self.model) and not self._parks_cordoned(kept.steps):
            plans = [kept]
        else:
            plans = plans_for(dc, target, self.model, self.cordoned)
        runs: list[PlanRun] = []
        for plan in plans:
            for steps in parts(plan.steps, dc):
                runs.append(self._open(work, steps, now))
        if runs:
            first = runs[0]
            first.rejected = tuple(v for v in work.rejected)
            first.rejected_reasons = dict(work.reasons)
        return runs

    def _lands_cordoned(self, vm: str, j: int) -> bool:
        """VM `vm` going to PM j is something new landing on a cordoned PM (not a move inside it)."""
        here = self.dc.placement.get(vm)
        return j in self.cordoned and (here is None or here.pm != j)

    def _parks_cordoned(self, steps: Sequence[Step]) -> bool:
        """Some step of `steps` lands a VM on a cordoned PM (a parking move, in a plan made before
        the cordon)."""
        if not self.cordoned:
            return False
        index = self.dc.index
        for s in steps:
            if isinstance(s, Migrate) and s.from_pm != s.to_pm and index[s.to_pm] in self.cordoned:
                return True
            if isinstance(s, Start) and index[s.pm] in self.cordoned:
                return True
        return False

    def _open(self, work: Work, steps: Sequence[Step], now: float) -> PlanRun:
        """A new running plan of `steps` (its starts' VMs leave the queue)."""
        dc = self.dc
        moves = moves_of(steps, dc, self.model)
        run = PlanRun(
            id=self.next_id,
            kind=work.kind,
            created_s=now,
            steps=list(steps),
            moves=list(moves),
            state=[MoveState.WAITING] * len(moves),
            acked=[0] * len(moves),
            started_s=[None] * len(moves),
            ended_s_of=[None] * len(moves),
            gain=work.call.gain if work.call is not None else None,
            step_since_s=now,
        )
        self.next_id += 1
        starts = [m.vm for m in moves if m.is_start and m.vm is not None]
        run.reserved = {v: dc.drop_pending(v) for v in starts}
        run.admitted = tuple(starts)
        self.plans[run.id] = run
        return run

    # --- moving on -----------------------------------------------------------------------------
    def advance(self, now: float) -> None:
        """Start every move whose turn has come and whose resources are free (module doc)."""
        for run in self.running():
            self._advance(run, now)

    def _advance(self, run: PlanRun, now: float, replanned: bool = False) -> None:
        if run.stale:
            if run.running_moves() or replanned:
                return
            self._replan(run, now)
            if not run.running:
                return
            replanned = True
        for m in run.moves:
            if run.state[m.n] != MoveState.WAITING:
                continue
            if any(run.state[k] not in ENDED_MOVES for k in m.after):
                continue
            verdict = self._verdict(run, m)
            if verdict is _Verdict.WAIT:
                continue
            if verdict is _Verdict.SKIP:
                run.state[m.n] = MoveState.SKIPPED
                continue
            if verdict is _Verdict.STALE:
                run.stale = True
                if not run.running_moves() and not replanned:
                    self._advance(run, now)  # re-plans at once: nothing of it runs
                return
            self._start(run, m, now)
        self._end_if_done(run, now)

    def _verdict(self, run: PlanRun, m: Move) -> _Verdict:
        """Whether move m may start now, must wait, makes its plan stale, or is not needed."""
        dc = self.dc
        if m.vm is None:
            j = m.power_pm
            step = run.steps[m.steps[0]]
            if isinstance(step, PowerOff) and j is not None and dc.is_active(j):
                return _Verdict.SKIP  # something runs there now: it stays on
            return _Verdict.START
        if m.inter_pm and any(j in self.links for j in m.pms):
            return _Verdict.WAIT
        assert m.target is not None
        if m.source is not None and dc.placement.get(m.vm) != m.source:
            return _Verdict.STALE
        spec, where = held_at_destination(self._spec(run, m), m)
        if dc.fits(spec, where):
            return _Verdict.START
        return _Verdict.WAIT if self.moving_on(m.target.pm) else _Verdict.STALE

    def _start(self, run: PlanRun, m: Move, now: float) -> None:
        run.state[m.n] = MoveState.RUNNING
        run.started_s[m.n] = now
        run.step_since_s = now
        if m.vm is not None:
            self.dc.hold(dest_key(run, m), *held_at_destination(self._spec(run, m), m))
            self.effects.touched(m.pms)
        if m.inter_pm:
            for j in m.pms:
                self.links[j] = (run.id, m.n)
        self.effects.move_started(run, m, now)

    def step_done(self, run: PlanRun, i: int, now: float) -> None:
        """Step i of `run`, the next step of one of its running moves, was carried out."""
        m = run.moves[run.move_of_step(i)]
        if run.state[m.n] != MoveState.RUNNING or m.steps[run.acked[m.n]] != i:
            raise ValueError(f"step {i} of plan {run.id} is not a next step of a running move")
        self._carry_out(run, m, run.steps[i], now)
        run.acked[m.n] += 1
        run.step_since_s = now
        if run.acked[m.n] == len(m.steps):
            self._finish(run, m, now)

    def move_done(self, run: PlanRun, n: int, now: float) -> None:
        """Every step left of running move n was carried out (a simulated controller's answer)."""
        m = run.moves[n]
        while run.running and run.state[n] == MoveState.RUNNING:
            self.step_done(run, m.steps[run.acked[n]], now)

    def _carry_out(self, run: PlanRun, m: Move, step: Step, now: float) -> None:
        """The effect of one step of running move m on the state."""
        dc = self.dc
        if isinstance(step, Migrate):
            assert m.vm is not None and m.target is not None
            vm = dc.vms[m.vm]
            dc.unhold(dest_key(run, m))
            dc.move(m.vm, m.target)
            for g in m.created:  # the old GIs stay until their destroy_gi steps
                dc.hold(old_gi_key(run, m, g), *old_gi(vm, m, g))
            self.effects.touched(m.pms)
            self.effects.vm_moved(run, m, now)
        elif isinstance(step, Start):
            assert m.vm is not None and m.target is not None
            dc.unhold(dest_key(run, m))
            dc.place(run.reserved.pop(m.vm), m.target)
            run.started.append(m.vm)
            self.effects.touched(m.pms)
            self.effects.vm_started(run, m, now)
        elif isinstance(step, DestroyGi):
            key = old_gi_key(run, m, step.gi)
            if key in dc.holds:
                dc.unhold(key)
                self.effects.touched(m.pms)

    def _finish(self, run: PlanRun, m: Move, now: float) -> None:
        run.state[m.n] = MoveState.DONE
        run.ended_s_of[m.n] = now
        self.moves_ended += 1
        self._free_links(run, m)
        self.effects.move_ended(run, m, now)
        self._end_if_done(run, now)

    # --- a changed state -----------------------------------------------------------------------
    def _replan(self, run: PlanRun, now: float) -> None:
        """Plan the rest of stale `run` again from the live state (none of its moves runs), or end it."""
        dc = self.dc
        final: dict[str, Placement] = {}
        for m in run.moves:
            if run.state[m.n] == MoveState.WAITING and m.vm is not None and m.target is not None:
                final[m.vm] = m.target
                run.state[m.n] = MoveState.REPLACED
            elif run.state[m.n] == MoveState.WAITING:
                run.state[m.n] = MoveState.REPLACED
        waiting = list(run.reserved.values())
        run.reserved = {}
        dc.requeue(waiting)
        plans = replan(dc, final, self.model, self.cordoned) if final else []
        steps = [s for p in plans for s in p.steps]
        run.stale = False
        run.replans += 1
        if not steps:
            self._close(
                run,
                PlanStatus.ABORTED,
                now,
                "the live state changed: the rest of the plan no longer fits",
                AbortCause.STALE,
            )
            return
        first, n = len(run.steps), len(run.moves)
        moves = moves_of(steps, dc, self.model, first_step=first, first_move=n)
        run.steps.extend(steps)
        run.moves.extend(moves)
        run.state.extend([MoveState.WAITING] * len(moves))
        run.acked.extend([0] * len(moves))
        run.started_s.extend([None] * len(moves))
        run.ended_s_of.extend([None] * len(moves))
        starts = [m.vm for m in moves if m.is_start and m.vm is not None]
        run.reserved = {v: dc.drop_pending(v) for v in starts}
        run.admitted = tuple(dict.fromkeys((*run.admitted, *starts)))
