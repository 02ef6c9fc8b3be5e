"""Hypothesis strategies for random data centers and VMs, shared by the test modules.

- `pm_specs`: PMs with 0–2 GPUs, each an A100-40GB or an A30-24GB, and a few CPU/RAM sizes.
- `vm_specs`: VMs with 0–2 GIs of one class, 4 cores / 16 GB per compute slice (docs/simulator.md#workload).
- `datacenters`: a random *valid* DataCenter: VMs placed one by one with the first-fit arrival rule
  and the default GI placement (`first_fit_placement`); those that fit nowhere are left out (or
  queued as pending with `pending=True`).
- `gpu_configs`: a random configuration of one GPU, built by placing random GIs where they fit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from hypothesis import strategies as st

from origamig.cluster.catalog import GpuModel, default_catalog
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.mig import GpuConfig, geometry
from origamig.cluster.records import GiSlot, Placement, PmSpec, VmSpec, cores_to_m, gb_to_mb
from origamig.policies.base import Rejection

GPU_NAMES = ("A100-40GB", "A30-24GB")
CPU_SIZES = (8, 16, 32, 80)
RAM_SIZES_GB = (32, 64, 128, 512)


def gpu_models(names: tuple[str, ...] = GPU_NAMES) -> st.SearchStrategy[GpuModel]:
    catalog = default_catalog()
    return st.sampled_from([catalog.gpu(n) for n in names])


@st.composite
def pm_specs(draw: st.DrawFn, pm_id: str = "pm0", max_gpus: int = 2) -> PmSpec:
    """A PM with 0..max_gpus GPUs (each drawn independently) and CPU/RAM from a few sizes."""
    gpus = draw(st.lists(gpu_models(), max_size=max_gpus))
    cpu = draw(st.sampled_from(CPU_SIZES))
    ram = draw(st.sampled_from(RAM_SIZES_GB))
    return PmSpec(pm_id, cores_to_m(cpu), gb_to_mb(ram), tuple(gpus))


@st.composite
def pm_lists(draw: st.DrawFn, min_pms: int = 1, max_pms: int = 4) -> list[PmSpec]:
    n = draw(st.integers(min_pms, max_pms))
    return [draw(pm_specs(pm_id=f"pm{j}")) for j in range(n)]


@st.composite
def vm_specs(draw: st.DrawFn, vm_id: str = "vm0", max_gis: int = 2) -> VmSpec:
    """A VM with 0..max_gis GIs of one GPU model; 4 cores / 16 GB per compute slice (1 slice if none)."""
    model = draw(gpu_models())
    count = draw(st.integers(0, max_gis))
    profiles = tuple(draw(st.sampled_from(model.profiles)) for _ in range(count))
    compute = sum(p.compute_slices for p in profiles) or 1
    return VmSpec(vm_id, cores_to_m(4 * compute), gb_to_mb(16 * compute), profiles)


def first_fit_placement(dc: DataCenter, vm: VmSpec) -> Placement | None:
    """The arrival rule (docs/policies.md#arrival-rule): the first PM with enough CPU/RAM where every GI,
    largest first, gets the lowest-index GPU of its class on which the default GI placement finds a start;
    None if none."""
    order = sorted(range(len(vm.gis)), key=lambda n: (-vm.gis[n].memory_slices, n))
    for j in range(len(dc.pms)):
        if not dc.fits_resources(vm, j):
            continue
        occ = [dc.occupancy(j, k) for k in range(dc.gpu_count(j))]
        slots: dict[int, GiSlot] = {}
        for n in order:
            prof = vm.gis[n]
            for k in range(len(occ)):
                model = dc.gpu_model(j, k)
                if model.gpu_class != prof.gpu_class or not model.has_profile(prof.name):
                    continue
                z = geometry(model).default_start(occ[k], model.profile(prof.name))
                if z is not None:
                    occ[k] |= prof.mask(z)
                    slots[n] = GiSlot(k, z)
                    break
            else:
                break
        if len(slots) == len(vm.gis):
            return Placement(j, tuple(slots[n] for n in range(len(vm.gis))))
    return None


@st.composite
def datacenters(
    draw: st.DrawFn, min_pms: int = 1, max_pms: int = 4, max_vms: int = 10, pending: bool = False
) -> DataCenter:
    """A random valid DataCenter filled by first-fit; unplaceable VMs are dropped or, with
    `pending=True`, queued."""
    dc = DataCenter(draw(pm_lists(min_pms, max_pms)))
    for i in range(draw(st.integers(0, max_vms))):
        vm = draw(vm_specs(vm_id=f"vm{i}"))
        placement = first_fit_placement(dc, vm)
        if placement is not None:
            dc.place(vm, placement)
        elif pending:
            dc.add_pending(vm)
    return dc


@st.composite
def gpu_configs(draw: st.DrawFn, model: GpuModel | None = None, max_attempts: int = 10) -> GpuConfig:
    """A random configuration: random (profile, permitted start) attempts, kept where they fit."""
    m = draw(gpu_models()) if model is None else model
    config = GpuConfig(m)
    for _ in range(draw(st.integers(0, max_attempts))):
        prof = draw(st.sampled_from(m.profiles))
        start = draw(st.sampled_from(prof.starts))
        if not config.occupancy & prof.mask(start):
            config = config.place(prof, start)
    return config


@st.composite
def gpu_pms(draw: st.DrawFn, max_pms: int) -> list[PmSpec]:
    """1..max_pms PMs with 1–3 GPUs each (A100/A30, mixed allowed) and roomy CPU/RAM, so that
    compactions have room to work; `strategies.pm_lists` adds PMs without GPUs and small ones."""
    n = draw(st.integers(1, max_pms))
    return [
        PmSpec(
            f"g{j}",
            cores_to_m(draw(st.sampled_from((32, 80)))),
            gb_to_mb(512),
            tuple(draw(st.lists(gpu_models(), min_size=1, max_size=3))),
        )
        for j in range(n)
    ]


@st.composite
def random_states(draw: st.DrawFn, max_pms: int = 4, max_vms: int = 10) -> DataCenter:
    """A valid state with VMs at *random* feasible places (not first-fit), so policies meet any layout."""
    pms = draw(st.one_of(pm_lists(1, max_pms), gpu_pms(max_pms)))
    dc = DataCenter(pms)
    for i in range(draw(st.integers(0, max_vms))):
        vm = draw(vm_specs(vm_id=f"s{i}"))
        hosts = [j for j in range(len(dc.pms)) if dc.fits_resources(vm, j)]
        if vm.gis:
            hosts = [j for j in hosts if vm.gpu_class in dc.pms[j].gpu_classes]
        if not hosts:
            continue
        j = draw(st.sampled_from(hosts))
        occ = {k: dc.occupancy(j, k) for k in range(dc.gpu_count(j))}
        slots = []
        for prof in vm.gis:
            options = [
                (k, z)
                for k, g in enumerate(dc.pms[j].gpus)
                if g.gpu_class == prof.gpu_class
                for z in geometry(g).free_starts(occ[k], g.profile(prof.name))
            ]
            if not options:
                break
            k, z = draw(st.sampled_from(options))
            occ[k] |= prof.mask(z)
            slots.append(GiSlot(k, z))
        if len(slots) == len(vm.gis):
            dc.place(vm, Placement(j, tuple(slots)))
    return dc


def arrival_stream(
    data: st.DataObject,
    dc: DataCenter,
    shapes: list[VmSpec],
    steps: int,
    choose: Callable[[DataCenter, VmSpec], Placement | Rejection],
) -> None:
    """A random stream over `dc` and the states copied from it: arrivals of `shapes` (again and
    again; each placed where `choose` says, which may assert on the way), departures and copies."""
    states = [dc]
    for step in range(steps):
        state = states[data.draw(st.integers(0, len(states) - 1))]
        op = data.draw(st.sampled_from(["arrive", "arrive", "arrive", "depart", "copy"]))
        if op == "copy":
            states.append(state.copy())
        elif op == "depart" and state.vms:
            state.remove(data.draw(st.sampled_from(sorted(state.vms))))
        else:
            vm = replace(data.draw(st.sampled_from(shapes)), id=f"new{step}")
            placed = choose(state, vm)
            if not isinstance(placed, Rejection):
                state.place(vm, placed)
