"""`GET /v1/snapshot` as JSON bytes, kept up to date piece by piece: each VM's entry and each PM's is
encoded once and reused while it stays the same, so a read costs a look-up per VM, not an encoding
of the whole cluster — and, made in small pieces, it never holds the interpreter for long while the
event loop waits (docs/service.md#faults-and-limits).

The document is the one `snapshot_document` makes (docs/formats.md#snapshot): the seed's fields, its
PMs (a PM that hosts a VM without `powered_off`), and every VM entry in arrival order with its
placement when it runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from origamig.cluster.records import Placement, PmSpec


def _encode(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


class SnapshotView:
    """The encoded pieces of the live snapshot; `render` joins them."""

    def __init__(self, seed: Mapping[str, Any], pms: Sequence[PmSpec]) -> None:
        self.pms = pms
        head = {k: v for k, v in seed.items() if k not in ("pms", "vms")}
        self.head = _encode(head)[:-1] + (b"," if head else b"")  # `{...,` to which pms and vms are added
        entries = list(seed.get("pms", []))
        # Per PM: its entry while it hosts a VM (never powered off), and as the seed has it otherwise.
        self.pm_pieces = [
            (_encode({k: v for k, v in e.items() if k != "powered_off"}), _encode(e)) for e in entries
        ]
        self.vm_pieces: dict[str, tuple[Mapping[str, Any], Placement | None, bytes]] = {}

    def render(self, entries: Sequence[Mapping[str, Any]], placement: Mapping[str, Placement]) -> bytes:
        """The snapshot of VM `entries` (arrival order; never changed once stored) placed at
        `placement`, as JSON bytes."""
        hosts = {pl.pm for pl in placement.values()}
        pms = b",".join(on if j in hosts else seed for j, (on, seed) in enumerate(self.pm_pieces))
        old, new = self.vm_pieces, {}
        for entry in entries:
            vm = entry["id"]
            pl = placement.get(vm)
            hit = old.get(vm)
            if hit is None or hit[0] is not entry or (hit[1] is not pl and hit[1] != pl):
                hit = (entry, pl, _encode(self._vm_json(entry, pl)))
            new[vm] = hit
        self.vm_pieces = new  # VMs that left are forgotten
        vms = b",".join(piece for _, _, piece in new.values())
        return self.head + b'"pms":[' + pms + b'],"vms":[' + vms + b"]}"

    def _vm_json(self, entry: Mapping[str, Any], pl: Placement | None) -> dict[str, Any]:
        out = {k: v for k, v in entry.items() if k != "placement"}
        if pl is not None:
            out["placement"] = {
                "pm": self.pms[pl.pm].id,
                "gis": [{"gpu": s.gpu, "start": s.start} for s in pl.gis],
            }
        return out
