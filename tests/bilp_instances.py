"""Instances for the BILP tests: a private first-fit filler and random fragmented regions.

First-fit here follows the arrival rule of docs/policies.md#arrival-rule: the first PM with CPU/RAM where
every GI, largest first, gets the lowest-index GPU on which the default GI placement finds a start. It is a
test fixture, not the FF policy.
"""

from __future__ import annotations

import random

from origamig.cluster.catalog import default_catalog
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import MILLI, Placement, PmSpec, VmSpec
from origamig.policies.arrival_rule import first_fit as shared_first_fit
from origamig.policies.base import Rejection

CATALOG = default_catalog()
A100 = CATALOG.gpu("A100-40GB")
A30 = CATALOG.gpu("A30-24GB")


def first_fit(dc: DataCenter, vm: VmSpec) -> Placement | None:
    """The shared arrival rule (`origamig.policies.arrival_rule`), None where the VM fits nowhere."""
    hit = shared_first_fit(dc, vm)
    return None if isinstance(hit, Rejection) else hit


def random_vm(rng: random.Random, vm_id: str, model=A100, max_gis: int = 2) -> VmSpec:
    """The workload's shape (docs/simulator.md#workload): 1–max_gis GIs of one model, profiles uniform,
    4 cores and 16 GB per compute slice."""
    gis = tuple(rng.choice(model.profiles) for _ in range(rng.randint(1, max_gis)))
    compute = sum(p.compute_slices for p in gis)
    return VmSpec(vm_id, 4 * compute * MILLI, 16 * compute * MILLI, gis)


def fragmented(
    rng: random.Random,
    n_pms: int,
    n_vms: int,
    n_pending: int,
    models=(A100, A100),
    cpu: int = 80,
    ram_gb: int = 512,
) -> DataCenter:
    """FF-filled data center, a random third of the placed VMs departed, then `n_pending` pending VMs."""
    pms = [PmSpec(f"pm{j}", cpu * MILLI, ram_gb * MILLI, tuple(models)) for j in range(n_pms)]
    dc = DataCenter(pms)
    for n in range(n_vms):
        vm = random_vm(rng, f"vm{n}", models[0])
        pl = first_fit(dc, vm)
        if pl is not None:
            dc.place(vm, pl)
    for v in sorted(dc.vms):
        if rng.random() < 1 / 3:
            dc.remove(v)
    for n in range(n_pending):
        dc.add_pending(random_vm(rng, f"p{n}", models[0]))
    return dc
