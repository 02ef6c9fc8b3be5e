"""Starting a simulation from a real cluster state (`simulate --from SNAPSHOT.json`).

The snapshot (docs/formats.md#snapshot, e.g. one made by `origamig import`) gives the data center and
the VMs at t = 0:
- its PMs, in file order; the simulation switches them on and off freely (`powered_off` is dropped:
  a PM is on exactly when it hosts a VM, as everywhere in the simulator);
- a **running** VM stays where it runs until a lifetime drawn from the workload's distribution ends
  (a tenant with the workload's tenant share, else a job; exponential or lognormal with their means),
  counted from t = 0;
- a **pending** VM arrives at t = 0, in file order (oldest first), with a lifetime drawn the same way;
- new requests follow as usual (the synthetic workload on the snapshot's GPUs, or `--requests`).
Lifetimes come from a random stream of their own for each seed, so a seed's synthetic requests are the
same with or without a snapshot. A snapshot VM whose id a request also uses is renamed `<id>@start`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from origamig.cluster.records import Placement, PmSpec
from origamig.errors import SnapshotError, UserError
from origamig.sim.workload import HOUR, Request, WorkloadSpec
from origamig.snapshot.document import Snapshot, load_snapshot

LIFETIME_STREAM = 0x5748  # second entropy word of the lifetimes' random stream (any fixed number)


@dataclass(frozen=True)
class Start:
    """The VMs a run starts with: running ones with their placements, and the pending queue."""

    running: tuple[tuple[Request, Placement], ...]
    pending: tuple[Request, ...]


@functools.cache
def load_start(path: str) -> Snapshot:
    """The validated snapshot at `path` (read once per process)."""
    if not Path(path).is_file():
        raise UserError(f"--from: {path}: no such file")
    try:
        return load_snapshot(path)
    except SnapshotError as exc:  # name the file on every line: the simulation reads several
        raise SnapshotError([f"{path}: {line}" for line in exc.problems]) from None


def start_pms(path: str) -> list[PmSpec]:
    """The snapshot's PMs, all free to switch on and off."""
    return [dataclasses.replace(pm, powered_off=False) for pm in load_start(path).pms]


def draw_lifetimes(spec: WorkloadSpec, seed: int, n: int) -> list[float]:
    """`n` lifetimes (seconds) from the workload's distribution, on the seed's own lifetime stream."""
    rng = np.random.default_rng([seed, LIFETIME_STREAM])
    tenant = rng.random(n) < spec.tenant_share
    means = np.where(tenant, spec.tenant_mean_h, spec.job_mean_h) * HOUR
    if spec.lifetimes == "lognormal":
        s = spec.lognormal_sigma
        return [float(x) for x in rng.lognormal(np.log(means) - s * s / 2, s)] if n else []
    return [float(x) for x in rng.exponential(means)] if n else []


def start_state(path: str, spec: WorkloadSpec, seed: int, taken: Sequence[str] = ()) -> Start:
    """The snapshot's VMs as the run starts them; ids in `taken` (the requests') are avoided."""
    snap = load_start(path)
    lifetimes = draw_lifetimes(spec, seed, len(snap.vms))
    used = set(taken)
    running: list[tuple[Request, Placement]] = []
    pending: list[Request] = []
    for (vm_id, vm), life in zip(snap.vms.items(), lifetimes, strict=True):
        new_id = vm_id
        while new_id in used:
            new_id = f"{new_id}@start"
        used.add(new_id)
        spec_vm = vm if new_id == vm_id else dataclasses.replace(vm, id=new_id)
        request = Request(spec_vm, 0.0, life, "snapshot")
        if vm_id in snap.placement:
            running.append((request, snap.placement[vm_id]))
        else:
            pending.append(request)
    return Start(tuple(running), tuple(pending))
