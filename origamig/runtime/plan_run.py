"""A plan while it runs in time: its moves, how far each got, what it leaves on the hosts
(docs/plans.md#in-time). The plan book (`plan_book.py`) moves it on; drivers read it.

A plan run is one independent part of a call's target (moves that share no PM with another part run
as another plan). Its steps are the plan steps of docs/formats.md#plan; a re-plan marks the steps
still waiting `replaced` and appends the new ones, so a step's number never changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from origamig.call.kinds import CallKind
from origamig.cluster.records import VmSpec
from origamig.plan.steps import Step
from origamig.runtime.migration import Move


class PlanStatus(StrEnum):
    """A plan's life: running → done (every move ended), or ended early: failed (a step was reported
    failed), aborted (its next step waited past the step timeout, or the live state changed so that
    the rest could not be re-planned), cancelled (by a client)."""

    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    ABORTED = "aborted"
    CANCELLED = "cancelled"


class AbortCause(StrEnum):
    """Why a plan was aborted (none for a plan that was not)."""

    NONE = ""
    TIMEOUT = "timeout"
    STALE = "stale"


class MoveState(StrEnum):
    """A move's life: waiting (for the moves before it on its PMs, a free link, or its resources) →
    running (holding its destination) → done; or removed (its VM left), replaced (re-planned),
    skipped (a power step no longer needed), cancelled (its plan ended first)."""

    WAITING = "waiting"
    RUNNING = "running"
    DONE = "done"
    REMOVED = "removed"
    REPLACED = "replaced"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"


ENDED_MOVES = frozenset(
    {MoveState.DONE, MoveState.REMOVED, MoveState.REPLACED, MoveState.SKIPPED, MoveState.CANCELLED}
)


class StepStatus(StrEnum):
    """A step of a plan: done or failed (acknowledged), ready (its move runs and it is the move's next
    step: the platform may carry it out now), pending (later), or never to be carried out: aborted
    (its plan ended first), replaced (re-planned), removed (its VM left), skipped (not needed)."""

    DONE = "done"
    FAILED = "failed"
    READY = "ready"
    PENDING = "pending"
    ABORTED = "aborted"
    REPLACED = "replaced"
    REMOVED = "removed"
    SKIPPED = "skipped"


ACKNOWLEDGED = (StepStatus.DONE, StepStatus.FAILED)  # what a client reports a step as


@dataclass(frozen=True)
class OrphanGi:
    """A GI left on a host that no VM owns (a plan ended between its `create_gi` and the `migrate` or
    `start` that uses it, or between a `migrate` and its `destroy_gi`): its slices stay taken (the hold
    `key`) until a client confirms it is gone."""

    key: str
    vm: str
    gi: int
    profile: str
    pm: str
    gpu: int
    start: int
    step: int  # the plan step that created it, or the `destroy_gi` step that never ran

    def to_json(self) -> dict[str, object]:
        return {
            "vm": self.vm,
            "gi": self.gi,
            "profile": self.profile,
            "pm": self.pm,
            "gpu": self.gpu,
            "start": self.start,
            "step": self.step,
        }


@dataclass
class PlanRun:
    """One plan in time (module doc). Mutable: only the plan book changes it."""

    id: int
    kind: CallKind
    created_s: float
    steps: list[Step]
    moves: list[Move]
    state: list[MoveState]
    acked: list[int]  # per move: how many of its steps are done
    started_s: list[float | None]
    ended_s_of: list[float | None]  # per move: when it ended (done, or cut short)
    admitted: tuple[str, ...] = ()  # pending VMs its start moves take out of the queue
    reserved: dict[str, VmSpec] = field(default_factory=dict)  # those not started yet
    rejected: tuple[str, ...] = ()  # pending VMs its call gave up on
    rejected_reasons: Mapping[str, str] = field(default_factory=dict)
    gain: float | None = None
    status: PlanStatus = PlanStatus.RUNNING
    reason: str = ""
    cause: AbortCause = AbortCause.NONE
    stale: bool = False  # a move's resources were taken: no move starts until the rest is re-planned
    replans: int = 0
    failed_step: int | None = None
    ended_s: float | None = None
    step_since_s: float = 0.0  # when its last step became ready or was acknowledged (the timeout's start)
    orphans: dict[str, OrphanGi] = field(default_factory=dict)
    started: list[str] = field(default_factory=list)  # VMs its start steps admitted, in order

    @property
    def running(self) -> bool:
        return self.status == PlanStatus.RUNNING

    def move_of_step(self, i: int) -> int:
        """The move step i belongs to."""
        for m in self.moves:
            if m.steps[0] <= i <= m.steps[-1]:
                return m.n
        raise KeyError(i)

    def live_moves(self) -> list[Move]:
        """The moves not ended (waiting or running)."""
        return [m for m in self.moves if self.state[m.n] not in ENDED_MOVES]

    def running_moves(self) -> list[Move]:
        return [m for m in self.moves if self.state[m.n] == MoveState.RUNNING]

    def next_steps(self) -> list[int]:
        """The steps the platform may carry out now: the next step of each running move."""
        return [m.steps[self.acked[m.n]] for m in self.running_moves()]

    def step_status(self, i: int) -> StepStatus:
        m = self.moves[self.move_of_step(i)]
        k = i - m.steps[0]
        state = self.state[m.n]
        if k < self.acked[m.n]:
            return StepStatus.DONE
        if self.failed_step == i:
            return StepStatus.FAILED
        if state == MoveState.RUNNING:
            return StepStatus.READY if k == self.acked[m.n] else StepStatus.PENDING
        if state == MoveState.WAITING:
            return StepStatus.PENDING
        return {
            MoveState.REMOVED: StepStatus.REMOVED,
            MoveState.REPLACED: StepStatus.REPLACED,
            MoveState.SKIPPED: StepStatus.SKIPPED,
        }.get(state, StepStatus.ABORTED)

    def pms(self) -> frozenset[int]:
        """The PMs its moves not ended touch."""
        return frozenset(j for m in self.live_moves() for j in m.pms)

    def all_pms(self) -> frozenset[int]:
        """The PMs any of its moves touches."""
        return frozenset(j for m in self.moves for j in m.pms)


class PlanEffects(Protocol):
    """What a driver does when plans move on (each after the state changed)."""

    def move_started(self, plan: PlanRun, move: Move, now: float) -> None: ...

    def vm_moved(self, plan: PlanRun, move: Move, now: float) -> None: ...

    def vm_started(self, plan: PlanRun, move: Move, now: float) -> None: ...

    def move_ended(self, plan: PlanRun, move: Move, now: float) -> None: ...

    def plan_ended(self, plan: PlanRun, now: float) -> None: ...

    def touched(self, pms: Iterable[int]) -> None: ...


@dataclass
class Backoff:
    """A PM kept from calls until `until` (seconds on the driver's clock); `level` aborts in a row."""

    until: float
    level: int


def dest_key(run: PlanRun, m: Move) -> str:
    """The hold of running move m at its destination."""
    return f"plan {run.id} move {m.n}"


def old_gi_key(run: PlanRun, m: Move, g: int) -> str:
    """The hold of GI g of move m's VM where it ran before, until its `destroy_gi`."""
    return f"plan {run.id} move {m.n} old gi {g}"


def new_gi_key(run: PlanRun, m: Move, g: int) -> str:
    """The hold of GI g that move m created, left on its host when the move was cut short."""
    return f"plan {run.id} move {m.n} new gi {g}"


def nth_held(m: Move, gi: int) -> int:
    """Where GI `gi` of move m's VM is among what its destination hold holds (all its GIs, or those
    it creates)."""
    return gi if m.inter_pm or m.source is None else m.created.index(gi)
