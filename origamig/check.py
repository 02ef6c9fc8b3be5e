"""The independent constraint checker: judges any placement from its raw records.

It imports the catalog records only — never `mig`, `datacenter` internals, the BILP or the executor —
and recomputes everything with plain sets of slice indices, so that it can judge them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Violation:
    """One broken constraint: what kind, where, and a one-line message."""

    kind: str  # cpu | ram | overlap | class | start | slots | gpu | pm | powered_off | duplicate
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


class _PmLike(Protocol):
    id: str
    cpu_m: int
    ram_mb: int
    gpus: tuple[Any, ...]
    powered_off: bool


class _VmLike(Protocol):
    id: str
    cpu_m: int
    ram_mb: int
    gis: tuple[Any, ...]


class _PlacementLike(Protocol):
    pm: int
    gis: tuple[Any, ...]


def check_placement(
    pms: Sequence[_PmLike],
    vms: Mapping[str, _VmLike],
    placement: Mapping[str, _PlacementLike],
    holding: Mapping[str, Sequence[_PlacementLike]] | None = None,
) -> list[Violation]:
    """Every violated constraint of `placement` (VM id → Placement) on `pms`.

    `holding` lists extra placements a VM occupies at the same time (a VM being migrated holds
    CPU, RAM and slices at both ends); they count towards capacities and overlaps.
    """
    out: list[Violation] = []
    cpu = [0] * len(pms)
    ram = [0] * len(pms)
    slices: dict[tuple[int, int, int], str] = {}
    counted_pm: set[tuple[str, int]] = set()
    entries = [(v, pl) for v, pl in placement.items()]
    for v, extra in (holding or {}).items():
        entries.extend((v, pl) for pl in extra)
    for token, (vm_id, pl) in enumerate(entries):
        vm = vms.get(vm_id)
        where = f"vm {vm_id}"
        if vm is None:
            out.append(Violation("vm", where, "placed but unknown"))
            continue
        if not 0 <= pl.pm < len(pms):
            out.append(Violation("pm", where, f"PM index {pl.pm} does not exist"))
            continue
        pm = pms[pl.pm]
        if pm.powered_off:
            out.append(Violation("powered_off", where, f"placed on powered-off PM {pm.id}"))
        if (vm_id, pl.pm) not in counted_pm:  # a VM inside one PM holds its CPU/RAM once
            counted_pm.add((vm_id, pl.pm))
            cpu[pl.pm] += vm.cpu_m
            ram[pl.pm] += vm.ram_mb
        if len(pl.gis) != len(vm.gis):
            out.append(Violation("slots", where, f"{len(vm.gis)} GIs but {len(pl.gis)} slots"))
            continue
        for n, (prof, slot) in enumerate(zip(vm.gis, pl.gis, strict=True)):
            out.extend(_check_gi(pm, pl.pm, prof, slot, f"{where} gi {n}", f"{token}:{n}", slices))
    for j, pm in enumerate(pms):
        if cpu[j] > pm.cpu_m:
            out.append(
                Violation("cpu", f"pm {pm.id}", f"CPU {cpu[j] / 1000:g} > capacity {pm.cpu_m / 1000:g}")
            )
        if ram[j] > pm.ram_mb:
            out.append(
                Violation("ram", f"pm {pm.id}", f"RAM {ram[j] / 1000:g} GB > capacity {pm.ram_mb / 1000:g}")
            )
    return out


def _check_gi(
    pm: _PmLike, j: int, prof: Any, slot: Any, where: str, token: str, slices: dict[tuple[int, int, int], str]
) -> list[Violation]:
    """Class, start and overlap of one GI; `token` identifies this GI instance (old and new differ)."""
    if not 0 <= slot.gpu < len(pm.gpus):
        return [Violation("gpu", where, f"GPU {slot.gpu} does not exist on PM {pm.id}")]
    model = pm.gpus[slot.gpu]
    names = {p.name for p in model.profiles}
    if prof.gpu_class != model.gpu_class or prof.name not in names:
        return [Violation("class", where, f"{prof.name} ({prof.gpu_model}) on a {model.name}")]
    permitted = next(p.starts for p in model.profiles if p.name == prof.name)
    if slot.start not in permitted:
        return [Violation("start", where, f"{slot.start} is not a permitted start for {prof.name}")]
    out = []
    for u in range(slot.start, slot.start + prof.memory_slices):
        if u >= model.memory_slices:
            out.append(Violation("start", where, f"slice {u} beyond the GPU's {model.memory_slices}"))
            continue
        key = (j, slot.gpu, u)
        other = slices.get(key)
        if other is not None and other != token:
            out.append(
                Violation("overlap", where, f"slice {u} of GPU {slot.gpu} on PM {pm.id} is used twice")
            )
        slices[key] = token
    return out


def check(dc: Any) -> list[Violation]:
    """Check a `DataCenter` from its raw records (specs and placement map), ignoring its counters."""
    return check_placement(dc.pms, dc.vms, dc.placement)


def check_counters(dc: Any) -> list[Violation]:
    """Recompute the DataCenter's O(1) counters from its placement and report any that disagree."""
    out: list[Violation] = []
    cpu = [pm.cpu_m for pm in dc.pms]
    ram = [pm.ram_mb for pm in dc.pms]
    occ: dict[tuple[int, int], set[int]] = {}
    hosts: dict[int, int] = {}
    for vm_id, pl in dc.placement.items():
        vm = dc.vms[vm_id]
        cpu[pl.pm] -= vm.cpu_m
        ram[pl.pm] -= vm.ram_mb
        hosts[pl.pm] = hosts.get(pl.pm, 0) + 1
        for prof, slot in zip(vm.gis, pl.gis, strict=True):
            occ.setdefault((pl.pm, slot.gpu), set()).update(
                range(slot.start, slot.start + prof.memory_slices)
            )
    for j, pm in enumerate(dc.pms):
        if dc.free_cpu_m(j) != cpu[j] or dc.free_ram_mb(j) != ram[j]:
            out.append(Violation("counter", f"pm {pm.id}", "free CPU/RAM counter is wrong"))
        for k in range(len(pm.gpus)):
            mask = sum(1 << u for u in occ.get((j, k), ()))
            if dc.occupancy(j, k) != mask:
                out.append(Violation("counter", f"pm {pm.id} gpu {k}", "occupancy counter is wrong"))
    if dc.active_pms != len(hosts):
        out.append(Violation("counter", "datacenter", f"active PMs {dc.active_pms} != {len(hosts)}"))
    by_class_gpus: dict[str, int] = {}
    by_class_slices: dict[str, int] = {}
    for (j, k), used in occ.items():
        h = dc.pms[j].gpus[k].gpu_class
        by_class_gpus[h] = by_class_gpus.get(h, 0) + (1 if used else 0)
        by_class_slices[h] = by_class_slices.get(h, 0) + len(used)
    for h in dc.active_gpus:
        if dc.active_gpus[h] != by_class_gpus.get(h, 0) or dc.placed_slices[h] != by_class_slices.get(h, 0):
            out.append(Violation("counter", f"class {h}", "active GPU or placed-slice counter is wrong"))
    return out
