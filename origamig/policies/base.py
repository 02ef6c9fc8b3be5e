"""The one small Protocol every placement policy implements, its records, and the registry.

The simulator (and the CLI) talk to policies only through this module: they never branch on a
policy's name. A policy sees the data-center state and the requests, never lifetimes.

Life of a request, as the simulator drives it:
1. `arrive(dc, vm, now, locked)` returns `Placed` (the simulator calls `dc.place`), `Deferred`
   (the simulator puts the VM in `dc.pending`, the policy's queue Q, oldest first) or `Rejection`.
   `locked` holds the PMs of the calls in progress: no arrival may be placed on them.
2. `depart(dc, vm_id, now)` is called after the simulator removed the VM from `dc`.
3. Periodic work: the simulator asks `next_check(now)` when the policy next wants to be asked, and
   at that time calls `work(dc, now, locked)`, which decides on a *copy* of the state and returns
   `Work` (or None). The simulator applies `Work.target` at `now + duration` (the decision's wall
   time, or its modeled time in deterministic mode), drops the VMs that departed meanwhile, rejects
   `Work.rejected`, and then calls `finished(dc, work, now)`. After a `Work` it asks `work` again at
   the same time with that call's PMs added to `locked`, until None: a policy that runs one call at
   a time returns None whenever `locked` is non-empty; one that starts several keeps each call off
   `locked` (calls of one check run side by side on disjoint PMs). No check while a call runs.
   A `Work` whose `pms` is empty (one that only rejects) adds nothing to `locked`, so the simulator
   asks again at once: a policy must not return the same such Work twice in one check.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, VmSpec

if TYPE_CHECKING:
    from origamig.bilp.backends.base import Termination
    from origamig.call.decision import Status
    from origamig.call.kinds import CallKind
    from origamig.plan.steps import Plan


@dataclass(frozen=True)
class Placed:
    """The arriving VM goes to `placement` now."""

    placement: Placement


@dataclass(frozen=True)
class Deferred:
    """The arriving VM waits in the pending queue Q (OrigaMIG's admission path)."""

    reason: str


@dataclass(frozen=True)
class Rejection:
    """The arriving VM fits nowhere: why, what it needed, the best free that was seen."""

    reason: str
    needed: Mapping[str, Any] = field(default_factory=dict)
    free: Mapping[str, Any] = field(default_factory=dict)


ArrivalDecision = Placed | Deferred | Rejection


class CallOutcome(StrEnum):
    """What an OrigaMIG call did (`CallStats.outcome`): its `Status`, with `unchanged` split in two."""

    APPLIED = "applied"  # improved: its plan is applied
    NOT_BETTER = "not_better"  # unchanged: its solution moves or admits some VM, not strictly better
    NO_CHANGE = "no_change"  # unchanged: its solution keeps every VM where it is
    STOPPED_AT_LIMIT = "stopped_at_limit"
    SOLVER_ERROR = "solver_error"
    PLAN_INFEASIBLE = "plan_infeasible"


@dataclass(frozen=True)
class CallStats:
    """What one OrigaMIG solver call found (`Work.call`), for counters, reports and the triggers."""

    status: Status
    changed: bool  # the solution moves or admits some VM
    termination: Termination  # why the solver stopped (optimal, work_limit, ...)
    proved_optimal: bool
    gpu_class: str | None  # the class of a consolidation call
    pms: int  # |M̂|
    vms: int  # |N̂|
    gain: float | None = None  # Eq. (5) gain after the parking cost, when a plan was found
    detail: str = ""

    @property
    def outcome(self) -> CallOutcome:
        """The status, with `unchanged` split in two."""
        from origamig.call.decision import Status  # loaded already: it made `status`

        if self.status == Status.IMPROVED:
            return CallOutcome.APPLIED
        if self.status == Status.UNCHANGED:
            return CallOutcome.NOT_BETTER if self.changed else CallOutcome.NO_CHANGE
        return CallOutcome(self.status)


@dataclass(frozen=True)
class Work:
    """The outcome of one call (OrigaMIG admission/consolidation, TC compaction).

    `target` gives the new placement of every VM it moves or admits (running VMs that keep their
    place may be omitted). `plan` is the executor's ordered plan (None when nothing is applied);
    `pms` are locked while the call runs. `wall_s` is the measured decision time, `modeled_s` the
    time derived from deterministic work (used in deterministic mode); `phases_s` splits the wall
    time into named phases (summed over a run as `RunResult.call_stats_s`); `call` is set by an
    OrigaMIG solver call.

    Migrations of a call, one definition for every policy: each live migration its plan runs,
    moves to the target and parking moves alike (`PlanCost.live_migrations`), copying
    `PlanCost.migrated_gb`; a Work without a plan counts each running VM of `target` that changes
    place once.
    """

    kind: CallKind
    pms: frozenset[int]
    target: Mapping[str, Placement]
    admitted: tuple[str, ...] = ()
    rejected: tuple[str, ...] = ()
    plan: Plan | None = None
    wall_s: float = 0.0
    modeled_s: float = 0.0
    applied: bool = True
    phases_s: Mapping[str, float] = field(default_factory=dict)
    call: CallStats | None = None
    reasons: Mapping[str, str] = field(default_factory=dict)  # why each of `rejected` is (call/reasons.py)


@runtime_checkable
class Policy(Protocol):
    """What every placement policy implements."""

    name: str

    def arrive(self, dc: DataCenter, vm: VmSpec, now: float, locked: frozenset[int]) -> ArrivalDecision:
        """Decide where an arriving VM goes (never mutates `dc`)."""
        ...

    def depart(self, dc: DataCenter, vm_id: str, now: float) -> None:
        """React to a departure (the VM is already removed from `dc`)."""
        ...

    def next_check(self, now: float) -> float | None:
        """When the policy next wants `work` to be called (None: never)."""
        ...

    def work(self, dc: DataCenter, now: float, locked: frozenset[int] = frozenset()) -> Work | None:
        """Periodic work on the current state, off the PMs of the calls running (`locked`); returns
        what to apply, or None."""
        ...

    def finished(self, dc: DataCenter, work: Work, now: float) -> None:
        """Told after `work` was applied (or discarded when `work.applied` is False)."""
        ...

    def counters(self) -> dict[str, float]:
        """Calls and their kinds, wall times, migrations, parking moves, bytes, admitted, rejected."""
        ...


PolicyFactory = Callable[..., Policy]
_REGISTRY: dict[str, PolicyFactory] = {}


def register(name: str) -> Callable[[PolicyFactory], PolicyFactory]:
    """Class decorator: make a policy available by name."""

    def deco(factory: PolicyFactory) -> PolicyFactory:
        _REGISTRY[name] = factory
        return factory

    return deco


def policy_names() -> list[str]:
    """Every policy name, without importing the policies' modules."""
    return sorted(set(_REGISTRY) | set(BUILTIN_POLICIES))


def policy_factory(name: str) -> PolicyFactory:
    """The factory registered as `name` (its module is imported on first use)."""
    from origamig.errors import UserError

    _load_builtin(name)
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UserError(f"--policy: unknown policy {name!r} (known: {', '.join(policy_names())})") from None


def option_names(factory: PolicyFactory) -> frozenset[str] | None:
    """The keyword options `factory` takes: the fields of its `options_type` record and `weights`
    when it has one, else its keyword parameters; None when it takes any keyword."""
    import inspect

    record = getattr(factory, "options_type", None)
    if record is not None:
        return frozenset(f.name for f in fields(record)) | {"weights"}
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return frozenset()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return None
    return frozenset(params)


def make_policy(name: str, **options: Any) -> Policy:
    """A policy by registry name, with its options."""
    return policy_factory(name)(**options)


def _load_builtin(name: str | None = None) -> None:
    """Import the module of built-in policy `name` (every built-in one when None)."""
    import importlib

    modules = BUILTIN_POLICIES.values() if name is None else [BUILTIN_POLICIES.get(name)]
    for module in modules:
        if module is not None:
            importlib.import_module(f"origamig.policies.{module}")


# Built-in policies: registry name → module (under origamig.policies) whose import registers it.
# Imported lazily, so that a run of FF does not pay for importing the BILP stack.
BUILTIN_POLICIES: dict[str, str] = {
    "ff": "ff",
    "mfi": "mfi",
    "dra": "dra",
    "fgd": "fgd",
    "grmu": "grmu.policy",
    "tc": "tc.policy",
    "origamig": "optimizer.policy",
}
