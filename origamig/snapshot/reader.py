"""Reading a snapshot document into records, with every problem collected by JSON path.

Used by `origamig.snapshot.document`; see that module for the format. Fields are read with the toolkit of
`fields.py`, the PMs by `pm_reader.py`, the VMs by `vm_reader.py` and their placements by
`placement_reader.py`, whose constraints (GPU, class, permitted start, overlap, CPU/RAM, powered-off
PM) are judged by the rules of `check.py` and said with the snapshot's paths and values; this module
reads the document around them (version, weights) and reads one entry on its own. Each problem is one
line `<json path>: <problem with the value>`; nothing stops at the first problem, and a record whose
fields are wrong is left out so that later checks do not repeat it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from origamig.cluster.catalog import Catalog, GpuModel
from origamig.cluster.records import Placement, PmSpec, VmSpec, Weights
from origamig.snapshot.fields import MISSING, kind_of, show
from origamig.snapshot.vm_reader import VmReader

SNAPSHOT_VERSION = 1
WEIGHT_KEYS = ("accept", "pm", "gpu", "free_start", "migration")


@dataclass(frozen=True)
class SnapshotParts:
    """What a valid document holds, as records."""

    pms: tuple[PmSpec, ...]
    vms: dict[str, VmSpec]
    placement: dict[str, Placement]
    weights: Weights
    gpu_models: dict[str, GpuModel]
    intra_pm_moves: bool = True


def read_document(doc: Any, catalog: Catalog, fast: bool = True) -> tuple[SnapshotParts | None, list[str]]:
    """Records of `doc` (None when it has problems) and the list of every problem found; `fast`:
    plain VM entries take the one-pass reader (`plain_vm.py`), which gives the same answer."""
    reader = _Reader(catalog, fast)
    parts = reader.read(doc)
    return (parts if not reader.problems else None), reader.problems


def read_vm_entry(
    raw: Any, present: Sequence[GpuModel], catalog: Catalog, path: str = "vm"
) -> tuple[VmSpec | None, list[str]]:
    """One VM entry without `placement`, read exactly as inside a snapshot whose PMs carry the GPU
    models `present` (in order of first appearance) with `catalog` (inline models included): the VM
    (None when it has problems) and every problem, by path under `path`. The service reads each VM
    request with it; the snapshot reader reads each entry the same way (`VmReader.read_vm`)."""
    reader = _Reader(catalog)
    if not isinstance(raw, dict):
        reader.err(path, f"expected an object, got {show(raw)} ({kind_of(raw)})")
        return None, reader.problems
    if "placement" in raw:
        reader.err(f"{path}.placement", "a VM entry read on its own has no placement")
        return None, reader.problems
    vm, _, _ = reader.read_vm(raw, path, {}, [], {}, list(present), catalog, blind=False)
    return (vm if not reader.problems else None), reader.problems


def read_pm_entry(raw: Any, catalog: Catalog, path: str = "pm") -> tuple[PmSpec | None, list[str]]:
    """One PM entry, read exactly as inside a snapshot with `catalog` (inline models included): the PM
    (None when it has problems) and every problem, by path under `path`. The service reads a server
    added to its fleet with it (`PUT /v1/pms/{id}`)."""
    reader = _Reader(catalog)
    spec, _ = reader.read_pm(raw, 0, catalog, path)
    return (spec if not reader.problems else None), reader.problems


class _Reader(VmReader):
    """Collects every problem of a document while building its records."""

    # --- the document ------------------------------------------------------------------------
    def read(self, doc: Any) -> SnapshotParts | None:
        if not isinstance(doc, dict):
            self.err("snapshot", f"expected an object, got {kind_of(doc)}")
            return None
        version = self.field(doc, "", "version")
        if version is not MISSING and (isinstance(version, bool) or version != SNAPSHOT_VERSION):
            self.err("version", f"{show(version)} is not a supported version (supported: {SNAPSHOT_VERSION})")
        models = self.read_models(doc.get("gpu_models", MISSING))
        pms_raw = self.list_field(doc, "pms")
        vms_raw = self.list_field(doc, "vms")
        catalog = self.catalog.with_gpus(models)
        self.pm_ids = {
            raw.get("id") for raw in pms_raw if isinstance(raw, dict) and isinstance(raw.get("id"), str)
        }
        read = [self.read_pm(raw, j, catalog) for j, raw in enumerate(pms_raw)]
        shells = self.unique_pms([shell for _, shell in read])
        pms = [spec if shell is not None else None for (spec, _), shell in zip(read, shells, strict=True)]
        self.check_classes(shells)
        valid_pms = [p for p in pms if p is not None]
        present = list(self.present.values())
        vms, placement = self.read_vms(vms_raw, shells, present, catalog)
        weights = self.read_weights(doc.get("weights", MISSING), present, catalog)
        intra = self.flag(doc, "intra_pm_moves", "", True)
        if self.problems or len(valid_pms) != len(pms) or weights is None or intra is None:
            return None
        return SnapshotParts(tuple(valid_pms), vms, placement, weights, models, intra)

    def list_field(self, doc: dict, key: str) -> list:
        return self.typed(self.field(doc, "", key), key, list, "a list") or []

    def read_weights(self, raw: Any, present: list[GpuModel], catalog: Catalog) -> Weights | None:
        if raw is MISSING:
            return Weights()
        if self.typed(raw, "weights", dict, "an object") is None:
            return None
        values: dict[str, Any] = {}
        by_profile: dict[str, float] = {}
        ok = True
        for key, value in raw.items():
            path = f"weights.{key}"
            if key not in WEIGHT_KEYS:
                self.err(path, f"unknown weight (known: {', '.join(WEIGHT_KEYS)})")
                ok = False
            elif key == "free_start" and isinstance(value, dict):
                names = {p.name for m in (present or catalog.gpus.values()) for p in m.profiles}
                for name, w in value.items():
                    number = self.number(w, f"{path}.{name}")
                    if name not in names:
                        self.err(
                            f"{path}.{name}", f"unknown GI profile (known here: {', '.join(sorted(names))})"
                        )
                        ok = False
                    elif number is None:
                        ok = False
                    else:
                        by_profile[name] = number
            else:
                number = self.number(value, path)
                ok = ok and number is not None
                if number is not None:
                    values[key] = number
        if not ok:
            return None
        return Weights(**values, free_start_by_profile=by_profile)
