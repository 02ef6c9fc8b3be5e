"""Reading a snapshot document into records, with every problem collected by JSON path.

Used by `origamig.snapshot.document`; see that module for the format. Fields are read with the toolkit of
`fields.py`; the placement constraints (GPU, class, permitted start, overlap, CPU/RAM,
powered-off PM) are judged by the rules of `check.py` and said here with the snapshot's paths and
values. Each problem is one line `<json path>: <problem with the value>`; nothing stops at the first
problem, and a record whose fields are wrong is left out so that later checks do not repeat it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Sized
from dataclasses import dataclass
from typing import Any

from origamig.cluster.catalog import DEFAULT_PM_MODEL, Catalog, GpuModel, Profile, gpu_model_from_dict
from origamig.cluster.records import GiSlot, Placement, PmSpec, VmSpec, Weights, cores_to_m, gb_to_mb
from origamig.errors import CatalogError
from origamig.judge.check import SliceOwners, gi_problem, over_capacity
from origamig.snapshot.fields import MISSING, FieldReader, id_problem, kind_of, show
from origamig.snapshot.plain_vm import PlainVms, placed_model, profile_choices, profile_pool

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
    request with it; the snapshot reader reads each entry the same way (`_Reader.read_vm`)."""
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


class _Reader(FieldReader):
    """Collects every problem of a document while building its records."""

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

    def flag(self, raw: dict, key: str, path: str, default: bool) -> bool | None:
        """An optional true/false field (`default` when absent)."""
        if key not in raw:
            return default
        where = f"{path}.{key}" if path else key
        return self.typed(raw[key], where, bool, "true or false")

    def list_field(self, doc: dict, key: str) -> list:
        return self.typed(self.field(doc, "", key), key, list, "a list") or []

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

    # --- VMs -----------------------------------------------------------------------------------
    def read_vms(
        self, raws: list, pms: list[PmSpec | None], present: list[GpuModel], catalog: Catalog
    ) -> tuple[dict[str, VmSpec], dict[str, Placement]]:
        pm_index = {pm.id: j for j, pm in enumerate(pms) if pm is not None}
        vms: dict[str, VmSpec] = {}
        placement: dict[str, Placement] = {}
        owners = SliceOwners()  # (pm, gpu, slice) -> the GI holding it
        seen: dict[str, str] = {}
        load: dict[str, list[tuple[str, int, int]]] = {}  # PM id -> (VM, CPU, RAM) of the VMs placed there
        plain = (
            PlainVms(catalog, pms, pm_index, self.blind, present, self.broken_profiles) if self.fast else None
        )
        for i, raw in enumerate(raws):
            hit = plain.read(raw, i, seen, owners) if plain is not None and type(raw) is dict else None
            if hit is not None:
                plain_vm, plain_pl = hit
                vms[plain_vm.id] = plain_vm
                if plain_pl is not None:
                    placement[plain_vm.id] = plain_pl
                on = _placed_pm(raw)
                if on in self.outlines:
                    load.setdefault(on, []).append((plain_vm.id, plain_vm.cpu_m, plain_vm.ram_mb))
                continue
            path = f"vms[{i}]"
            if not isinstance(raw, dict):
                self.err(path, f"expected an object, got {show(raw)} ({kind_of(raw)})")
                continue
            on = _placed_pm(raw)
            vm, gis, size = self.read_vm(raw, path, seen, pms, pm_index, present, catalog, on in self.blind)
            if vm is not None:
                vms[vm.id] = vm
            if size is not None and on in self.outlines:
                load.setdefault(on, []).append(size)
            if "placement" in raw and on in self.blind:
                self.read_blind_placement(raw["placement"], f"{path}.placement", raw.get("gis"), on)
            elif "placement" in raw and gis is not None:
                pl = self.read_placement(raw["placement"], f"{path}.placement", gis, pms, pm_index, owners)
                if pl is not None and vm is not None:
                    placement[vm.id] = pl
        self.check_capacity(load)
        return vms, placement

    def read_vm(
        self,
        raw: dict,
        path: str,
        seen: dict[str, str],
        pms: list[PmSpec | None],
        pm_index: dict[str, int],
        present: list[GpuModel],
        catalog: Catalog,
        blind: bool,
    ) -> tuple[VmSpec | None, list[Profile] | None, tuple[str, int, int] | None]:
        """The VM, its resolved profiles (its placement is checked whenever these are known), and its
        id (or path), CPU and RAM (counted against its PM whenever they are valid). `blind`: it runs
        on a PM whose GPU model is unknown, so its profile names are not resolved (the PM's error
        covers them)."""
        vid = self.ident(raw, path, seen)
        cpu = self.number(self.field(raw, path, "cpu"), f"{path}.cpu")
        ram = self.number(self.field(raw, path, "ram_gb"), f"{path}.ram_gb")
        accept = self.number(raw["accept_weight"], f"{path}.accept_weight") if "accept_weight" in raw else 0.0
        delta = (
            self.number(raw["migration_penalty"], f"{path}.migration_penalty")
            if "migration_penalty" in raw
            else 0.0
        )
        size = (vid or path, cores_to_m(cpu), gb_to_mb(ram)) if cpu is not None and ram is not None else None
        names = self.gi_names(raw, path)
        migratable = self.flag(raw, "migratable", path, True)
        choices: list[tuple[Profile, ...]] | None
        if names is not None and "gpu_model" in raw:
            named = self.gis_of_named_model(raw["gpu_model"], names, path, catalog)
            choices = None if named is None else [tuple(named)]
        elif names is None or blind:
            choices = None
        else:
            hint = placed_model(raw, pms, pm_index) if "placement" in raw else None
            choices = self.resolve_gis(names, path, present, catalog, hint, running="placement" in raw)
        gis = list(choices[0]) if choices else None
        if vid is None or cpu is None or ram is None or choices is None or accept is None or delta is None:
            return None, gis, size
        if migratable is None:
            return None, gis, size
        spec = VmSpec(
            id=vid,
            cpu_m=cores_to_m(cpu),
            ram_mb=gb_to_mb(ram),
            gis=choices[0],
            accept_weight=float(raw["accept_weight"]) if "accept_weight" in raw else None,
            migration_penalty=float(raw["migration_penalty"]) if "migration_penalty" in raw else None,
            alternatives=tuple(choices[1:]),
            migratable=migratable,
        )
        return spec, gis, size

    def gi_names(self, raw: dict, path: str) -> list[str] | None:
        """The VM's GI profile names, each a string."""
        names = self.typed(self.field(raw, path, "gis"), f"{path}.gis", list, "a list of GI profile names")
        if names is None:
            return None
        typed = [self.typed(nm, f"{path}.gis[{n}]", str, "a GI profile name") for n, nm in enumerate(names)]
        return names if None not in typed else None

    def resolve_gis(
        self,
        names: list[str],
        path: str,
        present: list[GpuModel],
        catalog: Catalog,
        hint: GpuModel | None,
        running: bool,
    ) -> list[tuple[Profile, ...]] | None:
        """What profile names `names` mean, one tuple of profiles per GPU class the VM may run on:
        the models on the PMs (else the catalog) that offer every name, first appearance first. A
        running VM runs on one class: that of the GPU it is placed on (`hint`), else the first."""
        pool = profile_pool(names, present, catalog)
        choices = profile_choices(names, pool, self.broken_profiles, hint, running)
        if choices is not None:
            return list(choices)
        if self.known_profiles(names, path, pool, present):  # each name is known: no model has them all
            self.err(
                f"{path}.gis", f"{', '.join(names)} are not profiles of one GPU model (a VM's GIs share one)"
            )
        return None

    def known_profiles(
        self, names: list[str], path: str, pool: list[GpuModel], present: list[GpuModel]
    ) -> bool:
        """Whether every name is a profile of some model of `pool` (each unknown one is an error)."""
        ok = True
        for n, name in enumerate(names):
            if name in self.broken_profiles:
                ok = False
            elif not any(m.has_profile(name) for m in pool):
                known = sorted({p.name for m in (present or pool) for p in m.profiles})
                self.err(
                    f"{path}.gis[{n}]", f"unknown GI profile {show(name)} (known here: {', '.join(known)})"
                )
                ok = False
        return ok

    def gis_of_named_model(
        self, model_name: Any, names: list, path: str, catalog: Catalog
    ) -> list[Profile] | None:
        if self.typed(model_name, f"{path}.gpu_model", str, "a GPU model name") is None:
            return None
        model = catalog.gpus.get(model_name)
        if model is None:
            self.err(
                f"{path}.gpu_model",
                f"unknown GPU model {show(model_name)} (known: {', '.join(sorted(catalog.gpus))})",
            )
            return None
        out: list[Profile] | None = []
        for n, name in enumerate(names):
            if not model.has_profile(name):
                known = ", ".join(p.name for p in model.profiles)
                self.err(
                    f"{path}.gis[{n}]", f"{show(name)} is not a profile of {model.name} (profiles: {known})"
                )
                out = None
            elif out is not None:
                out.append(model.profile(name))
        return out

    def read_placement(
        self,
        raw: Any,
        path: str,
        gis: list[Profile],
        pms: list[PmSpec | None],
        pm_index: dict[str, int],
        owners: SliceOwners,
    ) -> Placement | None:
        if self.typed(raw, path, dict, 'an object with "pm" and "gis"') is None:
            return None
        pm_id = self.field(raw, path, "pm")
        slots_raw = self.field(raw, path, "gis")
        j: int | None = None
        if self.typed(pm_id, f"{path}.pm", str, "a PM id") is not None:
            j = pm_index.get(pm_id)
            if j is None and pm_id not in self.pm_ids:
                self.err(f"{path}.pm", f"{show(pm_id)} is not the id of a PM in pms")
        if self.typed(slots_raw, f"{path}.gis", list, "a list of {gpu, start}") is None:
            return None
        if len(slots_raw) != len(gis):
            self.err(f"{path}.gis", f"{len(slots_raw)} placements for the VM's {len(gis)} GIs")
            return None
        slots: list[GiSlot] | None = []
        for n, (prof, slot) in enumerate(zip(gis, slots_raw, strict=True)):
            s = self.read_slot(
                slot, f"{path}.gis[{n}]", prof, pm_id, pms[j] if j is not None else None, j, owners
            )
            if s is None or slots is None:
                slots = None
            else:
                slots.append(s)
        if j is None or slots is None:
            return None
        return Placement(j, tuple(slots))

    def read_blind_placement(self, raw: Any, path: str, names: Any, pm_id: str) -> None:
        """What can be checked of a placement on a PM whose GPU model is unknown: its shape, the GI
        count, and that each GPU index exists."""
        if self.typed(raw, path, dict, 'an object with "pm" and "gis"') is None:
            return
        slots = self.typed(self.field(raw, path, "gis"), f"{path}.gis", list, "a list of {gpu, start}")
        if slots is None:
            return
        if isinstance(names, list) and len(slots) != len(names):
            self.err(f"{path}.gis", f"{len(slots)} placements for the VM's {len(names)} GIs")
        count = self.blind[pm_id]
        for n, slot in enumerate(slots):
            spath = f"{path}.gis[{n}]"
            if self.typed(slot, spath, dict, 'an object {"gpu": .., "start": ..}') is None:
                continue
            gpu = self.index(self.field(slot, spath, "gpu"), f"{spath}.gpu")
            self.index(self.field(slot, spath, "start"), f"{spath}.start")
            if gpu is not None and gpu >= count:
                self.err(f"{spath}.gpu", f"{gpu} is not a GPU of {pm_id} (it has {count})")

    def read_slot(
        self,
        raw: Any,
        path: str,
        prof: Profile,
        pm_id: Any,
        pm: PmSpec | None,
        j: int | None,
        owners: SliceOwners,
    ) -> GiSlot | None:
        if self.typed(raw, path, dict, 'an object {"gpu": .., "start": ..}') is None:
            return None
        gpu = self.index(self.field(raw, path, "gpu"), f"{path}.gpu")
        start = self.index(self.field(raw, path, "start"), f"{path}.start")
        if "pm" in raw and raw["pm"] != pm_id:
            self.err(
                f"{path}.pm",
                f"{show(raw['pm'])} differs from the VM's PM {show(pm_id)} (a VM's GIs share one PM)",
            )
            return None
        if pm is None or j is None or gpu is None or start is None:
            return None
        problem = gi_problem(pm, prof, GiSlot(gpu, start))
        if problem is not None:
            self.gi_error(problem[0], path, prof, pm, gpu, start)
            return None
        holder = f"{path} ({prof.name} at start {start})"
        clashes = owners.claim(j, gpu, range(start, start + prof.memory_slices), holder)
        if clashes:
            self.err(path, f"{prof.name} at start {start} on GPU {gpu} of {pm.id} overlaps {clashes[0][1]}")
            return None
        return GiSlot(gpu, start)

    def gi_error(self, kind: str, path: str, prof: Profile, pm: PmSpec, gpu: int, start: int) -> None:
        """The broken GI rule (`check.gi_problem`) said with the snapshot's paths and values."""
        if kind == "gpu":
            self.err(f"{path}.gpu", f"{gpu} is not a GPU of {pm.id} (it has {len(pm.gpus)})")
            return
        model = pm.gpus[gpu]
        if kind == "class":
            self.err(
                f"{path}.gpu",
                f"GPU {gpu} of {pm.id} is an {model.name} (class {model.gpu_class}); "
                f"{prof.name} of {prof.gpu_model} needs class {prof.gpu_class}",
            )
            return
        allowed = ", ".join(map(str, model.profile(prof.name).starts))
        self.err(
            f"{path}.start",
            f"{start} is not a permitted start for {prof.name} on {model.name} (allowed: {allowed})",
        )

    def check_capacity(self, load: Mapping[str, list[tuple[str, int, int]]]) -> None:
        """Each PM's CPU and RAM against the VMs placed on it (whatever else is wrong with them)."""
        for pm_id, used in sorted(load.items(), key=lambda item: self.outlines[item[0]][0]):
            j, pm = self.outlines[pm_id]
            cpu = sum(c for _, c, _ in used)
            ram = sum(r for _, _, r in used)
            ids = [v for v, _, _ in used]
            names = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
            over = over_capacity(pm, cpu, ram)
            if "cpu" in over:
                self.err(
                    f"pms[{j}].cpu",
                    f"{pm.cpu:g} cores, but the VMs placed on {pm.id} use {cpu / 1000:g} ({names})",
                )
            if "ram" in over:
                self.err(
                    f"pms[{j}].ram_gb",
                    f"{pm.ram_gb:g} GB, but the VMs placed on {pm.id} use {ram / 1000:g} ({names})",
                )
            if pm.powered_off:
                self.err(f"pms[{j}].powered_off", f"true, but {pm.id} hosts {names}")

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


def _placed_pm(raw: dict) -> str | None:
    """The PM id a VM's placement names, if it is a string."""
    pl = raw.get("placement")
    pm = pl.get("pm") if isinstance(pl, dict) else None
    return pm if isinstance(pm, str) else None
