"""The Alibaba 2023 GPU trace (`openb_pod_list_default.csv`) mapped to MIG requests
(docs/simulator.md#alibaba-trace).

Mapping, per pod:
- a pod with `num_gpu` = 1 and `gpu_milli` < 1000 (GPU share f) gets the smallest profile (fewest memory,
  then compute slices) with ≥ ⌈7f⌉ compute and ≥ ⌈8f⌉ memory slices (⌈C·f⌉, ⌈U·f⌉ of the GPU model);
- a pod with 1 or 2 whole GPUs gets one or two full-GPU GIs (7g.40gb on the A100);
- pods without a GPU or with more than 2 are dropped, and so are the pods created before the trace's
  last 34 days (the trace ends with the pods still alive, the bulk falls in that span);
- lifetime = deletion − scheduled time (creation time for pods never scheduled), at least 1 s;
  CPU and RAM follow the workload rule (4 cores and 16 GB per compute slice: the pods' own requests
  exceed the simulated PMs).
Timeline: arrival offsets are compressed (lifetimes kept) so that the offered load
Σ lifetime·f / (length · |K|) equals the run's load; seed s starts at (s − 1)/5 of the compressed
length and wraps around, repeating the trace if the run is longer than it.

The data is research-use only and is never copied into the repository: it is read from `--trace-dir`,
else `$ORIGAMIG_ALIBABA_DIR`; there is no default location.
"""

from __future__ import annotations

import csv
import functools
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from origamig.cluster.catalog import GpuModel, Profile
from origamig.cluster.records import PmSpec
from origamig.errors import UserError
from origamig.sim.workload import Request, WorkloadSpec, vm_for

POD_FILE = "openb_pod_list_default.csv"
ENV_VAR = "ORIGAMIG_ALIBABA_DIR"
KEEP_LAST_S = 34 * 86400.0  # paper §6.5: keep the pods created in the trace's last 34 days
SEED_OFFSETS = 5  # seed s starts at (s − 1)/5 of the trace


class TraceError(UserError):
    """The trace is missing or malformed."""


@dataclass(frozen=True, slots=True)
class Pod:
    """One trace row, reduced to what the mapping needs."""

    name: str
    creation_s: float
    lifetime_s: float
    num_gpu: int
    gpu_milli: int


def trace_dir(option: str | None = None) -> Path:
    """The trace folder: `--trace-dir` (`option`), else the environment variable `ORIGAMIG_ALIBABA_DIR`."""
    where = option or os.environ.get(ENV_VAR)
    fetch = (
        "download cluster-trace-gpu-v2023 from github.com/alibaba/clusterdata and pass --trace-dir "
        f"or set {ENV_VAR}"
    )
    if not where:
        raise TraceError(f"--trace-dir: no trace folder given ({fetch})")
    path = Path(where)
    if not (path / POD_FILE).is_file():
        raise TraceError(f"--trace-dir: no {POD_FILE} in {path} ({fetch})")
    return path


@functools.cache
def load_pods(directory: str) -> tuple[Pod, ...]:
    """Every pod of the trace file in `directory`, in file order (cached per process)."""
    path = Path(directory) / POD_FILE
    pods = []
    with path.open(newline="") as fh:
        for n, row in enumerate(csv.DictReader(fh)):
            try:
                created = float(row["creation_time"])
                deleted = float(row["deletion_time"])
                start = float(row["scheduled_time"]) if row.get("scheduled_time") else created
                pods.append(
                    Pod(
                        row["name"],
                        created,
                        max(deleted - start, 1.0),
                        int(row["num_gpu"]),
                        int(row["gpu_milli"]),
                    )
                )
            except (KeyError, TypeError, ValueError) as exc:
                raise TraceError(f"{path}:{n + 2}: malformed row ({exc})") from None
    return tuple(pods)


def profile_for_share(share: float, model: GpuModel) -> Profile:
    """The smallest profile with ≥ ⌈C·f⌉ compute and ≥ ⌈U·f⌉ memory slices."""
    need_c = math.ceil(model.compute_slices * share - 1e-9)
    need_m = math.ceil(model.memory_slices * share - 1e-9)
    fits = [p for p in model.profiles if p.compute_slices >= need_c and p.memory_slices >= need_m]
    return min(fits, key=lambda p: (p.memory_slices, p.compute_slices, p.index))


def full_profile(model: GpuModel) -> Profile:
    """The profile that takes the whole GPU (7g.40gb on the A100)."""
    return max(model.profiles, key=lambda p: (p.memory_slices, p.compute_slices))


def map_pods(pods: Sequence[Pod], model: GpuModel) -> list[tuple[Pod, tuple[Profile, ...]]]:
    """The kept pods (GPU pods with 1–2 GPUs, created in the last 34 days) and their GIs."""
    if not pods:
        return []
    cutoff = max(p.creation_s for p in pods) - KEEP_LAST_S
    full = full_profile(model)
    out = []
    for pod in pods:
        if pod.creation_s < cutoff or pod.num_gpu < 1 or pod.num_gpu > 2:
            continue
        if pod.num_gpu == 1 and pod.gpu_milli < 1000:
            gis: tuple[Profile, ...] = (profile_for_share(pod.gpu_milli / 1000, model),)
        else:
            gis = (full,) * pod.num_gpu
        out.append((pod, gis))
    return out


def schedule(
    mapped: Sequence[tuple[Pod, tuple[Profile, ...]]],
    model: GpuModel,
    gpus: int,
    load: float,
    seed: int,
    horizon_s: float,
    spec: WorkloadSpec | None = None,
) -> list[Request]:
    """Compress the kept pods' timeline to `load` on `gpus` GPUs, start at the seed's offset, wrap."""
    if not mapped or gpus <= 0 or load <= 0:
        return []
    spec = spec or WorkloadSpec()
    work = sum(
        pod.lifetime_s * sum(p.memory_slices for p in gis) / model.memory_slices for pod, gis in mapped
    )
    length = work / (load * gpus)  # compressed length of the trace, seconds
    t0 = min(pod.creation_s for pod, _ in mapped)
    span = max(pod.creation_s for pod, _ in mapped) - t0
    # The n arrivals span n − 1 gaps; one more mean gap closes the cycle, so the last pod does not
    # land on the first when the timeline wraps around.
    n = len(mapped)
    scale = length * (n - 1) / (span * n) if span > 0 else 0.0
    start = (seed - 1) % SEED_OFFSETS / SEED_OFFSETS * length
    offsets = sorted(
        (((pod.creation_s - t0) * scale - start) % length, n) for n, (pod, _) in enumerate(mapped)
    )
    out: list[Request] = []
    cycle = 0
    while cycle * length < horizon_s:
        for offset, n in offsets:
            t = cycle * length + offset
            if t >= horizon_s:
                break
            pod, gis = mapped[n]
            vm = vm_for(f"{pod.name}.{cycle}", gis, spec.cores_per_compute, spec.ram_gb_per_compute)
            out.append(Request(vm, t, pod.lifetime_s, "trace"))
        cycle += 1
    return out


def trace_requests(
    pms: Sequence[PmSpec], load: float, seed: int, horizon_s: float, folder: str | None = None
) -> list[Request]:
    """The trace variant's requests for `seed`, on the most common GPU model of `pms`, read from
    `folder` (or the environment variable, see `trace_dir`)."""
    counts: dict[str, tuple[GpuModel, int]] = {}
    for pm in pms:
        for g in pm.gpus:
            counts[g.name] = (g, counts.get(g.name, (g, 0))[1] + 1)
    if not counts:
        raise TraceError("--variant alibaba: the data center has no GPU")
    model, gpus = max(counts.values(), key=lambda mc: (mc[1], mc[0].name))
    pods = load_pods(str(trace_dir(folder)))
    return schedule(map_pods(pods, model), model, gpus, load, seed, horizon_s)
