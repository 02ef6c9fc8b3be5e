"""Sending a `DataCenter` to another process: whole (pickled in pieces, so the sender keeps answering
between them) or as the changes since a copy the other side already has (`StateChanges`)."""

from __future__ import annotations

import io
import pickle
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from origamig.cluster.pm_record import PmRecord
from origamig.cluster.records import Placement, PmSpec, VmSpec


class DataCenter(Protocol):
    """What is sent of a `DataCenter` (its own type would make this module import it back)."""

    pms: tuple[PmSpec, ...]
    _pm: list[PmRecord]
    _owned: set[int] | None
    _journal: list[int]
    vms: dict[str, VmSpec]
    placement: dict[str, Placement]
    pending: dict[str, VmSpec]
    holds: dict[str, tuple[VmSpec, Placement]]
    active_gpus: dict[str, int]
    placed_slices: dict[str, int]


PICKLE_PIECE = 256  # PMs or VMs per piece of a pickled DataCenter
PIECEWISE = ("pms", "_pm", "index", "vms", "placement", "pending")
LOCAL = ("_owned", "_journal")  # not pickled: what a state read back starts afresh

Pickled = tuple[bytes, tuple[tuple[str, bool, int], ...]]


@dataclass(frozen=True)
class StateChanges:
    """What a state changed on some PMs, to bring a copy of it made before the changes up to date
    (`DataCenter.changes_on`, `DataCenter.apply_changes`): those PMs' records, the running VMs on
    them, the order of every running VM, the pending queue and every counter (holds included). Its
    cost follows the PMs named, but for the running VMs' ids (their order)."""

    records: dict[int, PmRecord]
    vms: dict[str, VmSpec]
    placement: dict[str, Placement]
    vm_order: tuple[str, ...]
    placement_order: tuple[str, ...] | None  # None: the order of `vm_order`
    pending: dict[str, VmSpec]
    counters: dict[str, Any]


def _counters(dc: DataCenter) -> dict[str, Any]:
    return {k: v for k, v in dc.__dict__.items() if k not in PIECEWISE and k not in LOCAL}


def changes_on(dc: DataCenter, pms: Iterable[int]) -> StateChanges:
    """`dc`'s PMs `pms` and what goes with them (see `DataCenter.changes_on`)."""
    records = {j: dc._pm[j] for j in dict.fromkeys(pms)}
    vms = {v: dc.vms[v] for rec in records.values() for v in rec.vms}
    vm_order = tuple(dc.vms)
    placement_order = tuple(dc.placement)
    return StateChanges(
        records=records,
        vms=vms,
        placement={v: dc.placement[v] for v in vms},
        vm_order=vm_order,
        placement_order=None if placement_order == vm_order else placement_order,
        pending=dict(dc.pending),
        counters=_counters(dc),
    )


def apply_changes(dc: DataCenter, changes: StateChanges) -> None:
    """Make `dc` the state `changes` were taken from (see `DataCenter.apply_changes`)."""
    vms, placement = dc.vms, dc.placement
    dc.vms = {v: changes.vms[v] if v in changes.vms else vms[v] for v in changes.vm_order}
    order = changes.placement_order if changes.placement_order is not None else changes.vm_order
    dc.placement = {v: changes.placement[v] if v in changes.placement else placement[v] for v in order}
    dc.pending = dict(changes.pending)
    dc.__dict__.update(changes.counters)
    dc.active_gpus = dict(dc.active_gpus)  # counters of its own, not the sender's objects
    dc.placed_slices = dict(dc.placed_slices)
    dc.holds = dict(dc.holds)
    dc._pm = list(dc._pm)  # copies made of this state keep their own list
    for j, record in changes.records.items():
        dc._pm[j] = record
    dc._owned = set()  # the records may be shared with copies: copy before any change
    dc._journal = []


def pickled(dc: DataCenter) -> Pickled:
    """`dc` pickled in pieces of at most `PICKLE_PIECE` PMs or VMs, by one pickler (objects shared
    between pieces stay shared): the interpreter lock is free between pieces, so a process that
    sends a large state to another (the service's optimizer) keeps answering meanwhile."""
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, pickle.HIGHEST_PROTOCOL)
    pickler.dump(_counters(dc))
    layout = []
    for name in PIECEWISE:
        items = getattr(dc, name)
        mapping = isinstance(items, dict)
        seq = list(items.items()) if mapping else list(items)
        chunks = range(0, len(seq), PICKLE_PIECE)
        for i in chunks:
            pickler.dump(seq[i : i + PICKLE_PIECE])
        layout.append((name, mapping, len(chunks)))
    return buf.getvalue(), tuple(layout)


def unpickle_into(dc: DataCenter, state: Pickled) -> None:
    """Read `pickled`'s output back into the bare `dc` (same state, orders included)."""
    data, layout = state
    unpickler = pickle.Unpickler(io.BytesIO(data))
    dc.__dict__.update(unpickler.load())
    dc.__dict__.setdefault("holds", {})
    dc._owned = None  # the records read back belong to this state alone
    dc._journal = []
    for name, mapping, pieces in layout:
        seq = [x for _ in range(pieces) for x in unpickler.load()]
        setattr(dc, name, dict(seq) if mapping else tuple(seq) if name == "pms" else seq)
