"""`GET /v1/snapshot` as JSON bytes, kept up to date piece by piece: each VM's entry and each PM's is
encoded once and reused while it stays the same, so a read costs the VMs that changed since the last
one and a join, not an encoding of the whole cluster, nor even a look at every VM.

The document is the one `snapshot_document` makes (docs/formats.md#snapshot): the seed's fields, its
PMs (a PM that hosts a VM without `powered_off`), and every VM entry in arrival order with its
placement when it runs. The view holds the VM entries itself (`add`, `remove`), so its pieces keep
their order; what moved it learns from the data center's journal (`DataCenter.journal`): the VMs on a
PM the journal names, and those last encoded as on it, are looked at again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, PmSpec


def _encode(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _pm_pieces(entry: Mapping[str, Any]) -> tuple[bytes, bytes]:
    """A PM's entry while it hosts a VM (never powered off), and as the seed has it otherwise."""
    return _encode({k: v for k, v in entry.items() if k != "powered_off"}), _encode(entry)


class SnapshotView:
    """The VM entries of the live state (arrival order; an entry is never changed once stored) and
    the encoded pieces of its snapshot; `render` brings the pieces up to date and joins them."""

    def __init__(
        self, seed: Mapping[str, Any], pms: Sequence[PmSpec], entries: Iterable[Mapping[str, Any]]
    ) -> None:
        self.pms = pms
        head = {k: v for k, v in seed.items() if k not in ("pms", "vms")}
        self.head = _encode(head)[:-1] + (b"," if head else b"")  # `{...,` to which pms and vms are added
        # Per PM: its entry while it hosts a VM (never powered off), and as the seed has it otherwise.
        self.pm_pieces = [_pm_pieces(e) for e in seed.get("pms", [])]
        self.entries: dict[str, Mapping[str, Any]] = {e["id"]: e for e in entries}
        self._pieces: dict[str, bytes] = {}  # per VM, in the order of `entries` once rendered
        self._where: dict[str, Placement | None] = {}  # the placement each piece was encoded with
        self._on_pm: dict[int, set[str]] = {}  # the VMs encoded as running on each PM
        self._new: dict[str, None] = dict.fromkeys(self.entries)  # entries not encoded yet
        self._journal: list[int] | None = None  # the data center's journal, and how far it was read
        self._read = 0
        self._pms_bytes: bytes | None = None  # the joined PM pieces, while no PM's hosting changes

    def put_pm(self, j: int, entry: Mapping[str, Any], pms: Sequence[PmSpec]) -> None:
        """PM j's entry as the seed has it now (`pms`: the fleet's PMs, PM j added last or changed)."""
        if j == len(self.pm_pieces):
            self.pm_pieces.append(_pm_pieces(entry))
        else:
            self.pm_pieces[j] = _pm_pieces(entry)
        self.pms = pms
        self._pms_bytes = None

    def add(self, entry: Mapping[str, Any]) -> None:
        """A VM entry stored (after every other; an id stored before goes last)."""
        vm = entry["id"]
        if vm in self.entries:
            self.remove(vm)
        self.entries[vm] = entry
        self._new[vm] = None

    def remove(self, vm: str) -> None:
        """A VM entry gone."""
        del self.entries[vm]
        self._new.pop(vm, None)
        if self._pieces.pop(vm, None) is not None:
            self._unplace(vm)

    def render(self, dc: DataCenter) -> bytes:
        """The snapshot of the entries placed as `dc` has them, as JSON bytes (call it under the lock
        that guards `dc` and the entries)."""
        self._catch_up(dc)
        if self._new:
            placement = dc.placement
            # new entries go last, in the order they came
            for vm in self._new:
                self._encode_vm(vm, placement.get(vm))
            self._new = {}
        if self._pms_bytes is None:
            self._pms_bytes = b",".join(
                on if self._on_pm.get(j) else seed for j, (on, seed) in enumerate(self.pm_pieces)
            )
        vms = b",".join(self._pieces.values())
        return self.head + b'"pms":[' + self._pms_bytes + b'],"vms":[' + vms + b"]}"

    def _catch_up(self, dc: DataCenter) -> None:
        """Encode again the VMs whose placement changed since the last render."""
        journal = dc.journal()
        changed: Iterable[int]
        if journal is not self._journal:  # another journal: every PM may have changed
            changed = range(len(self.pms))
            self._journal = journal
        else:
            changed = dict.fromkeys(journal[self._read :])
        self._read = len(journal)
        placement = dc.placement
        for j in changed:
            for vm in (*self._on_pm.get(j, ()), *dc.vms_on(j)):
                pl = placement.get(vm)
                if vm in self._pieces and vm not in self._new and self._where[vm] != pl:
                    self._unplace(vm)
                    self._encode_vm(vm, pl)

    def _encode_vm(self, vm: str, pl: Placement | None) -> None:
        entry = self.entries[vm]
        out = {k: v for k, v in entry.items() if k != "placement"}
        if pl is not None:
            out["placement"] = {
                "pm": self.pms[pl.pm].id,
                "gis": [{"gpu": s.gpu, "start": s.start} for s in pl.gis],
            }
            on = self._on_pm.setdefault(pl.pm, set())
            if not on:
                self._pms_bytes = None
            on.add(vm)
        self._pieces[vm] = _encode(out)
        self._where[vm] = pl

    def _unplace(self, vm: str) -> None:
        pl = self._where.pop(vm)
        if pl is not None:
            on = self._on_pm[pl.pm]
            on.discard(vm)
            if not on:
                self._pms_bytes = None
