"""VM requests as the service reads them: a snapshot VM entry without `placement`, read by the
snapshot reader's own entry reader (docs/formats.md#snapshot) — a Kubernetes pod is turned into such
an entry first (`pods.py`).

The reader resolves profile names against the GPU models on the snapshot's PMs, in order of first
appearance (`EntryContext`, worked out once), so an entry reads exactly as it would inside the whole
snapshot.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from origamig.cluster.catalog import Catalog, GpuModel, default_catalog
from origamig.cluster.records import PmSpec, VmSpec
from origamig.errors import UserError
from origamig.serve.door import id_problem
from origamig.snapshot.document import Snapshot
from origamig.snapshot.reader import read_vm_entry as read_one_entry

ENTRY_PATH = "vm"  # the path the entry reader names fields under (taken off: `cpu: missing`)


class RequestError(UserError):
    """A request the service refuses (HTTP 400): one line per problem, naming the field and value."""


@dataclass(frozen=True)
class EntryContext:
    """What a VM entry is read against: the GPU models on the PMs (order of first appearance) and the
    catalog with the snapshot's inline models."""

    present: tuple[GpuModel, ...]
    catalog: Catalog
    pin: Callable[[VmSpec], VmSpec] | None = None  # the platform's pin of what it cannot move

    @classmethod
    def of(cls, snap: Snapshot) -> EntryContext:
        return cls(snap.present_models, default_catalog().with_gpus(snap.gpu_models))


def most_gis(pms: Sequence[PmSpec]) -> int:
    """The most GIs any PM can hold (one per memory slice): a request for more fits nowhere."""
    return max((sum(g.memory_slices for g in pm.gpus) for pm in pms), default=0)


def gi_count_problem(count: int, limit: int, where: str = "gis") -> str | None:
    """Why `count` GIs are refused at once (more than any PM holds), or None."""
    if count > limit:
        return f"{where}: {count} GIs is more than any PM holds (at most {limit})"
    return None


def read_vm_entry(raw: Any, context: EntryContext, limit: int | None = None) -> VmSpec:
    """The VM of request entry `raw` (its `placement`, if any, is read by the caller); `RequestError`
    names every bad field (`gis[0]: ...`). A request for more than `limit` GIs is refused before it is
    read."""
    if not isinstance(raw, dict):
        raise RequestError(f"body: expected a VM object, got {type(raw).__name__}")
    if not isinstance(raw.get("id"), str) or not raw["id"].strip():
        raise RequestError(f"id: {raw.get('id')!r} is not a non-empty string")
    problem = id_problem(raw["id"])
    if problem is not None:
        raise RequestError(problem)
    gis = raw.get("gis")
    problem = gi_count_problem(len(gis), limit) if isinstance(gis, list) and limit is not None else None
    if problem is not None:
        raise RequestError(problem)
    raw = {k: v for k, v in raw.items() if k != "placement"}
    vm, problems = read_one_entry(raw, context.present, context.catalog, ENTRY_PATH)
    if vm is None:
        raise RequestError([line.removeprefix(f"{ENTRY_PATH}.") for line in problems])
    return context.pin(vm) if context.pin is not None else vm
