"""The referee: Eq. (5) computed for any placement, recomputing φ, γ, m, ω and f from it.

Solver objective values, plan acceptance and tests all go through `evaluate`; the solver code never
marks its own homework.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from origamig.cluster.catalog import GpuModel
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.mig import geometry
from origamig.cluster.records import Placement, PmSpec, VmSpec, Weights


@dataclass(frozen=True)
class Objective:
    """Eq. (5) and its four terms: acceptance − consolidation − migration + free starts."""

    acceptance: float
    consolidation: float  # Σ b_j φ_j + Σ e_jk γ_jk (subtracted)
    migration: float  # Σ δ_i (m_i + ω_i) (subtracted)
    free_starts: float  # Σ w_p f_jkpz

    @property
    def value(self) -> float:
        return self.acceptance - self.consolidation - self.migration + self.free_starts

    def as_dict(self) -> dict[str, float]:
        return {
            "value": self.value,
            "acceptance": self.acceptance,
            "consolidation": self.consolidation,
            "migration": self.migration,
            "free_starts": self.free_starts,
        }


def evaluate(
    pms: Sequence[PmSpec],
    vms: Mapping[str, VmSpec],
    placement: Mapping[str, Placement],
    previous: Mapping[str, Placement],
    weights: Weights,
    region_pms: Iterable[int] | None = None,
    region_vms: Iterable[str] | None = None,
) -> Objective:
    """Eq. (5) over a region (default: everything) for `placement`, relative to `previous`.

    `vms` holds every VM of the region (running and pending); a VM counts as admitted when it is in
    `placement`, and as previously running (δ_i > 0) when it is in `previous`. The PM and GPU terms
    and the free-start term cover the PMs of `region_pms`; the acceptance and migration terms cover
    the VMs of `region_vms`.
    """
    pm_set = range(len(pms)) if region_pms is None else sorted(set(region_pms))
    vm_ids = list(vms) if region_vms is None else list(region_vms)
    acceptance = 0.0
    migration = 0.0
    for v in vm_ids:
        vm = vms[v]
        now = placement.get(v)
        if now is None:
            continue
        acceptance += weights.a(vm)
        before = previous.get(v)
        if before is None:
            continue
        m = 1 if now.pm != before.pm else 0
        omega = 1 if (m or now.gis != before.gis) else 0
        migration += weights.delta(vm) * (m + omega)
    occ: dict[tuple[int, int], int] = {}
    hosts: set[int] = set()
    wanted = set(pm_set)
    for v, pl in placement.items():
        if pl.pm not in wanted:
            continue
        hosts.add(pl.pm)
        vm = vms[v].placed_on(pms[pl.pm], pl)
        for prof, slot in zip(vm.gis, pl.gis, strict=True):
            key = (pl.pm, slot.gpu)
            occ[key] = occ.get(key, 0) | prof.mask(slot.start)
    consolidation, free_starts = _pm_terms(pms, pm_set, hosts, occ, weights)
    return Objective(acceptance, consolidation, migration, free_starts)


def _pm_terms(
    pms: Sequence[PmSpec],
    pm_set: Iterable[int],
    hosts: set[int],
    occ: dict[tuple[int, int], int],
    weights: Weights,
) -> tuple[float, float]:
    """Eq. (5)'s PM and GPU terms (Σ b_j φ_j + Σ e_jk γ_jk) and its free-start term (Σ w_p f_jkpz) over
    `pm_set`, from the hosting PMs and each GPU's occupancy; a (model, occupancy)'s free-start value
    is worked out once."""
    consolidation = 0.0
    free_starts = 0.0
    starts_of: dict[tuple[int, int], float] = {}
    for j in pm_set:
        pm = pms[j]
        if j in hosts:
            consolidation += weights.b(pm)
        for k, model in enumerate(pm.gpus):
            mask = occ.get((j, k), 0)
            if not mask:
                continue
            consolidation += weights.gpu
            key = (id(model), mask)
            starts = starts_of.get(key)
            if starts is None:
                starts = starts_of[key] = gpu_free_starts(model, mask, weights)
            free_starts += starts
    return consolidation, free_starts


def gpu_free_starts(model: GpuModel, mask: int, weights: Weights) -> float:
    """Σ_p w_p |S(F, p)|: the weighted free permissible starts of a GPU of `model` whose slices
    `mask` are taken (Eq. 5's free-start term of one active GPU)."""
    caps = geometry(model).capacity(mask)
    return sum(weights.w(p.name) * c for p, c in zip(model.profiles, caps, strict=True))


def evaluate_state(dc: DataCenter, weights: Weights) -> Objective:
    """Eq. (5) of `dc`'s state relative to itself, as `evaluate_dc(dc, dc.placement, weights)` gives
    it (to the last bit: the same terms added in the same order), read from the state's counters —
    each GPU's occupancy and each PM's activity — instead of rebuilt from every running VM's GIs."""
    acceptance = 0.0
    for vm in dc.vms.values():
        acceptance += weights.a(vm)
    occ: dict[tuple[int, int], int] = {}
    for j, pm in enumerate(dc.pms):
        for k in range(len(pm.gpus)):
            mask = dc.occupancy(j, k)
            if mask:
                occ[(j, k)] = mask
    hosts = {j for j in range(len(dc.pms)) if dc.is_active(j)}
    consolidation, free_starts = _pm_terms(dc.pms, range(len(dc.pms)), hosts, occ, weights)
    return Objective(acceptance, consolidation, 0.0, free_starts)


def evaluate_dc(
    dc: DataCenter,
    previous: Mapping[str, Placement],
    weights: Weights,
    region_pms: Iterable[int] | None = None,
    region_vms: Iterable[str] | None = None,
) -> Objective:
    """`evaluate` on a DataCenter's current placement (running plus its pending VMs)."""
    vms = {**dc.vms, **dc.pending}
    return evaluate(dc.pms, vms, dc.placement, previous, weights, region_pms, region_vms)


@dataclass(frozen=True)
class ChangeRegion:
    """The servers a set of changes can touch (where its VMs are and where they go) with the VMs on
    them: Eq. (5) over the region differs from Eq. (5) over the whole cluster by the same constant
    for every subset of those changes, so a change is judged by reading the region only."""

    dc: DataCenter
    pms: tuple[int, ...]
    vms: Mapping[str, VmSpec]
    now: Mapping[str, Placement]  # the region's running VMs where they are

    @classmethod
    def around(cls, dc: DataCenter, changed: Mapping[str, Placement]) -> ChangeRegion:
        """The region of `changed`: the servers its VMs are on and go to."""
        pms = {pl.pm for pl in changed.values()}
        pms |= {dc.placement[v].pm for v in changed if v in dc.placement}
        return cls.of(dc, tuple(sorted(pms)), changed)

    @classmethod
    def of(cls, dc: DataCenter, pms: Sequence[int], also: Iterable[str] = ()) -> ChangeRegion:
        """The servers `pms` with the VMs on them, and the VMs `also` (pending or running)."""
        now = {v: dc.placement[v] for j in pms for v in dc.vms_on(j)}
        vms = {v: dc.vms[v] for v in now}
        vms |= {v: dc.vms[v] if v in dc.vms else dc.pending[v] for v in also}
        return cls(dc, tuple(pms), vms, now)

    def evaluate(self, changed: Mapping[str, Placement], weights: Weights) -> Objective:
        """Eq. (5) of the region with `changed` (a subset of the region's changes) applied, relative
        to now."""
        placement = {**self.now, **changed}
        return evaluate(self.dc.pms, self.vms, placement, self.now, weights, self.pms, self.vms)


def evaluate_change(
    dc: DataCenter, base: Objective, changed: Mapping[str, Placement], weights: Weights
) -> Objective:
    """Eq. (5) of `dc`'s state with `changed` applied, relative to `dc`'s state, from `base` (Eq. (5)
    of `dc`'s state, relative to itself): `base` plus the change over the servers it touches."""
    region = ChangeRegion.around(dc, changed)
    before, after = region.evaluate({}, weights), region.evaluate(changed, weights)
    return Objective(
        base.acceptance + after.acceptance - before.acceptance,
        base.consolidation + after.consolidation - before.consolidation,
        base.migration + after.migration - before.migration,
        base.free_starts + after.free_starts - before.free_starts,
    )
