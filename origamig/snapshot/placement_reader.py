"""Reading a VM's placement in a snapshot: its PM, GPUs and starts judged by the rules of `check.py`,
said with the snapshot's paths and values, and each PM's CPU and RAM against the VMs placed on it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from origamig.cluster.catalog import Profile
from origamig.cluster.records import GiSlot, Placement, PmSpec
from origamig.judge.check import SliceOwners, gi_problem, over_capacity
from origamig.snapshot.fields import show
from origamig.snapshot.pm_reader import PmReader


class PlacementReader(PmReader):
    """Reads placements against the PMs read before them (`PmReader`)."""

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
