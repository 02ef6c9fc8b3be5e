"""Reading a snapshot's PM entries and the inline GPU models they name (the base of the snapshot reader).

`PmReader` keeps what the later checks need of the PMs: their ids, the GPU models present (in order of
first appearance), the PMs whose GPU model is unknown, and each PM's outline (CPU, RAM, power state),
which the capacity checks use even when its GPUs are wrong.
"""

from __future__ import annotations

from collections.abc import Sized
from typing import Any

from origamig.cluster.catalog import DEFAULT_PM_MODEL, Catalog, GpuModel, gpu_model_from_dict
from origamig.cluster.records import PmSpec, cores_to_m, gb_to_mb
from origamig.errors import CatalogError
from origamig.snapshot.fields import MISSING, FieldReader, id_problem, kind_of, show


class PmReader(FieldReader):
    """Collects every problem of a document's PMs (and inline GPU models) while building them."""

    def __init__(self, catalog: Catalog, fast: bool = True) -> None:
        super().__init__()
        self.catalog = catalog
        self.fast = fast
        self.pm_ids: set[Any] = set()
        self.broken_models: set[str] = set()  # inline models already reported as malformed
        self.broken_profiles: set[str] = set()  # their profile names (not reported again as unknown)
        self.present: dict[str, GpuModel] = {}  # GPU models on the PMs, in order of first appearance
        self.blind: dict[str, int] = {}  # PMs with an unknown GPU model: id -> GPU count
        self.outlines: dict[str, tuple[int, PmSpec]] = {}  # id -> (index, CPU/RAM/power state only)

    def read_models(self, raw: Any) -> dict[str, GpuModel]:
        if raw is MISSING:
            return {}
        if self.typed(raw, "gpu_models", dict, "an object") is None:
            return {}
        out: dict[str, GpuModel] = {}
        for name, table in raw.items():
            path = f"gpu_models.{name}"
            if not isinstance(table, dict):
                self.err(path, f"expected an object, got {show(table)} ({kind_of(table)})")
                continue
            table = dict(table)
            if table.setdefault("name", name) != name:
                self.err(f"{path}.name", f"{show(table['name'])} differs from its key {show(name)}")
                continue
            try:
                out[name] = gpu_model_from_dict(table, path)
            except CatalogError as exc:
                self.problems.extend(exc.problems)
                self.broken_models.add(name)
                raw_profiles = table.get("profiles")
                for prof in raw_profiles if isinstance(raw_profiles, list) else ():
                    if isinstance(prof, dict) and isinstance(prof.get("name"), str):
                        self.broken_profiles.add(prof["name"])
        return out

    def read_pm(
        self, raw: Any, j: int, catalog: Catalog, path: str | None = None
    ) -> tuple[PmSpec | None, PmSpec | None]:
        """The PM (at `path`, by default `pms[j]`), and its shell (id and GPUs only) that placements
        are checked against even when its other fields are wrong; its outline (CPU, RAM, power state)
        is kept for the capacity checks, which run even when its GPUs are wrong."""
        path = path or f"pms[{j}]"
        if not isinstance(raw, dict):
            self.err(path, f"expected an object, got {show(raw)} ({kind_of(raw)})")
            return None, None
        pid = self.typed(self.field(raw, path, "id"), f"{path}.id", str, "a string")
        if pid is not None and (problem := id_problem(pid)) is not None:
            self.err(f"{path}.id", problem)
            pid = None
        cpu = self.number(self.field(raw, path, "cpu"), f"{path}.cpu", positive=True)
        ram = self.number(self.field(raw, path, "ram_gb"), f"{path}.ram_gb", positive=True)
        gpus = self.read_pm_gpus(raw, path, catalog, pid)
        for g in gpus or ():
            self.present.setdefault(g.name, g)
        weight = self.number(raw["weight"], f"{path}.weight") if "weight" in raw else 0.0
        off = (
            self.typed(raw["powered_off"], f"{path}.powered_off", bool, "true or false")
            if "powered_off" in raw
            else False
        )
        power = self.read_power_model(raw, path)
        if "cordoned" in raw:  # `origamig serve` reads it (docs/formats.md#snapshot)
            self.typed(raw["cordoned"], f"{path}.cordoned", bool, "true or false")
        shell = (
            PmSpec(id=pid, cpu_m=0, ram_mb=0, gpus=tuple(gpus))
            if pid is not None and gpus is not None
            else None
        )
        if pid is not None and cpu is not None and ram is not None and off is not None:
            outline = PmSpec(id=pid, cpu_m=cores_to_m(cpu), ram_mb=gb_to_mb(ram), powered_off=bool(off))
            self.outlines.setdefault(pid, (j, outline))
        if pid is None or cpu is None or ram is None or gpus is None or power is None:
            return None, shell
        if weight is None or off is None:
            return None, shell
        spec = PmSpec(
            id=pid,
            cpu_m=cores_to_m(cpu),
            ram_mb=gb_to_mb(ram),
            gpus=tuple(gpus),
            power_model=power,
            weight=float(raw["weight"]) if "weight" in raw else None,
            powered_off=bool(off),
        )
        return spec, spec

    def read_pm_gpus(self, raw: dict, path: str, catalog: Catalog, pid: str | None) -> list[GpuModel] | None:
        """The PM's GPU models; unknown names are one error for the PM (and its VMs are checked only
        for what does not depend on the model)."""
        names = self.typed(self.field(raw, path, "gpus"), f"{path}.gpus", list, "a list of GPU model names")
        if names is None:
            return None
        out: list[GpuModel] | None = []
        unknown: dict[str, list[int]] = {}
        for k, name in enumerate(names):
            typed = self.typed(name, f"{path}.gpus[{k}]", str, "a GPU model name")
            if typed is None or name in self.broken_models:
                out = None
            elif name not in catalog.gpus:
                unknown.setdefault(name, []).append(k)
                out = None
            elif out is not None:
                out.append(catalog.gpus[name])
        known = ", ".join(sorted(catalog.gpus))
        for name, ks in unknown.items():  # one line per misspelt name, at its first GPU
            also = f", also on GPU{_plural_s(ks[1:])} {_indices(ks[1:])}" if len(ks) > 1 else ""
            self.err(f"{path}.gpus[{ks[0]}]", f"unknown GPU model {show(name)}{also} (known: {known})")
        if out is None and pid is not None:
            self.blind.setdefault(pid, len(names))
        return out

    def read_power_model(self, raw: dict, path: str) -> str | None:
        if "power_model" not in raw:
            return DEFAULT_PM_MODEL
        name = self.typed(raw["power_model"], f"{path}.power_model", str, "a PM model name")
        if name is not None and name not in self.catalog.pms:
            known = ", ".join(sorted(self.catalog.pms))
            self.err(f"{path}.power_model", f"unknown PM model {show(name)} (known: {known})")
            return None
        return name

    def unique_pms(self, pms: list[PmSpec | None]) -> list[PmSpec | None]:
        seen: dict[str, int] = {}
        out: list[PmSpec | None] = []
        for j, pm in enumerate(pms):
            if pm is not None and pm.id in seen:
                self.err(f"pms[{j}].id", f"{show(pm.id)} is also the id of pms[{seen[pm.id]}]")
                pm = None
            elif pm is not None:
                seen[pm.id] = j
            out.append(pm)
        return out

    def check_classes(self, pms: list[PmSpec | None]) -> None:
        slices: dict[str, tuple[int, str]] = {}
        for j, pm in enumerate(pms):
            for k, g in enumerate(pm.gpus if pm else ()):
                first = slices.setdefault(g.gpu_class, (g.memory_slices, g.name))
                if first[0] != g.memory_slices:
                    self.err(
                        f"pms[{j}].gpus[{k}]",
                        f"{g.name} has {g.memory_slices} memory slices but class {g.gpu_class} "
                        f"already has {first[1]} with {first[0]} (one class, one geometry)",
                    )


def _plural_s(items: Sized) -> str:
    return "s" if len(items) > 1 else ""


def _indices(ks: list[int]) -> str:
    """0, 1, 2, 5 -> "0-2, 5"."""
    runs: list[list[int]] = []
    for k in ks:
        if runs and k == runs[-1][-1] + 1:
            runs[-1].append(k)
        else:
            runs.append([k])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs)
