"""The common VM entry read in one pass: the snapshot reader's fast path.

Most VM entries of a large cluster's snapshot are plain: an ASCII id, CPU and RAM, profile names
(with or without a GPU model), and a placement on a known PM — no weights, no pin. For
such an entry `PlainVms.read` checks every rule the full reader (`vm_reader.py`) checks and returns
the same records; for any other entry, or any entry with a problem, it returns None and changes
nothing, and the full reader reads it (and words its problems). It therefore never accepts what
the full reader refuses, and never builds other records (tests/snapshot/test_snapshot_plain_vm.py).

What makes it cheap: no JSON paths are formatted unless a slice is claimed, profiles are resolved
once per (model, names), and a GI's (model, profile, start) is judged once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from typing import Any

from origamig.cluster.catalog import Catalog, GpuModel, Profile
from origamig.cluster.records import GiSlot, Placement, PmSpec, VmSpec, cores_to_m, gb_to_mb
from origamig.files import LARGEST
from origamig.judge.check import SliceOwners, gi_problem

# The keys of a plain entry: any other key the full reader interprets sends the entry there.
_INTERPRETED_ELSEWHERE = ("accept_weight", "migration_penalty", "migratable")


def _quantity(value: Any) -> bool:
    """Whether `value` is a number the full reader takes as a quantity (FieldReader.number)."""
    t = type(value)
    return (t is int or t is float) and 0 <= value <= LARGEST  # NaN fails both comparisons


def _index(value: Any) -> bool:
    """Whether `value` is an integer the full reader takes as an index (FieldReader.index)."""
    return type(value) is int and 0 <= value <= LARGEST


def profile_pool(names: Sequence[str], present: Sequence[GpuModel], catalog: Catalog) -> list[GpuModel]:
    """Where profile names without a model are looked up: the models on the PMs if one of them offers
    one of the names, else every model of the catalog."""
    on_pms = any(m.has_profile(n) for m in present for n in names)
    return list(present) if on_pms else list(catalog.gpus.values())


def profile_choices(
    names: Sequence[str], pool: Sequence[GpuModel], broken: Set[str], hint: GpuModel | None, running: bool
) -> tuple[tuple[Profile, ...], ...] | None:
    """What profile names without a model mean: one tuple of profiles per GPU class whose first model
    of `pool` offers every name (a running VM's: the class of the GPU it is on, `hint`, else the
    first); None when a name is unknown (or of a malformed model, `broken`) or no model has them all."""
    if not names:
        return ((),)
    if any(n in broken or not any(m.has_profile(n) for m in pool) for n in names):
        return None
    common = [m for m in pool if all(m.has_profile(n) for n in names)]
    if not common:
        return None
    if running:
        model = hint if hint is not None and hint in common else common[0]
        return (tuple(model.profile(n) for n in names),)
    classes: dict[str, GpuModel] = {}
    for m in common:
        classes.setdefault(m.gpu_class, m)
    return tuple(tuple(m.profile(n) for n in names) for m in classes.values())


def placed_model(raw: dict, pms: Sequence[PmSpec | None], pm_index: Mapping[str, int]) -> GpuModel | None:
    """The model of the GPU a running VM's first GI is placed on (what its profile names mean when
    several models offer them)."""
    pl: Any = raw.get("placement")
    try:
        j = pm_index[pl["pm"]]
        k = pl["gis"][0]["gpu"]
        pm = pms[j]
        return pm.gpus[k] if pm is not None and isinstance(k, int) and 0 <= k < len(pm.gpus) else None
    except (TypeError, KeyError, IndexError):
        return None


class PlainVms:
    """The fast path over one document's VM entries (state shared with the full reader)."""

    def __init__(
        self,
        catalog: Catalog,
        pms: list[PmSpec | None],
        pm_index: Mapping[str, int],
        avoid_pms: Mapping[str, Any],
        present: list[GpuModel],
        broken_profiles: Set[str],
    ) -> None:
        self.catalog = catalog
        self.pms = pms
        self.pm_index = pm_index
        self.avoid_pms = avoid_pms  # PMs the full reader treats specially (unknown GPU model)
        self.present = present  # the GPU models on the PMs, first appearance first
        self.broken_profiles = broken_profiles  # profile names of malformed inline models
        self._profiles: dict[tuple[str, tuple[str, ...]], tuple[Profile, ...] | None] = {}
        self._choices: dict[tuple[tuple[str, ...], int, bool], tuple[tuple[Profile, ...], ...] | None] = {}
        self._gi_ok: dict[tuple[int, int, int], bool] = {}

    def profiles(self, model_name: str, names: tuple[str, ...]) -> tuple[Profile, ...] | None:
        """The profiles `names` of catalog model `model_name`, None when one is not its profile."""
        key = (model_name, names)
        if key not in self._profiles:
            model = self.catalog.gpus.get(model_name)
            ok = model is not None and all(model.has_profile(n) for n in names)
            self._profiles[key] = tuple(model.profile(n) for n in names) if ok and model else None
        return self._profiles[key]

    def choices(
        self, names: tuple[str, ...], hint: GpuModel | None, running: bool
    ) -> tuple[tuple[Profile, ...], ...] | None:
        """What `names` mean without a named model, as the full reader's `resolve_gis` decides it (one
        tuple of profiles per class the VM may run on; a running VM's: the class it runs on), None
        when that would be a problem."""
        key = (names, id(hint), running)
        if key not in self._choices:
            pool = profile_pool(names, self.present, self.catalog)
            self._choices[key] = profile_choices(names, pool, self.broken_profiles, hint, running)
        return self._choices[key]

    def read(
        self, raw: dict, i: int, seen: dict[str, str], owners: SliceOwners
    ) -> tuple[VmSpec, Placement | None] | None:
        """The VM and its placement (None when pending) of plain entry `vms[i]`, with `seen` and
        `owners` updated as the full reader updates them; None (nothing changed) otherwise."""
        vid: Any
        cpu: Any
        ram: Any
        vid, cpu, ram, names, model_name = (  # model_name: only read when "gpu_model" is a key
            raw.get("id"),
            raw.get("cpu"),
            raw.get("ram_gb"),
            raw.get("gis"),
            raw.get("gpu_model"),
        )
        if not (type(vid) is str and vid.isascii() and vid.isprintable() and vid.strip()) or vid in seen:
            return None
        if not (_quantity(cpu) and _quantity(ram)) or type(names) is not list:
            return None
        if any(key in raw for key in _INTERPRETED_ELSEWHERE) or not all(type(n) is str for n in names):
            return None
        choices: tuple[tuple[Profile, ...], ...] | None
        if "gpu_model" in raw:
            named = self.profiles(model_name, tuple(names)) if type(model_name) is str else None
            choices = None if named is None else (named,)
        else:
            running = "placement" in raw
            choices = self.choices(
                tuple(names), placed_model(raw, self.pms, self.pm_index) if running else None, running
            )
        if choices is None:
            return None
        gis = choices[0]
        placement: Placement | None = None
        claims: list[tuple[int, int, range, str]] = []
        if "placement" in raw:
            hit = self._placement(raw["placement"], gis, i, owners)
            if hit is None:
                return None
            placement, claims = hit
        for j, gpu, slices, holder in claims:
            owners.claim(j, gpu, slices, holder)
        seen[vid] = f"vms[{i}]"
        spec = VmSpec(
            id=vid,
            cpu_m=cores_to_m(float(cpu)),
            ram_mb=gb_to_mb(float(ram)),
            gis=gis,
            alternatives=choices[1:],
        )
        return spec, placement

    def _placement(
        self, raw: Any, gis: tuple[Profile, ...], i: int, owners: SliceOwners
    ) -> tuple[Placement, list[tuple[int, int, range, str]]] | None:
        if type(raw) is not dict:
            return None
        pm_id, slots_raw = raw.get("pm"), raw.get("gis")
        if type(pm_id) is not str or pm_id in self.avoid_pms or type(slots_raw) is not list:
            return None
        j = self.pm_index.get(pm_id)
        pm = None if j is None else self.pms[j]
        if pm is None or j is None or len(slots_raw) != len(gis):
            return None
        slots: list[GiSlot] = []
        claims: list[tuple[int, int, range, str]] = []
        taken: dict[int, int] = {}  # GPU -> slices this VM's earlier GIs take
        for n, (prof, slot) in enumerate(zip(gis, slots_raw, strict=True)):
            if type(slot) is not dict:
                return None
            gpu: Any = slot.get("gpu")
            start: Any = slot.get("start")
            if not (_index(gpu) and _index(start)) or ("pm" in slot and slot["pm"] != pm_id):
                return None
            if not self._gi_fits(pm, prof, gpu, start):
                return None
            mask = prof.mask(start)
            if (owners.used(j, gpu) | taken.get(gpu, 0)) & mask:
                return None
            taken[gpu] = taken.get(gpu, 0) | mask
            slices = range(start, start + prof.memory_slices)
            claims.append((j, gpu, slices, f"vms[{i}].placement.gis[{n}] ({prof.name} at start {start})"))
            slots.append(GiSlot(gpu, start))
        return Placement(j, tuple(slots)), claims

    def _gi_fits(self, pm: PmSpec, prof: Profile, gpu: int, start: int) -> bool:
        """`check.gi_problem` finds nothing, judged once per (GPU model, profile, start)."""
        if gpu >= len(pm.gpus):
            return False
        key = (id(pm.gpus[gpu]), id(prof), start)
        ok = self._gi_ok.get(key)
        if ok is None:
            ok = self._gi_ok[key] = gi_problem(pm, prof, GiSlot(gpu, start)) is None
        return ok
