"""The migration model, one for every policy: what a plan's moves cost in time and what each holds
while it runs (docs/plans.md#in-time).

A plan (`plan/steps.py`) is cut into *moves*: each VM step of the executor — its `create_gi` steps,
its `migrate` or `start`, its `destroy_gi` steps — is one move, and each power step is one move of
no duration. A move's duration:

- between PMs: the VM's RAM and its GIs' memory copied over the migration link of the source and of
  the destination (`bandwidth_gbit_s`, 12.5 Gbit/s: half of a 25 Gbit/s NIC), plus its GI operations;
- inside one PM (GIs change place): the memory of the GIs that move, copied inside the server at
  `local_gbit_s` (default: the link's rate), plus its GI operations; no link is used;
- a start: the GIs created for the VM (no copy).

GI operations take the GPU model's `gi_create_s` / `gi_destroy_s` (models/gpus/*.toml, 1 s each),
or `gi_operation_s` for every GI when given. The paper prices a migration between PMs at 70 s on
average; the default workload's mean inter-PM move here is about that (docs/plans.md#in-time).

While a move runs, its VM holds its resources at both ends — at the source it still runs there; at
the destination the move holds (`DataCenter.hold`) its new GIs' slices and, between PMs or for a
start, its CPU and RAM — and nothing else is held.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from origamig.cluster.records import GiSlot, Placement, VmSpec
from origamig.errors import UserError
from origamig.plan.steps import (
    DEFAULT_BANDWIDTH_GBIT_S,
    CreateGi,
    DestroyGi,
    Migrate,
    PowerOff,
    PowerOn,
    Start,
    Step,
    gi_bytes,
    move_bytes,
    transfer_seconds,
)

if TYPE_CHECKING:
    from origamig.cluster.datacenter import DataCenter


@dataclass(frozen=True)
class MigrationModel:
    """Rates and times of the moves (docs/plans.md#in-time): a simulation option, the service's too."""

    bandwidth_gbit_s: float = DEFAULT_BANDWIDTH_GBIT_S  # each PM's migration link
    local_gbit_s: float | None = None  # GI memory copied inside a PM; None: `bandwidth_gbit_s`
    gi_operation_s: float | None = None  # each GI created or destroyed; None: the GPU model's

    def __post_init__(self) -> None:
        problems = []
        for name in ("bandwidth_gbit_s", "local_gbit_s"):
            value = getattr(self, name)
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if value is not None and not (number and value > 0):
                problems.append(f"{name}: {value!r} must be a positive number of Gbit/s")
        gi = self.gi_operation_s
        if gi is not None and not (isinstance(gi, int | float) and not isinstance(gi, bool) and gi >= 0):
            problems.append(f"gi_operation_s: {self.gi_operation_s!r} must be a number of seconds ≥ 0")
        if problems:
            raise UserError(problems)

    @classmethod
    def of(
        cls, pairs: Mapping[str, Any] | Sequence[tuple[str, Any]], where: str = "--migration"
    ) -> MigrationModel:
        """The model with the settings `pairs` (KEY=VALUE options), an unknown key named."""
        given = dict(pairs)
        known = [f.name for f in fields(cls)]
        unknown = sorted(k for k in given if k not in known)
        if unknown:
            raise UserError([f"{where}: {k!r} is not a setting (known: {', '.join(known)})" for k in unknown])
        try:
            return cls(**given)
        except UserError as exc:
            raise UserError([f"{where}: {line}" for line in exc.problems]) from None

    @property
    def local_rate(self) -> float:
        return self.local_gbit_s if self.local_gbit_s is not None else self.bandwidth_gbit_s


@dataclass(frozen=True)
class Move:
    """One move of a plan: a VM step (its GI, migrate|start and GI steps) or one power step.

    `steps` index the plan's steps; `source` is where the VM runs before (None for a start),
    `target` after; `created` the GIs it creates (their slots in `target`) and destroys (their slots
    in `source`); `pms` the PMs it touches; `after` the earlier moves of its plan that touch one of
    them (it starts after those ended: the executor's order on each PM)."""

    n: int
    steps: tuple[int, ...]
    vm: str | None = None
    source: Placement | None = None
    target: Placement | None = None
    created: tuple[int, ...] = ()
    parking: bool = False
    pms: frozenset[int] = frozenset()
    duration_s: float = 0.0
    network_bytes: int = 0
    after: tuple[int, ...] = field(default=(), compare=False)

    @property
    def inter_pm(self) -> bool:
        """Copies over the network: a move of a running VM between two PMs (uses both links)."""
        return self.source is not None and self.target is not None and self.source.pm != self.target.pm

    @property
    def is_start(self) -> bool:
        return self.vm is not None and self.source is None

    @property
    def is_migration(self) -> bool:
        """A live migration (between PMs or inside one): counted as one."""
        return self.source is not None

    @property
    def power_pm(self) -> int | None:
        """The PM of a power step (None for a VM step)."""
        return next(iter(self.pms)) if self.vm is None else None


def held_at_destination(vm: VmSpec, move: Move) -> tuple[VmSpec, Placement]:
    """What a running move holds where its VM goes: its new GIs' slices and, for a start or a move
    between PMs, its CPU and RAM (a record named by the VM; `DataCenter.hold` renames it)."""
    assert move.target is not None
    if move.inter_pm or move.source is None:
        return vm, move.target
    profiles = tuple(vm.gis[n] for n in move.created)
    slots = tuple(move.target.gis[n] for n in move.created)
    return VmSpec(vm.id, 0, 0, profiles), Placement(move.target.pm, slots)


def old_gi(vm: VmSpec, move: Move, n: int) -> tuple[VmSpec, Placement]:
    """GI number n of `vm` where it ran before `move` (a record of its slices alone): what the host
    keeps until its `destroy_gi` step is done."""
    assert move.source is not None
    return VmSpec(vm.id, 0, 0, (vm.gis[n],)), Placement(move.source.pm, (move.source.gis[n],))


def moves_of(
    steps: Sequence[Step],
    dc: DataCenter,
    model: MigrationModel,
    pending: Mapping[str, VmSpec] | None = None,
    first_step: int = 0,
    first_move: int = 0,
) -> tuple[Move, ...]:
    """The moves of plan `steps`, in their order, read against `dc` (the state they start from: where
    each VM runs; a VM to start is pending there or in `pending`); steps numbered from `first_step`,
    moves from `first_move`. Durations follow `model`."""
    where: dict[str, Placement] = {}
    out: list[Move] = []
    i = 0
    while i < len(steps):
        step = steps[i]
        n = first_move + len(out)
        if isinstance(step, PowerOn | PowerOff):
            out.append(Move(n, (first_step + i,), pms=frozenset({dc.index[step.pm]})))
            i += 1
            continue
        core = next(s for s in steps[i:] if isinstance(s, Migrate | Start))
        vm = dc.vms.get(core.vm) or (pending or {}).get(core.vm) or dc.pending[core.vm]
        i, move = _vm_step(steps, i, vm, dc, where, n, first_step)
        out.append(_timed(move, vm, dc, model))
    return tuple(_with_order(out))


def _vm_step(
    steps: Sequence[Step],
    i: int,
    vm: VmSpec,
    dc: DataCenter,
    where: dict[str, Placement],
    n: int,
    first_step: int,
) -> tuple[int, Move]:
    """The VM step of `vm` starting at steps[i] (create_gi…, migrate|start, destroy_gi…): where it
    ends, and its move (not timed yet)."""
    created: dict[int, GiSlot] = {}
    j = i
    while isinstance(step := steps[j], CreateGi):
        created[step.gi] = GiSlot(step.gpu, step.start)
        j += 1
    core = steps[j]
    assert isinstance(core, Migrate | Start), f"a VM step without migrate or start at step {j}"
    to_pm = dc.index[core.to_pm if isinstance(core, Migrate) else core.pm]
    j += 1
    while j < len(steps) and isinstance(step := steps[j], DestroyGi) and step.vm == vm.id:
        j += 1
    source = where.get(vm.id, dc.placement.get(vm.id)) if isinstance(core, Migrate) else None
    if source is None:
        target = Placement(to_pm, tuple(created[g] for g in range(len(created))))
    else:
        target = Placement(to_pm, tuple(created.get(g, source.gis[g]) for g in range(len(source.gis))))
    where[vm.id] = target
    move = Move(
        n,
        tuple(range(first_step + i, first_step + j)),
        vm=vm.id,
        source=source,
        target=target,
        created=tuple(sorted(created)),
        parking=core.parking,
        pms=frozenset({to_pm} | ({source.pm} if source is not None else set())),
    )
    return j, move


def _timed(move: Move, vm: VmSpec, dc: DataCenter, model: MigrationModel) -> Move:
    """`move` with its duration and the bytes it copies over the network (module doc)."""
    assert move.target is not None
    if move.source is None:
        vm = vm.placed_on(dc.pms[move.target.pm], move.target)
    gi_s = 0.0
    for g in move.created:
        slot = move.target.gis[g]
        gi_s += _gi_time(model, dc.gpu_model(move.target.pm, slot.gpu).gi_create_s)
        if move.source is not None:
            old = move.source.gis[g]
            gi_s += _gi_time(model, dc.gpu_model(move.source.pm, old.gpu).gi_destroy_s)
    if move.inter_pm:
        n_bytes = move_bytes(vm)
        copy_s = transfer_seconds(n_bytes, model.bandwidth_gbit_s)
    elif move.source is not None:
        n_bytes = 0
        copy_s = transfer_seconds(gi_bytes(vm, move.created), model.local_rate)
    else:
        n_bytes, copy_s = 0, 0.0
    return replace(move, duration_s=copy_s + gi_s, network_bytes=n_bytes)


def _gi_time(model: MigrationModel, of_model: float) -> float:
    return model.gi_operation_s if model.gi_operation_s is not None else of_model


def _with_order(moves: list[Move]) -> list[Move]:
    """Each move with the earlier moves that touch one of its PMs (`Move.after`)."""
    last_on: dict[int, list[int]] = {}
    out: list[Move] = []
    for m in moves:
        after = sorted({k for j in m.pms for k in last_on.get(j, ())})
        out.append(replace(m, after=tuple(after)))
        for j in m.pms:
            last_on.setdefault(j, []).append(m.n)
    return out
