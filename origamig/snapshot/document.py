"""The snapshot format (docs/formats.md#snapshot): read, validate (every problem, each named by its JSON
path), write.

A snapshot is the state of a cluster as an operator writes it: PMs with their GPUs, VMs with their
GI profiles and, for running VMs, their placement; optional inline GPU models and weights. Reading
checks everything before anything is solved and raises one `SnapshotError` that lists *all*
problems, one line each, e.g. ``vms[3].placement.gis[0].start: 3 is not a permitted start for
2g.10gb on A100-40GB (allowed: 0, 2, 4)``.

Profile names are resolved per VM against the GPU models present in the snapshot (then the
catalog). A name such as `1g.10gb` means two memory slices on an A100-40GB but one on an
A100-80GB: a pending VM without `"gpu_model"` may run on any model that offers all its profiles
(each as that model defines it); `"gpu_model"` makes the model a constraint; a running VM runs on
its GPU's model.

Writing keeps every field of the input document (unknown ones too) and replaces only the VMs'
`placement` and the PMs' `powered_off`; files are written atomically (temp file + rename).
"""

from __future__ import annotations

import contextlib
import copy
import os
import stat
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from origamig.cluster.catalog import Catalog, GpuModel, default_catalog
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, PmSpec, VmSpec, Weights
from origamig.errors import SnapshotError
from origamig.files import parse_json_text
from origamig.snapshot.fields import show
from origamig.snapshot.json_writer import indented_json
from origamig.snapshot.reader import SNAPSHOT_VERSION, read_document

__all__ = [
    "SNAPSHOT_VERSION",
    "Snapshot",
    "json_text",
    "load_snapshot",
    "parse_snapshot",
    "placement_json",
    "read_json",
    "schema_path",
    "show",
    "snapshot_document",
    "write_json_atomic",
    "write_text_atomic",
]


@dataclass(frozen=True)
class Snapshot:
    """A validated snapshot: specs, running placement, weights, and the document it came from."""

    pms: tuple[PmSpec, ...]
    vms: Mapping[str, VmSpec]  # every VM, in file order (running and pending)
    placement: Mapping[str, Placement]  # the running VMs
    weights: Weights
    gpu_models: Mapping[str, GpuModel]  # inline models (`gpu_models`)
    document: Mapping[str, Any]  # the parsed JSON, kept so that writing preserves unknown fields
    intra_pm_moves: bool = True  # the platform can move a VM between GIs of one PM

    @property
    def present_models(self) -> tuple[GpuModel, ...]:
        """The GPU models on the PMs, in order of first appearance (as the reader found them: a
        profile name without a model is looked up among these first)."""
        present: dict[str, GpuModel] = {}
        for pm in self.pms:
            for g in pm.gpus:
                present.setdefault(g.name, g)
        return tuple(present.values())

    @property
    def pending(self) -> list[str]:
        """Pending VM ids in file order (oldest first)."""
        return [v for v in self.vms if v not in self.placement]

    def datacenter(self) -> DataCenter:
        """A fresh DataCenter holding the running VMs and the pending queue (file order). The reader
        judged every placement (`snapshot/placement_reader.py`), so they are not judged again here."""
        dc = DataCenter(self.pms, self.intra_pm_moves)
        for v, vm in self.vms.items():
            if v in self.placement:
                dc.place(vm, self.placement[v], checked=True)
            else:
                dc.add_pending(vm)
        return dc


# --- reading -----------------------------------------------------------------------------------
def load_snapshot(path: str | Path, catalog: Catalog | None = None) -> Snapshot:
    """Read and validate a snapshot file; `SnapshotError` lists every problem."""
    return parse_snapshot(read_json(path), catalog)


def read_json(path: str | Path) -> Any:
    """Parse a JSON file strictly (no NaN/Infinity, bounded nesting); errors name file, line and column."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SnapshotError(f"{path}: cannot read ({exc.__class__.__name__}: {exc})") from None

    return parse_json_text(text, str(path), SnapshotError)


def parse_snapshot(doc: Any, catalog: Catalog | None = None) -> Snapshot:
    """Validate a parsed snapshot document and build its records; `SnapshotError` lists every problem."""
    parts, problems = read_document(doc, catalog or default_catalog())
    if parts is None:
        raise SnapshotError(problems or ["snapshot: invalid"])
    return Snapshot(
        parts.pms, parts.vms, parts.placement, parts.weights, parts.gpu_models, doc, parts.intra_pm_moves
    )


def schema_path(name: str = "snapshot") -> Path:
    """The shipped JSON Schema file `name` (`snapshot`, `plan` or `solve`)."""
    return Path(__file__).parent / "schema" / f"{name}.schema.json"


# --- writing -----------------------------------------------------------------------------------
def placement_json(
    pms: tuple[PmSpec, ...] | list[PmSpec], placement: Mapping[str, Placement]
) -> dict[str, Any]:
    """`{vm_id: {"pm": .., "gis": [{"gpu": .., "start": ..}]}}` (docs/formats.md#snapshot), sorted by VM
    id."""
    return {
        v: {"pm": pms[pl.pm].id, "gis": [{"gpu": s.gpu, "start": s.start} for s in pl.gis]}
        for v, pl in sorted(placement.items())
    }


def snapshot_document(
    snap: Snapshot, placement: Mapping[str, Placement], powered_off: Iterable[str] = ()
) -> dict[str, Any]:
    """The input document with VM placements set to `placement` (others pending).

    A PM that hosts a VM loses `powered_off`; PMs in `powered_off` (emptied by a plan) get
    `"powered_off": true`; every other field, known or not, is kept as it was.
    """
    doc = copy.deepcopy(dict(snap.document))
    pl_json = placement_json(snap.pms, placement)
    for entry in doc["vms"]:
        if entry["id"] in pl_json:
            entry["placement"] = pl_json[entry["id"]]
        else:
            entry.pop("placement", None)
    hosts = {snap.pms[pl.pm].id for pl in placement.values()}
    off = set(powered_off)
    for entry in doc["pms"]:
        if entry["id"] in hosts:
            entry.pop("powered_off", None)
        elif entry["id"] in off:
            entry["powered_off"] = True
    return doc


def write_json_atomic(path: str | Path, data: Any, indent: int = 2) -> None:
    """Write `data` as JSON to `path` atomically (see `write_text_atomic`)."""
    write_text_atomic(path, json_text(data, indent))


def json_text(data: Any, indent: int = 2) -> str:
    """`data` as the JSON text the package writes and prints (indented, one final newline)."""
    return indented_json(data, indent) + "\n"


def write_text_atomic(path: str | Path, text: str, new_mode: int = 0o666) -> None:
    """Write `text` to `path` through a temp file in the same directory and a rename.

    The file gets the mode of the file it replaces, or — a new file — `new_mode` less the umask
    (a temp file alone would be 0600), so that `--out` behaves like a shell redirection; a script
    is written with `new_mode=0o777`.
    """
    target = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    except OSError as exc:
        raise SnapshotError(f"{path}: cannot write ({exc.strerror or exc})") from None
    try:
        os.fchmod(fd, _mode_for(target, new_mode))
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise SnapshotError(f"{path}: cannot write ({exc.strerror or exc})") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _mode_for(target: Path, new_mode: int = 0o666) -> int:
    """The permission bits a file written to `target` should get (see `write_text_atomic`)."""
    with contextlib.suppress(OSError):  # no file to replace (or unreadable): a new file's mode
        return stat.S_IMODE(target.stat().st_mode)
    mask = os.umask(0o022)  # reading the umask means setting it; put it back at once
    os.umask(mask)
    return new_mode & ~mask
