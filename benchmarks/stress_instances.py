"""Large, fragmented H100 clusters for the time-limit stress test and benchmark (snapshot documents).

`h100_cluster(40, 381, 6)` is the shape that exposed a 10 s limit running for minutes: 40 PMs with
8 H100-80GB each, 381 running VMs at random permitted starts (fragmented), 6 pending; with
`--neighborhood all` the compiled model has about 170k columns.
"""

from __future__ import annotations

import random
from typing import Any

from origamig.cluster.catalog import default_catalog

H100 = default_catalog().gpu("H100-80GB")
PM_CPU, PM_RAM_GB, GPUS_PER_PM = 224, 2048, 8


def _vm(rng: random.Random, vm_id: str) -> dict[str, Any]:
    profile = rng.choice(H100.profiles)
    return {
        "id": vm_id,
        "cpu": 4 * profile.compute_slices,
        "ram_gb": 16 * profile.compute_slices,
        "gis": [profile.name],
        "gpu_model": H100.name,
    }


def h100_cluster(n_pms: int = 40, n_running: int = 381, n_pending: int = 6, seed: int = 1) -> dict[str, Any]:
    """A valid snapshot document: running VMs at random free permitted starts of random GPUs."""
    rng = random.Random(seed)
    pms = [
        {"id": f"pm{j}", "cpu": PM_CPU, "ram_gb": PM_RAM_GB, "gpus": [H100.name] * GPUS_PER_PM}
        for j in range(n_pms)
    ]
    used = [[0] * GPUS_PER_PM for _ in range(n_pms)]
    cpu = [0] * n_pms
    vms: list[dict[str, Any]] = []
    misses = 0
    while len(vms) < n_running and misses < 10_000:
        vm = _vm(rng, f"vm{len(vms)}")
        prof = H100.profile(vm["gis"][0])
        j, k = rng.randrange(n_pms), rng.randrange(GPUS_PER_PM)
        starts = [z for z in prof.starts if not used[j][k] & prof.mask(z)]
        if not starts or cpu[j] + vm["cpu"] > PM_CPU:
            misses += 1
            continue
        z = rng.choice(starts)
        used[j][k] |= prof.mask(z)
        cpu[j] += vm["cpu"]
        vm["placement"] = {"pm": f"pm{j}", "gis": [{"gpu": k, "start": z}]}
        vms.append(vm)
    vms += [_vm(rng, f"new{i}") for i in range(n_pending)]
    return {"version": 1, "pms": pms, "vms": vms}
