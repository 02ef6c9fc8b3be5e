"""GRMU's inter-GPU consolidation (docs/policies.md#grmu), decided on a copy of the state.

Per GPU class, the GPUs active at the start, least used first (used memory slices, then (pm, gpu)).
A GPU is *vacated* when every VM with a GI on it can be re-placed by GRMU's rule on other *active*
GPUs of each GI's basket — no idle GPU is switched on for it —: on the VM's own PM first (its GIs
on other GPUs stay where they are; a move between GPUs of one PM copies nothing over the network),
else on the first active PM in data-center order with the CPU and RAM. A VM moves at most once, a
GPU that received a GI is not vacated afterwards, a pinned VM (`migratable` false) keeps its GPU, and
without intra-PM moves (`DataCenter.intra_pm_moves`) a VM only leaves its PM. A vacate that fails
leaves no trace. The moves apply one after the other on the copy, so the target is valid and can
be reached in that order; the executor orders them (docs/policies.md#executor).

Complexity: O(A · V · |M_h| · |K_j| · |GIs|) for A active GPUs and V VMs per GPU; a remembered
per-PM test (CPU/RAM, a GPU of the basket with the slices of the largest GI: `_targets`) comes
before any placement is tried.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, VmSpec
from origamig.policies.arrival_rule import candidate_pms, class_gpus, gi_order, variants_on
from origamig.policies.grmu.baskets import LARGE, SMALL, Baskets, PmView, allowed, basket_fit, greedy

Gpu = tuple[int, int]  # (pm, gpu index)


@dataclass(frozen=True)
class Consolidation:
    """What one consolidation decided: the moves (final placement per moved VM) and the GPUs emptied."""

    moves: dict[str, Placement]
    vacated: tuple[Gpu, ...]


def consolidate(dc: DataCenter, rule: Baskets) -> Consolidation:
    """One consolidation of every GPU class of `dc` (which is not changed)."""
    view = dc.copy()
    moved: dict[str, Placement] = {}
    received: set[Gpu] = set()
    rooms = Rooms(view, rule)
    for h in sorted(dc.active_gpus):
        gpus = sorted(_active(dc, h), key=lambda g: (dc.gpu_geometry(*g).slices - dc.free_slices(*g), g))
        for g in gpus:
            if g in received or not view.gpu_active(*g):
                continue
            trial = _vacate(view, rule, g, moved, rooms)
            if trial is None:
                continue
            view, new = trial
            rooms = Rooms(view, rule)
            for v, pl in new.items():
                old = dc.placement[v]
                received.update(
                    (pl.pm, s.gpu) for s, o in zip(pl.gis, old.gis, strict=True) if (pl.pm, s) != (old.pm, o)
                )
            moved.update(new)
    emptied = tuple(sorted(g for h in dc.active_gpus for g in _active(dc, h) if not view.gpu_active(*g)))
    return Consolidation(dict(sorted(moved.items())), emptied)


def _active(dc: DataCenter, h: str) -> list[Gpu]:
    return [(j, k) for j in dc.class_pms.get(h, ()) for k in class_gpus(dc, j, h) if dc.gpu_active(j, k)]


class Rooms:
    """Per class and basket, the active PMs (data-center order) with at least s free slices on one
    GPU of the basket, for each s. Built on one state, it stays a superset for the states a vacate
    derives from it: their PMs other than the vacated GPU's only fill up."""

    def __init__(self, state: DataCenter, rule: Baskets) -> None:
        self.lists: dict[tuple[str, int], list[list[int]]] = {}
        for h, pms in state.class_pms.items():
            rooms = [(j, rule.room(state, j, h)) for j in pms if state.is_active(j)]
            for b in (LARGE, SMALL):
                top = max((r[b] for _, r in rooms), default=0)
                self.lists[h, b] = [[j for j, r in rooms if r[b] >= s] for s in range(top + 1)]

    def pms(self, gpu_class: str, basket: int, size: int) -> list[int]:
        lists = self.lists.get((gpu_class, basket), [])
        return lists[size] if size < len(lists) else []


def _vacate(
    view: DataCenter,
    rule: Baskets,
    g: Gpu,
    moved: dict[str, Placement],
    rooms: Rooms,
    locked: frozenset[int] = frozenset(),
) -> tuple[DataCenter, dict[str, Placement]] | None:
    """A copy of `view` with every VM on GPU g re-placed (off the `locked` PMs), and their
    placements; None if one cannot be (most attempts fail `_targets` for some VM, before any move)."""
    holders = {v for v, _ in view.gis_on(*g).values()}
    vms = sorted((view.vms[v] for v in holders), key=lambda vm: (-vm.memory_slices, vm.id))
    if any(vm.id in moved or not vm.migratable for vm in vms):
        return None
    if not all(next(_targets(view, rule, vm, g, locked, rooms), None) is not None for vm in vms):
        return None
    trial = view.copy()
    new: dict[str, Placement] = {}
    for vm in vms:
        pl = _relocate(trial, rule, vm, g, locked, rooms)
        if pl is None:
            return None
        trial.move(vm.id, pl)
        new[vm.id] = pl
    return trial, new


def _targets(
    state: DataCenter,
    rule: Baskets,
    vm: VmSpec,
    g: Gpu,
    locked: frozenset[int],
    rooms: Rooms,
) -> Iterator[int]:
    """The PMs where `vm` may land off GPU g, its own first: its own when a GPU other than g is of
    its largest GI's basket (or holds one of its GIs) with the slices that GI needs; another active PM
    with its CPU/RAM and such a GPU of the basket (looked for among `rooms`' PMs only). A
    necessary test for `_relocate`, and one that moves only make harder (they claim resources), so
    a vacate checks it for every VM first."""
    home = state.placement[vm.id]
    h = vm.gpu_class
    n = gi_order(vm)[0]
    size = vm.gis[n].memory_slices
    basket = rule.of_gi(vm.gis[n], state.gpu_geometry(home.pm, home.gis[n].gpu).slices)
    if state.intra_pm_moves:
        own = {s.gpu: 0 for s in home.gis}
        for p, s in zip(vm.gis, home.gis, strict=True):
            own[s.gpu] += p.memory_slices
        labels = zip(class_gpus(state, home.pm, h), rule.labels(state, home.pm, h), strict=True)
        if any(
            (home.pm, k) != g
            and (label == basket or k in own)
            and state.free_slices(home.pm, k) + own.get(k, 0) >= size
            for k, label in labels
        ):
            yield home.pm
    for j in rooms.pms(h, basket, size):
        if j == home.pm or j in locked or not state.is_active(j) or not state.fits_resources(vm, j):
            continue
        if rule.room(state, j, h)[basket] >= size:
            yield j


def _relocate(
    state: DataCenter, rule: Baskets, vm: VmSpec, g: Gpu, locked: frozenset[int], rooms: Rooms
) -> Placement | None:
    """Where GRMU's rule re-places `vm` off GPU g without opening a GPU: its own PM first, else the first
    other active PM of its class; None if nowhere."""
    home = state.placement[vm.id]
    without: DataCenter | None = None
    order = gi_order(vm)
    keep = {n: s for n, s in enumerate(home.gis) if (home.pm, s.gpu) != g}
    for j in _targets(state, rule, vm, g, locked, rooms):
        if without is None:
            without = state.copy()
            without.remove(vm.id)
        view = PmView(without, j, vm.gpu_class, rule)
        exclude = (g[1],) if j == g[0] else ()
        kept = keep if j == home.pm else None
        slots, _ = greedy(rule, view, vm, order, exclude=exclude, open_idle=False, keep=kept)
        if all(s is not None for s in slots):
            return Placement(j, tuple(slots))  # type: ignore[arg-type]
    return None


Moves = tuple[tuple[str, Placement], ...]


def make_room(
    dc: DataCenter, rule: Baskets, vm: VmSpec, locked: frozenset[int]
) -> tuple[Placement, Moves] | None:
    """Stage 3 for an arriving VM that fits nowhere, even after one GPU is defragmented: one active
    GPU vacated by the consolidation's rule (its VMs to other active GPUs of their baskets, off the
    `locked` PMs) so that the VM fits on its PM by GRMU's rule within the basket limits; the fewest
    VMs moved, then GPUs opened, then a PM already on, then lowest (pm, gpu). None if no GPU will do.

    GPUs are tried by how many VMs they hold, and the search ends with the first count at which one
    works; only GPUs on which the VM would fit if they were idle are vacated."""
    rooms = Rooms(dc, rule)
    tries: list[tuple[int, int, int, VmSpec]] = []
    for j in candidate_pms(dc, vm, locked):
        for variant in variants_on(dc, j, vm):
            for k in class_gpus(dc, j, variant.gpu_class):
                if dc.gpu_active(j, k):
                    tries.append((len({v for v, _ in dc.gis_on(j, k).values()}), j, k, variant))
    best: tuple[tuple[int, int, int], Placement, Moves] | None = None
    for holders, j, k, variant in sorted(tries, key=lambda t: t[:3]):
        if best is not None and holders > best[0][0]:
            break
        order = gi_order(variant)
        if not _fits_if_idle(rule, dc, j, k, variant, order):
            continue
        trial = _vacate(dc, rule, (j, k), {}, rooms, locked)
        if trial is None:
            continue
        state, new = trial
        h = variant.gpu_class
        fit = basket_fit(rule, state, j, variant, order)
        if fit is None or not allowed(fit[0], rule.held(state, h), rule.limits(state, h)):
            continue
        key = (len(new), sum(fit[0]), int(not dc.is_active(j)))
        if best is None or key < best[0]:  # ascending (pm, gpu) within a count: ties keep the lowest
            best = (key, fit[1], tuple(new.items()))
    return None if best is None else (best[1], best[2])


def _fits_if_idle(rule: Baskets, dc: DataCenter, j: int, k: int, vm: VmSpec, order: tuple[int, ...]) -> bool:
    """Whether GRMU's rule places the VM on PM j were GPU k idle."""
    view = PmView(dc, j, vm.gpu_class, rule)
    i = view.gpus.index(k)
    view.occ[i], view.label[i] = 0, None
    slots, _ = greedy(rule, view, vm, order)
    return all(s is not None for s in slots)
