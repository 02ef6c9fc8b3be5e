"""Builders for hand-made states: GPU configurations, PMs, VMs and data centers from short literals.

VMs get the workload's sizing (docs/simulator.md#workload): 4 cores and 16 GB per compute slice of their GIs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from origamig.cluster.catalog import GpuModel, Profile, default_catalog
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.mig import GpuConfig
from origamig.cluster.records import GiSlot, Placement, PmSpec, VmSpec, cores_to_m, gb_to_mb

A100 = "A100-40GB"
A30 = "A30-24GB"
CORES_PER_COMPUTE = 4
GB_PER_COMPUTE = 16


def model(name: str = A100) -> GpuModel:
    return default_catalog().gpu(name)


def profile(name: str, gpu: str = A100) -> Profile:
    return model(gpu).profile(name)


def config(gpu: str, *gis: tuple[str, int]) -> GpuConfig:
    """A GPU configuration from (profile name, start) pairs, e.g. `config(A100, ("1g.5gb", 0))`."""
    out = GpuConfig(model(gpu))
    for name, start in gis:
        out = out.place(name, start)
    return out


def pm(pm_id: str, gpus: Sequence[str] = (A100, A100), cpu: float = 80, ram_gb: float = 512) -> PmSpec:
    """A PM with the named GPU models (docs/simulator.md#data-center default: 80 cores, 512 GB, two A100s)."""
    return PmSpec(pm_id, cores_to_m(cpu), gb_to_mb(ram_gb), tuple(model(g) for g in gpus))


def vm(
    vm_id: str,
    gis: Sequence[str] = (),
    gpu: str = A100,
    cpu: float | None = None,
    ram_gb: float | None = None,
) -> VmSpec:
    """A VM with GIs of profiles `gis` of model `gpu`; CPU/RAM default to 4 cores / 16 GB per compute
    slice (one compute slice's worth when it has no GIs)."""
    profiles = tuple(profile(name, gpu) for name in gis)
    compute = sum(p.compute_slices for p in profiles) or 1
    cores = CORES_PER_COMPUTE * compute if cpu is None else cpu
    ram = GB_PER_COMPUTE * compute if ram_gb is None else ram_gb
    return VmSpec(vm_id, cores_to_m(cores), gb_to_mb(ram), profiles)


def at(pm_index: int, *slots: tuple[int, int]) -> Placement:
    """A placement on PM `pm_index` with one (gpu, start) per GI."""
    return Placement(pm_index, tuple(GiSlot(g, z) for g, z in slots))


def datacenter(
    pms: Sequence[PmSpec], placed: Iterable[tuple[VmSpec, Placement]] = (), pending: Iterable[VmSpec] = ()
) -> DataCenter:
    """A data center with `placed` VMs running (placed in order, validated) and `pending` queued."""
    dc = DataCenter(pms)
    for spec, placement in placed:
        dc.place(spec, placement)
    for spec in pending:
        dc.add_pending(spec)
    return dc
