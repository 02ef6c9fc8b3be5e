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


# What the checker reads of a PM, a VM and a placement: read-only members, so that the frozen records
# of cluster/records.py (and the replay's own pieces) satisfy them without being imported here.
class _Sized(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def cpu_m(self) -> int: ...
    @property
    def ram_mb(self) -> int: ...


class _PmLike(_Sized, Protocol):
    @property
    def gpus(self) -> tuple[Any, ...]: ...
    @property
    def powered_off(self) -> bool: ...


class _VmLike(_Sized, Protocol):
    @property
    def gis(self) -> tuple[Any, ...]: ...


class _PlacementLike(Protocol):
    @property
    def pm(self) -> int: ...
    @property
    def gis(self) -> tuple[Any, ...]: ...


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
    owners = SliceOwners()
    rules: dict[tuple[int, int, int], tuple[str, str] | None] = {}  # gi_problem per (model, profile, start)
    entries: list[tuple[str, _PlacementLike]] = list(placement.items())
    for v, extra in (holding or {}).items():
        entries.extend((v, pl) for pl in extra)
    counted_extra: set[tuple[str, int]] = set()  # (VM, PM) of the `holding` entries counted
    for token, (vm_id, pl) in enumerate(entries):
        vm = vms.get(vm_id)
        if vm is None:
            out.append(Violation("vm", f"vm {vm_id}", "placed but unknown"))
            continue
        j = pl.pm
        if not 0 <= j < len(pms):
            out.append(Violation("pm", f"vm {vm_id}", f"PM index {j} does not exist"))
            continue
        pm = pms[j]
        if pm.powered_off:
            out.append(Violation("powered_off", f"vm {vm_id}", f"placed on powered-off PM {pm.id}"))
        if token < len(placement) or _count_extra(vm_id, j, placement, counted_extra):
            cpu[j] += vm.cpu_m  # a VM inside one PM holds its CPU/RAM once
            ram[j] += vm.ram_mb
        gis = gis_at(vm, pm, pl)
        if len(pl.gis) != len(gis):
            out.append(Violation("slots", f"vm {vm_id}", f"{len(gis)} GIs but {len(pl.gis)} slots"))
            continue
        for n, (prof, slot) in enumerate(zip(gis, pl.gis, strict=True)):
            found = _check_gi(pm, j, prof, slot, (token, n), owners, rules)
            if found:
                out.extend(Violation(kind, f"vm {vm_id} gi {n}", message) for kind, message in found)
    for j, pm in enumerate(pms):
        over = over_capacity(pm, cpu[j], ram[j])
        if "cpu" in over:
            out.append(
                Violation("cpu", f"pm {pm.id}", f"CPU {cpu[j] / 1000:g} > capacity {pm.cpu_m / 1000:g}")
            )
        if "ram" in over:
            out.append(
                Violation("ram", f"pm {pm.id}", f"RAM {ram[j] / 1000:g} GB > capacity {pm.ram_mb / 1000:g}")
            )
    return out


def _count_extra(
    vm_id: str, j: int, placement: Mapping[str, _PlacementLike], counted: set[tuple[str, int]]
) -> bool:
    """Whether a `holding` entry of `vm_id` on PM j adds its CPU/RAM there: not when its placement
    (a PM that exists) or an earlier `holding` entry is on the same PM."""
    main = placement.get(vm_id)
    if (main is not None and main.pm == j) or (vm_id, j) in counted:
        return False
    counted.add((vm_id, j))
    return True


_UNSEEN = ("", "")  # no rule answer yet


def _check_gi(
    pm: _PmLike,
    j: int,
    prof: Any,
    slot: Any,
    holder: Any,
    owners: SliceOwners,
    rules: dict[tuple[int, int, int], tuple[str, str] | None],
) -> list[tuple[str, str]]:
    """Class, start and overlap of one GI, as (kind, message) pairs; `holder` identifies this GI
    instance (old and new differ). `rules` keeps `gi_problem`'s answers for a GPU that exists: they
    depend on the GPU's model, the profile and the start only (the objects stay alive meanwhile)."""
    gpu, start = slot.gpu, slot.start
    if 0 <= gpu < len(pm.gpus):
        key = (id(pm.gpus[gpu]), id(prof), start)
        problem = rules.get(key, _UNSEEN)
        if problem is _UNSEEN:
            problem = rules[key] = gi_problem(pm, prof, slot)
    else:
        problem = gi_problem(pm, prof, slot)
    if problem is not None:
        return [problem]
    size = pm.gpus[gpu].memory_slices
    end = start + prof.memory_slices
    clashes = owners.claim(j, gpu, range(start, min(end, size)), holder)
    if not clashes and end <= size:
        return []
    out = [("overlap", f"slice {u} of GPU {gpu} on PM {pm.id} is used twice") for u, _ in clashes]
    out += [("start", f"slice {u} beyond the GPU's {size}") for u in range(size, end)]
    return out


# --- the rules, one function each (the snapshot reader applies them too) -------------------------
def gis_at(vm: _VmLike, pm: _PmLike, pl: _PlacementLike) -> tuple[Any, ...]:
    """The VM's GI profiles as they run at `pl`: a VM that may run on several GPU classes
    (`alternatives`) runs as the class of the GPU its first GI is on; otherwise its `gis`."""
    choices = (vm.gis, *getattr(vm, "alternatives", ()))
    if len(choices) == 1 or not pl.gis or not 0 <= pl.gis[0].gpu < len(pm.gpus):
        return vm.gis
    here = pm.gpus[pl.gis[0].gpu].gpu_class
    return next((c for c in choices if c and c[0].gpu_class == here), vm.gis)


def moves_refused(
    vms: Mapping[str, Any],
    before: Mapping[str, _PlacementLike],
    after: Mapping[str, _PlacementLike],
    intra_pm_moves: bool = True,
) -> list[Violation]:
    """Moves from `before` to `after` that the cluster forbids: a VM with `migratable` false that
    changes place, and (without `intra_pm_moves`) a VM that changes GIs but stays on its PM."""
    out: list[Violation] = []
    # Read the smaller side: a plan's target names a few VMs of a large cluster.
    pairs = (
        ((v, old, after.get(v)) for v, old in before.items())
        if len(before) <= len(after)
        else ((v, before[v], new) for v, new in after.items() if v in before)
    )
    for v, old, new in pairs:
        if new is None or new is old or (new.pm == old.pm and tuple(new.gis) == tuple(old.gis)):
            continue
        if not getattr(vms.get(v), "migratable", True):
            out.append(Violation("pinned", f"vm {v}", "moved, but it is not migratable"))
        elif not intra_pm_moves and new.pm == old.pm:
            out.append(
                Violation("intra_pm", f"vm {v}", "moved between GIs of its PM, which the platform cannot do")
            )
    return out


def over_capacity(pm: _PmLike, cpu_m: int, ram_mb: int) -> tuple[str, ...]:
    """Which capacities of the PM ("cpu", "ram") the VMs it holds (`cpu_m`, `ram_mb` in all) exceed."""
    if cpu_m <= pm.cpu_m and ram_mb <= pm.ram_mb:
        return ()
    return tuple(
        kind for kind, used, cap in (("cpu", cpu_m, pm.cpu_m), ("ram", ram_mb, pm.ram_mb)) if used > cap
    )


def gi_problem(pm: _PmLike, prof: Any, slot: Any) -> tuple[str, str] | None:
    """The first rule a GI of profile `prof` at `slot` breaks on `pm`, as (kind, message), else None:
    its GPU must exist ("gpu"), be of the profile's class and model ("class"), and the start must be
    one the model permits for the profile ("start")."""
    if not 0 <= slot.gpu < len(pm.gpus):
        return "gpu", f"GPU {slot.gpu} does not exist on PM {pm.id}"
    model = pm.gpus[slot.gpu]
    names = {p.name for p in model.profiles}
    if prof.gpu_class != model.gpu_class or prof.name not in names:
        return "class", f"{prof.name} ({prof.gpu_model}) on a {model.name}"
    permitted = next(p.starts for p in model.profiles if p.name == prof.name)
    if slot.start not in permitted:
        return "start", f"{slot.start} is not a permitted start for {prof.name}"
    return None


class SliceOwners:
    """Who holds each memory slice (pm, gpu, slice): the overlap rule. The first holder keeps it.

    Per GPU: a bit mask of the slices held, and the holders with the slices each was first to take."""

    def __init__(self) -> None:
        self._used: dict[tuple[int, int], int] = {}
        self._holders: dict[tuple[int, int], list[tuple[int, Any]]] = {}

    def claim(self, j: int, gpu: int, slices: range, holder: Any) -> list[tuple[int, Any]]:
        """Claim `slices` of GPU `gpu` on PM j for `holder`: (slice, other holder) for each slice
        another holder has already (an overlap)."""
        mask = sum(1 << u for u in slices) if slices.step != 1 else ((1 << len(slices)) - 1) << slices.start
        key = (j, gpu)
        used = self._used.get(key, 0)
        held = self._holders.get(key)
        if held is None:
            held = self._holders[key] = []
        clashes = [(u, self._holder_of(held, u)) for u in slices if used >> u & 1] if used & mask else []
        held.append((mask & ~used, holder))
        self._used[key] = used | mask
        return clashes

    def used(self, j: int, gpu: int) -> int:
        """The bit mask of the slices of GPU `gpu` on PM j that somebody holds."""
        return self._used.get((j, gpu), 0)

    @staticmethod
    def _holder_of(held: list[tuple[int, Any]], u: int) -> Any:
        return next(holder for mask, holder in held if mask >> u & 1)


def _with_holds(dc: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The DataCenter's VMs and placement with its holds (what moves under way reserve, each a record
    of what it takes) judged alongside, under keys no VM id can take (a control character)."""
    holds = getattr(dc, "holds", {})
    if not holds:
        return dc.vms, dc.placement
    vms = dict(dc.vms)
    placement = dict(dc.placement)
    for key, (spec, pl) in holds.items():
        vms["\x1f" + key] = spec
        placement["\x1f" + key] = pl
    return vms, placement


def check(dc: Any) -> list[Violation]:
    """Check a `DataCenter` from its raw records (specs, placement map and holds), ignoring its counters."""
    vms, placement = _with_holds(dc)
    return check_placement(dc.pms, vms, placement)


def check_counters(dc: Any) -> list[Violation]:
    """Recompute the DataCenter's O(1) counters from its placement and report any that disagree."""
    out: list[Violation] = []
    cpu = [pm.cpu_m for pm in dc.pms]
    ram = [pm.ram_mb for pm in dc.pms]
    occ: dict[tuple[int, int], set[int]] = {}
    hosts: dict[int, int] = {}
    vms, placement = _with_holds(dc)
    for vm_id, pl in placement.items():
        vm = vms[vm_id]
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
        free = sum(g.memory_slices - len(occ.get((j, k), ())) for k, g in enumerate(pm.gpus))
        if dc.free_memory_slices(j) != free:
            out.append(Violation("counter", f"pm {pm.id}", "free memory slices counter is wrong"))
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
