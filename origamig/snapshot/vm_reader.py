"""Reading a snapshot's VM entries: ids, CPU and RAM, GI profiles resolved against the GPU models on the
PMs, and their placements (`placement_reader.py`); plain entries take the one-pass path (`plain_vm.py`)."""

from __future__ import annotations

from typing import Any

from origamig.cluster.catalog import Catalog, GpuModel, Profile
from origamig.cluster.records import Placement, PmSpec, VmSpec, cores_to_m, gb_to_mb
from origamig.judge.check import SliceOwners
from origamig.snapshot.fields import kind_of, show
from origamig.snapshot.placement_reader import PlacementReader
from origamig.snapshot.plain_vm import PlainVms, placed_model, profile_choices, profile_pool


class VmReader(PlacementReader):
    """Reads VM entries and their placements against the PMs read before them."""

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


def _placed_pm(raw: dict) -> str | None:
    """The PM id a VM's placement names, if it is a string."""
    pl = raw.get("placement")
    pm = pl.get("pm") if isinstance(pl, dict) else None
    return pm if isinstance(pm, str) else None
