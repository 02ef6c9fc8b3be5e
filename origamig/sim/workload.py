"""Synthetic requests of docs/simulator.md#workload (paper §6.2): Poisson arrivals, jobs and tenants, one or
two GIs.

A request is a VM of GIs of one GPU model, each profile drawn with its weight (uniform by default),
with 4 cores and 16 GB of RAM per compute slice. Lifetimes are exponential (or lognormal with the
same means) and start at admission. The arrival rate of each GPU model is set so that it carries
the offered load ρ = λ·E[L]·E[f]/|K| on its own GPUs (E[f]: share of a GPU's memory slices the VM's
GIs take). The stream depends on the seed only, so every policy sees the same requests.
A fleet file may give a GPU model's profile mix (`WorkloadSpec.profile_weights`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from origamig.cluster.catalog import GpuModel, Profile
from origamig.cluster.records import VmSpec, cores_to_m, gb_to_mb

HOUR = 3600.0


@dataclass(frozen=True, slots=True)
class Request:
    """One VM request: when it arrives, how long it runs once admitted (hidden from policies)."""

    vm: VmSpec
    arrival_s: float
    lifetime_s: float
    kind: str = "job"  # job | tenant | trace | file

    @property
    def id(self) -> str:
        return self.vm.id


@dataclass(frozen=True)
class WorkloadSpec:
    """The knobs of the synthetic workload; defaults are the paper's (docs/simulator.md#workload)."""

    load: float = 0.85
    tenant_share: float = 0.3
    job_mean_h: float = 2.0
    tenant_mean_h: float = 24.0
    two_gi_share: float = 0.5
    lifetimes: str = "exponential"  # exponential | lognormal
    lognormal_sigma: float = 1.5
    larger_weight: float = 1.0  # weight of the larger profiles relative to the others
    cores_per_compute: float = 4.0
    ram_gb_per_compute: float = 16.0
    # GPU model → ((profile, weight), ...): that model's profile mix (unlisted profiles weigh 0);
    # models not listed draw their profiles uniformly.
    profile_weights: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = ()

    @property
    def mean_lifetime_h(self) -> float:
        return (1 - self.tenant_share) * self.job_mean_h + self.tenant_share * self.tenant_mean_h


def is_larger(profile: Profile, model: GpuModel) -> bool:
    """A 'larger' profile (Table 9's profile-mix variants) takes at least half the GPU's memory slices."""
    return 2 * profile.memory_slices >= model.memory_slices


def profile_weights(model: GpuModel, spec: WorkloadSpec) -> list[float]:
    """Relative draw weight of each profile of `model`: the spec's mix for this model (else uniform),
    times `larger_weight` for the larger profiles."""
    mix = dict(spec.profile_weights).get(model.name)
    profiles = model.profiles
    base = [1.0] * len(profiles) if mix is None else [dict(mix).get(p.name, 0.0) for p in profiles]
    return [w * spec.larger_weight if is_larger(p, model) else w for w, p in zip(base, profiles, strict=True)]


def mean_share(model: GpuModel, spec: WorkloadSpec) -> float:
    """E[f]: expected share of one GPU's memory slices that a VM of this model's GIs takes."""
    weights = profile_weights(model, spec)
    mean_g = sum(w * p.memory_slices for w, p in zip(weights, model.profiles, strict=True)) / sum(weights)
    return (1 + spec.two_gi_share) * mean_g / model.memory_slices


def arrival_rates_per_h(gpus: Mapping[str, tuple[GpuModel, int]], spec: WorkloadSpec) -> dict[str, float]:
    """λ per GPU model (VMs per hour) so that each model carries load ρ on its |K_m| GPUs."""
    return {
        name: spec.load * count / (spec.mean_lifetime_h * mean_share(model, spec))
        for name, (model, count) in gpus.items()
        if count > 0
    }


def vm_for(
    vm_id: str, profiles: Sequence[Profile], cores_per_compute: float = 4.0, ram_gb_per_compute: float = 16.0
) -> VmSpec:
    """A VM with these GIs and the CPU/RAM rule of docs/simulator.md#workload (per compute slice)."""
    compute = sum(p.compute_slices for p in profiles)
    return VmSpec(
        id=vm_id,
        cpu_m=cores_to_m(cores_per_compute * compute),
        ram_mb=gb_to_mb(ram_gb_per_compute * compute),
        gis=tuple(profiles),
    )


def generate(
    gpus: Mapping[str, tuple[GpuModel, int]], spec: WorkloadSpec, seed: int, horizon_s: float
) -> list[Request]:
    """The request stream of `seed` over [0, horizon_s), sorted by arrival time.

    `gpus` maps a GPU model name to (model, number of such GPUs in the data center).
    """
    rates = arrival_rates_per_h(gpus, spec)
    names = sorted(rates)
    total = sum(rates.values())
    if not names or total <= 0 or horizon_s <= 0:
        return []
    rng = np.random.default_rng(seed)
    arrivals = _poisson_times(rng, total / HOUR, horizon_s)
    n = len(arrivals)
    model_idx = rng.choice(len(names), size=n, p=[rates[m] / total for m in names])
    tenant = rng.random(n) < spec.tenant_share
    two = rng.random(n) < spec.two_gi_share
    means = np.where(tenant, spec.tenant_mean_h, spec.job_mean_h) * HOUR
    if spec.lifetimes == "lognormal":
        s = spec.lognormal_sigma
        lifetimes = rng.lognormal(np.log(means) - s * s / 2, s)
    else:
        lifetimes = rng.exponential(means)
    draws = rng.random((n, 2))
    cumulative = {}
    for m in names:
        w = np.cumsum(profile_weights(gpus[m][0], spec))
        cumulative[m] = w / w[-1]
    out: list[Request] = []
    for i in range(n):
        m = names[model_idx[i]]
        model = gpus[m][0]
        cum = cumulative[m]
        count = 2 if two[i] else 1
        profiles = [
            model.profiles[int(np.searchsorted(cum, draws[i, g], side="right"))] for g in range(count)
        ]
        vm = vm_for(f"r{i}", profiles, spec.cores_per_compute, spec.ram_gb_per_compute)
        kind = "tenant" if tenant[i] else "job"
        out.append(Request(vm, float(arrivals[i]), float(lifetimes[i]), kind))
    return out


def _poisson_times(rng: np.random.Generator, rate_per_s: float, horizon_s: float) -> np.ndarray:
    """Arrival times of a Poisson process of `rate_per_s` on [0, horizon_s)."""
    expected = rate_per_s * horizon_s
    chunk = int(expected + 6 * math.sqrt(expected) + 16)
    times = np.cumsum(rng.exponential(1 / rate_per_s, chunk))
    while times[-1] < horizon_s:
        more = np.cumsum(rng.exponential(1 / rate_per_s, chunk)) + times[-1]
        times = np.concatenate([times, more])
    return times[times < horizon_s]


def offered_load(
    requests: Sequence[Request], gpus: Mapping[str, tuple[GpuModel, int]], horizon_s: float
) -> dict[str, float]:
    """Measured offered load per GPU model: Σ lifetime·f / (horizon · |K_m|) (a check on a stream)."""
    work = dict.fromkeys(gpus, 0.0)
    for r in requests:
        if r.vm.gis:
            name = r.vm.gis[0].gpu_model
            work[name] += r.lifetime_s * r.vm.memory_slices / gpus[name][0].memory_slices
    return {m: work[m] / (horizon_s * k) for m, (_, k) in gpus.items() if k}
