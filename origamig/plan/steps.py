"""Migration plans (docs/formats.md#plan): their steps, cost and JSON (`render.py` draws them).

A plan is a list of steps run strictly in order. Each step is one frozen record whose `to_dict()` is
exactly the JSON object of docs/formats.md#plan (`{"op": "migrate", "vm": .., "from": .., "to": ..}`, plus
`"parking": true` on the steps of a parking move). PMs are named by their ids, GPUs by their index
on the PM. The executor (`executor.py`) builds plans; `replay.py` checks them independently.

Cost model (docs/policies.md#executor, docs/solving.md#move-costs): an inter-PM live migration copies the
VM's RAM plus the memory of its GIs over the network at `bandwidth_gbit_s` (default 12.5 Gbit/s, half
of a 25 Gbit/s link) — `bytes_copied` and `duration_s`, as the simulator counts them; an intra-PM move
(between GIs of one PM) copies the memory of the GIs that change place inside the server
(`local_bytes_copied`, at the same rate); each GI created or destroyed takes its GPU model's
`gi_create_s` / `gi_destroy_s`. `total_s` adds all three. 1 GB = 10⁹ bytes, 1 MB = 10⁶ bytes, as
everywhere in the package.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from origamig.cluster.records import Placement, VmSpec
from origamig.wording import count

DEFAULT_BANDWIDTH_GBIT_S = 12.5  # half of a 25 Gbit/s link (docs/policies.md#executor)


# --- steps ---------------------------------------------------------------------------------------
class StepOp(StrEnum):
    """The `op` of a plan step (docs/formats.md#plan), in the order a plan runs its kinds."""

    POWER_ON = "power_on"
    CREATE_GI = "create_gi"
    MIGRATE = "migrate"
    START = "start"
    DESTROY_GI = "destroy_gi"
    POWER_OFF = "power_off"


@dataclass(frozen=True)
class PowerOn:
    """Switch PM `pm` on (before the first VM step)."""

    op: ClassVar[StepOp] = StepOp.POWER_ON
    pm: str
    parking: bool = False

    def to_dict(self) -> dict[str, Any]:
        return _with_parking({"op": self.op, "pm": self.pm}, self.parking)


@dataclass(frozen=True)
class CreateGi:
    """Create GI number `gi` of VM `vm` on GPU `gpu` of PM `pm` at start slice `start`."""

    op: ClassVar[StepOp] = StepOp.CREATE_GI
    vm: str
    gi: int
    pm: str
    gpu: int
    start: int
    parking: bool = False

    def to_dict(self) -> dict[str, Any]:
        d = {"op": self.op, "vm": self.vm, "gi": self.gi, "pm": self.pm, "gpu": self.gpu, "start": self.start}
        return _with_parking(d, self.parking)


@dataclass(frozen=True)
class Migrate:
    """Live-migrate VM `vm` from PM `from_pm` to PM `to_pm` (equal: a move between GIs of one PM)."""

    op: ClassVar[StepOp] = StepOp.MIGRATE
    vm: str
    from_pm: str
    to_pm: str
    parking: bool = False

    @property
    def inter_pm(self) -> bool:
        return self.from_pm != self.to_pm

    def to_dict(self) -> dict[str, Any]:
        return _with_parking(
            {"op": self.op, "vm": self.vm, "from": self.from_pm, "to": self.to_pm}, self.parking
        )


@dataclass(frozen=True)
class Start:
    """Start the admitted pending VM `vm` on PM `pm` (its GIs exist already)."""

    op: ClassVar[StepOp] = StepOp.START
    vm: str
    pm: str
    parking: bool = False

    def to_dict(self) -> dict[str, Any]:
        return _with_parking({"op": self.op, "vm": self.vm, "pm": self.pm}, self.parking)


@dataclass(frozen=True)
class DestroyGi:
    """Destroy the old GI number `gi` of VM `vm` on GPU `gpu` of PM `pm` at start slice `start`."""

    op: ClassVar[StepOp] = StepOp.DESTROY_GI
    vm: str
    gi: int
    pm: str
    gpu: int
    start: int
    parking: bool = False

    def to_dict(self) -> dict[str, Any]:
        d = {"op": self.op, "vm": self.vm, "gi": self.gi, "pm": self.pm, "gpu": self.gpu, "start": self.start}
        return _with_parking(d, self.parking)


@dataclass(frozen=True)
class PowerOff:
    """Switch the empty PM `pm` off (after the last VM step)."""

    op: ClassVar[StepOp] = StepOp.POWER_OFF
    pm: str
    parking: bool = False

    def to_dict(self) -> dict[str, Any]:
        return _with_parking({"op": self.op, "pm": self.pm}, self.parking)


Step = PowerOn | CreateGi | Migrate | Start | DestroyGi | PowerOff

STEP_OPS: tuple[str, ...] = tuple(StepOp)


def _with_parking(d: dict[str, Any], parking: bool) -> dict[str, Any]:
    if parking:
        d["parking"] = True
    return d


# --- cost ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MoveRecord:
    """One live migration or start of a plan, with what it copies over the network."""

    vm: str
    from_pm: str | None  # None for a start
    to_pm: str
    parking: bool
    bytes_copied: int  # over the network (a move between PMs)
    duration_s: float  # of that network copy
    local_bytes_copied: int = 0  # GI memory copied inside the server (a move inside a PM)
    local_s: float = 0.0  # of that local copy
    gi_operations: int = 0  # GIs created and destroyed by this move
    gi_operations_s: float = 0.0

    @property
    def total_s(self) -> float:
        """Network copy, local copy and GI operations, one after another."""
        return self.duration_s + self.local_s + self.gi_operations_s

    @property
    def inter_pm(self) -> bool:
        return self.from_pm is not None and self.from_pm != self.to_pm


def move_bytes(vm: VmSpec) -> int:
    """Bytes an inter-PM live migration of `vm` copies: its RAM plus the memory of its GIs."""
    return vm.ram_mb * 10**6 + gi_bytes(vm, range(len(vm.gis)))


def gi_bytes(vm: VmSpec, gis: Sequence[int]) -> int:
    """Bytes of GPU memory of the GIs numbered `gis` of `vm` (what a move inside a PM copies)."""
    return sum(round(vm.gis[n].memory_gb * 10**9) for n in gis)


def transfer_seconds(n_bytes: int, bandwidth_gbit_s: float) -> float:
    """Seconds to copy `n_bytes` at `bandwidth_gbit_s` (10⁹ bit/s per Gbit/s)."""
    return n_bytes * 8 / (bandwidth_gbit_s * 1e9)


@dataclass(frozen=True)
class PlanCost:
    """What a plan costs. `migrations_*` count the moves to the target, `parking_*` the parking moves;
    every one of them is a live migration (`live_migrations`).

    The decision rule (docs/policies.md#decision) subtracts δ_i per intra-PM parking move and 2δ_i per
    inter-PM one (`parking_penalty`). `bytes_copied` and `duration_s` sum over the inter-PM live migrations,
    parking included (steps run in order, so durations add up).
    """

    migrations_intra: int = 0
    migrations_inter: int = 0
    parking_intra: int = 0
    parking_inter: int = 0
    starts: int = 0
    bytes_copied: int = 0
    duration_s: float = 0.0
    bandwidth_gbit_s: float = DEFAULT_BANDWIDTH_GBIT_S
    pms_on: int = 0
    pms_off: int = 0
    local_bytes_copied: int = 0
    gi_operations: int = 0
    gi_operations_s: float = 0.0
    total_s: float = 0.0

    @property
    def migrations(self) -> int:
        """Moves to the target (intra + inter), parking moves excluded."""
        return self.migrations_intra + self.migrations_inter

    @property
    def parking(self) -> int:
        return self.parking_intra + self.parking_inter

    @property
    def live_migrations(self) -> int:
        """Every migrate step: moves to the target plus parking moves."""
        return self.migrations + self.parking

    @property
    def bytes(self) -> int:
        """Alias of `bytes_copied`."""
        return self.bytes_copied

    @property
    def migrated_gb(self) -> float:
        return self.bytes_copied / 1e9

    def parking_penalty(self, delta: float) -> float:
        """δ per intra-PM parking move plus 2δ per inter-PM one, for one uniform δ (see `decision.py`)."""
        return delta * (self.parking_intra + 2 * self.parking_inter)

    def to_dict(self) -> dict[str, Any]:
        return {
            "migrations_intra": self.migrations_intra,
            "migrations_inter": self.migrations_inter,
            "parking_intra": self.parking_intra,
            "parking_inter": self.parking_inter,
            "starts": self.starts,
            "bytes_copied": self.bytes_copied,
            "migrated_gb": self.migrated_gb,
            "duration_s": self.duration_s,
            "bandwidth_gbit_s": self.bandwidth_gbit_s,
            "pms_on": self.pms_on,
            "pms_off": self.pms_off,
            "local_bytes_copied": self.local_bytes_copied,
            "gi_operations": self.gi_operations,
            "gi_operations_s": self.gi_operations_s,
            "total_s": self.total_s,
        }

    def describe(self) -> str:
        """One line for humans."""
        return (
            f"{count(self.migrations, 'migration')} "
            f"({self.migrations_intra} intra-PM, {self.migrations_inter} inter-PM)"
            f" + {self.parking} parking ({self.parking_intra} intra, {self.parking_inter} inter), "
            f"{count(self.starts, 'start')}, {self.migrated_gb:g} GB copied between PMs and "
            f"{self.local_bytes_copied / 1e9:g} GB inside PMs at {self.bandwidth_gbit_s:g} Gbit/s, "
            f"{count(self.gi_operations, 'GI')} created or destroyed, ~{self.total_s:.1f} s in all, "
            f"{count(self.pms_on, 'PM')} on, {self.pms_off} off"
        )


def cost_of(moves: Sequence[MoveRecord], steps: Sequence[Step], bandwidth_gbit_s: float) -> PlanCost:
    """The `PlanCost` of a plan from its move records and steps."""
    migs = [m for m in moves if m.from_pm is not None]
    return PlanCost(
        migrations_intra=sum(1 for m in migs if not m.parking and not m.inter_pm),
        migrations_inter=sum(1 for m in migs if not m.parking and m.inter_pm),
        parking_intra=sum(1 for m in migs if m.parking and not m.inter_pm),
        parking_inter=sum(1 for m in migs if m.parking and m.inter_pm),
        starts=len(moves) - len(migs),
        bytes_copied=sum(m.bytes_copied for m in moves),
        duration_s=sum(m.duration_s for m in moves),
        bandwidth_gbit_s=bandwidth_gbit_s,
        pms_on=sum(1 for s in steps if isinstance(s, PowerOn)),
        pms_off=sum(1 for s in steps if isinstance(s, PowerOff)),
        local_bytes_copied=sum(m.local_bytes_copied for m in moves),
        gi_operations=sum(m.gi_operations for m in moves),
        gi_operations_s=sum(m.gi_operations_s for m in moves),
        total_s=sum(m.total_s for m in moves),
    )


# --- plan ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Infeasible:
    """No always-valid plan was found: why, and the VMs of the blocked cycle(s)."""

    reason: str
    blocked: tuple[str, ...] = ()


@dataclass(frozen=True)
class Plan:
    """An ordered, always-valid plan: its steps, moves, cost, parked VMs and the state it ends in.

    `final_placement` is the placement of every running VM after the last step (VM id → Placement).
    """

    steps: tuple[Step, ...]
    cost: PlanCost
    parked: tuple[str, ...] = ()
    moves: tuple[MoveRecord, ...] = ()
    final_placement: Mapping[str, Placement] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.steps)

    @property
    def vm_steps(self) -> int:
        """Migrations plus starts: each with its create_gi/destroy_gi ops counts as one step."""
        return len(self.moves)

    def to_json(self) -> list[dict[str, Any]]:
        """The plan as JSON (docs/formats.md#plan): a list of step objects."""
        return [s.to_dict() for s in self.steps]
