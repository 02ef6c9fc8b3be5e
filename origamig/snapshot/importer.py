"""Real MIG state in: snapshot PM entries from `nvidia-smi mig -lgi` text or a mig-parted checkpoint.

Each host becomes one PM (`id`, `cpu`, `ram_gb`, `gpus`); each GPU instance found on it becomes a
running VM that holds that one GI at its start slice, named `<host>/gpu<g>/gi<GI id>` (or
`<host>/gpu<g>/start<z>` for a checkpoint, which has no GI ids). The listings say nothing about CPU
and RAM: the hosts' and the VMs' sizes come from `import_sizes` (flags or a `--sizes` file, per GI
profile), and a size nothing gives is an error, never a default.

`nvidia-smi mig -lgi` rows read `GPU  MIG <name>  <profile ID>  <GI ID>  <start>:<size>`; the GPU
model is given (`gpu_model`) or inferred as the only catalog model on which every row's name,
profile ID, size and start are valid (A100-80GB and H100-80GB print identical rows: pass the
model). `+me`, `+gfx`, `-me` and `+me.all` variants are imported as their base profile (same
placements). A mig-parted checkpoint (`nvidia-mig-parted checkpoint -f FILE`) stores, per MIG GPU,
its GI profiles as NVML profile enums (`GPU_INSTANCE_PROFILE_*`, which name the compute slices)
with `Placement.Start/Size`; the profile is the model's one with those compute and memory slices.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from origamig.cluster.catalog import Catalog, GpuModel, Profile
from origamig.errors import SnapshotError
from origamig.snapshot.document import SNAPSHOT_VERSION, show
from origamig.snapshot.import_sizes import SizeRules

_ROW = re.compile(r"^\|?\s*(\d+)\s+MIG\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s*:\s*(\d+)\s*\|?\s*$")
_VARIANT = re.compile(r"(\+me\.all|\+me|\+gfx|-me)$")

# NVML GPU_INSTANCE_PROFILE_* enum → compute slices (go-nvml nvml.h; the enum names count compute slices)
NVML_PROFILE_COMPUTE = {
    0: 1,
    1: 2,
    2: 3,
    3: 4,
    4: 7,
    5: 8,
    6: 6,
    7: 1,
    8: 2,
    9: 1,
    10: 1,
    11: 2,
    12: 4,
    13: 1,
}
NVML_PROFILE_COMPUTE |= {14: 2, 15: 1, 16: 2, 17: 3}


@dataclass(frozen=True)
class FoundGi:
    """One GPU instance as a tool printed it."""

    where: str  # file:line or file path for messages
    gpu: int
    start: int
    size: int
    name: str | None = None  # nvidia-smi profile name (None in a checkpoint)
    smi_id: int | None = None  # nvidia-smi profile ID (-lgi)
    nvml_profile: int | None = None  # NVML profile enum (checkpoint)
    instance: int | None = None  # GI ID (-lgi)


@dataclass(frozen=True)
class HostState:
    """The GIs of one host and how many GPUs it has (None: unknown, which `build_entries` refuses:
    `-lgi` lists only the GPUs that have GPU instances, so the count is never guessed)."""

    host: str
    gis: tuple[FoundGi, ...]
    gpus: int | None = None


_BORDER = re.compile(r"^\+-[-+]*\+$")  # +-----+
_RULE = re.compile(r"^\|=+\|$")  # |=====|
_HEADERS = (
    re.compile(r"^gpu instances:$"),
    re.compile(r"^gpu\s+name\s+profile\s+instance\s+placement$"),
    re.compile(r"^id\s+id\s+start:size$"),
)
_NONE_FOUND = re.compile(r"^no gpu instances found\b", re.IGNORECASE)
_WHAT = "not `nvidia-smi mig -lgi` output"


def _shown(line: str) -> str:
    text = line.strip()
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _refusal(source: str, n: int, line: str) -> str:
    """Why a line that belongs to no `-lgi` listing is refused (a few failures nvidia-smi prints)."""
    low = line.lower()
    if "nvidia-smi has failed" in low or "couldn't communicate with the nvidia driver" in low:
        return f"{source}:{n}: nvidia-smi failed on this host, no MIG state to import: {_shown(line)}"
    if "no mig-enabled devices" in low or "not supported" in low:
        return f"{source}:{n}: the host reports no MIG-enabled GPU: {_shown(line)}"
    return f"{source}:{n}: {_WHAT} (expected its GPU-instance table): {_shown(line)}"


def parse_lgi(text: str, source: str) -> list[FoundGi]:
    """The rows of `nvidia-smi mig -lgi` output; `SnapshotError` naming file:line for anything else.

    Accepted: the table (borders, the three header lines, the `====` rule, then rows, closed by a
    border) or the `No GPU instances found` message, with blank lines and the echoed command
    (`$ nvidia-smi mig -lgi`) around it. The first line that is neither is refused, as is an empty
    file or a table cut off before its closing border.
    """
    out: list[FoundGi] = []
    seen: dict[tuple[int, int], int] = {}  # (GPU, GI ID) → line
    in_rows = none_found = has_header = False
    last = ""
    for n, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or (stripped[0] in "$#" and "nvidia-smi" in stripped):
            continue
        last = stripped
        inner = " ".join(stripped.strip("|").split()).lower()
        if _BORDER.match(stripped):
            continue
        if _NONE_FOUND.match(stripped) and not has_header:
            none_found = True
            continue
        if _RULE.match(stripped) and has_header and not in_rows:
            in_rows = True
            continue
        if stripped.startswith("|") and any(h.match(inner) for h in _HEADERS) and not in_rows:
            has_header = True
            continue
        m = _ROW.match(line)
        if m and in_rows:
            gpu, name, pid, gid, start, size = m.groups()
            key = (int(gpu), int(gid))
            if key in seen:
                raise SnapshotError(
                    f"{source}:{n}: GI ID {gid} of GPU {gpu} is also listed on line {seen[key]}"
                )
            seen[key] = n
            out.append(
                FoundGi(f"{source}:{n}", int(gpu), int(start), int(size), name, int(pid), None, int(gid))
            )
            continue
        if in_rows and re.match(r"^\|\s*\d+\s+MIG\b", stripped):
            raise SnapshotError(f"{source}:{n}: cannot read this GPU-instance row: {_shown(line)}")
        raise SnapshotError(_refusal(source, n, line))
    if not last:
        raise SnapshotError(f"{source}: empty: {_WHAT}")
    if none_found and has_header:
        raise SnapshotError(f"{source}: {_WHAT}: a GPU-instance table and 'No GPU instances found' together")
    if not none_found and not in_rows:
        raise SnapshotError(f"{source}: {_WHAT}: no GPU-instance table (header and ==== rule) found")
    if in_rows and not _BORDER.match(last):
        raise SnapshotError(f"{source}: the GPU-instance table ends without its closing border (cut off?)")
    return out


def parse_checkpoint(data: Any, source: str) -> tuple[list[FoundGi], int]:
    """GIs of a mig-parted checkpoint and the number of MIG GPUs it lists (keys: any letter case)."""
    state = _get(data, "MigState", source)
    devices = _get(state, "Devices", f"{source}: MigState") or []
    if not isinstance(devices, list):
        raise SnapshotError(f"{source}: MigState.Devices: expected a list, got {show(devices)}")
    out: list[FoundGi] = []
    for g, dev in enumerate(devices):
        where = f"{source}: MigState.Devices[{g}]"
        for n, gi in enumerate(_get(dev, "GpuInstances", where) or []):
            gwhere = f"{where}.GpuInstances[{n}]"
            pid = _get(gi, "ProfileID", gwhere)
            placement = _get(gi, "Placement", gwhere)
            start, size = _get(placement, "Start", gwhere), _get(placement, "Size", gwhere)
            for label, value in (("ProfileID", pid), ("Placement.Start", start), ("Placement.Size", size)):
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise SnapshotError(
                        f"{gwhere}.{label}: expected a non-negative integer, got {show(value)}"
                    )
            out.append(FoundGi(gwhere, g, start, size, nvml_profile=pid))
    return out, len(devices)


def _get(obj: Any, key: str, where: str) -> Any:
    if not isinstance(obj, dict):
        raise SnapshotError(f"{where}: expected an object, got {show(obj)}")
    for k, v in obj.items():
        if k.lower() == key.lower():
            return v
    raise SnapshotError(f"{where}.{key}: missing")


def profile_for(model: GpuModel, gi: FoundGi) -> tuple[Profile | None, str]:
    """The profile of `model` that `gi` is, or None and why not."""
    if gi.name is not None:
        base = _VARIANT.sub("", gi.name)
        name = gi.name if model.has_profile(gi.name) else base
        if not model.has_profile(name):
            return None, f"{gi.name} is not a profile of {model.name}"
        prof = model.profile(name)
        same_name = name == gi.name and prof.nvidia_smi_id is not None
        if same_name and gi.smi_id is not None and gi.smi_id != prof.nvidia_smi_id:
            return None, f"profile ID {gi.smi_id} is not {gi.name}'s ID {prof.nvidia_smi_id} on {model.name}"
    else:
        compute = NVML_PROFILE_COMPUTE.get(gi.nvml_profile or 0) if gi.nvml_profile is not None else None
        match = [p for p in model.profiles if p.compute_slices == compute and p.memory_slices == gi.size]
        if not match:
            return (
                None,
                f"NVML profile {gi.nvml_profile} of size {gi.size} matches no profile of {model.name}",
            )
        prof = match[0]
    if gi.size != prof.memory_slices:
        return None, f"{prof.name} occupies {prof.memory_slices} slices on {model.name}, not {gi.size}"
    if gi.start not in prof.starts:
        allowed = ", ".join(map(str, prof.starts))
        return (
            None,
            f"{gi.start} is not a permitted start for {prof.name} on {model.name} (allowed: {allowed})",
        )
    return prof, ""


def choose_model(gis: Sequence[FoundGi], catalog: Catalog, name: str | None, host: str) -> GpuModel:
    """The given model (checked against every GI), or the only catalog model every GI fits."""
    if name is not None:
        model = catalog.gpu(name)
        problems = [
            f"{gi.where}: {why}" for gi in gis for prof, why in [profile_for(model, gi)] if prof is None
        ]
        if problems:
            raise SnapshotError(problems)
        return model
    fits = [m for m in catalog.gpus.values() if all(profile_for(m, gi)[0] is not None for gi in gis)]
    if not gis:
        raise SnapshotError(f"{host}: no GPU instances to infer the GPU model from; pass --gpu-model")
    if len(fits) == 1:
        return fits[0]
    if not fits:
        raise SnapshotError(f"{host}: no catalog GPU model fits every GI listed; pass --gpu-model to see why")
    names = ", ".join(sorted(m.name for m in fits))
    raise SnapshotError(f"{host}: the GIs fit several GPU models ({names}); pass --gpu-model")


@dataclass(frozen=True)
class ImportOptions:
    """The sizes the listings cannot tell (`import_sizes.size_rules`) and the hosts' GPU model."""

    sizes: SizeRules
    gpu_model: str | None = None


def build_entries(
    hosts: Iterable[HostState], catalog: Catalog, opts: ImportOptions
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Snapshot `pms` and `vms` entries for the hosts; overlapping GIs are reported by source line."""
    pms: list[dict[str, Any]] = []
    vms: list[dict[str, Any]] = []
    problems: list[str] = []
    unsized: dict[str, list[str]] = {}  # profile -> the GIs whose VM has no size
    host_size = opts.sizes.host
    if host_size is None:
        raise SnapshotError("--cpu/--ram-gb: missing (the hosts' CPU cores and RAM)")
    for host in hosts:
        model = choose_model(host.gis, catalog, opts.gpu_model, host.host)
        count = host.gpus
        if count is None:
            problems.append(
                f"{host.host}: GPU count unknown (`nvidia-smi mig -lgi` lists only GPUs with GPU instances);"
                f" pass --gpus N or --gpus {host.host}=N"
            )
            continue
        if any(gi.gpu >= count for gi in host.gis):
            problems.append(
                f"{host.host}: a GI is on GPU {max(gi.gpu for gi in host.gis)} but the host has {count} GPUs"
            )
            continue
        pms.append(
            {
                "id": host.host,
                "cpu": _plain(host_size.cpu),
                "ram_gb": _plain(host_size.ram_gb),
                "gpus": [model.name] * count,
            }
        )
        used: dict[tuple[int, int], FoundGi] = {}
        for gi in sorted(host.gis, key=lambda g: (g.gpu, g.start)):
            prof, _ = profile_for(model, gi)
            assert prof is not None  # choose_model checked every GI against the model
            clash = next(
                (used[(gi.gpu, u)] for u in range(gi.start, gi.start + gi.size) if (gi.gpu, u) in used), None
            )
            if clash is not None:
                problems.append(
                    f"{gi.where}: {prof.name} at {gi.start}:{gi.size} overlaps the GI of {clash.where}"
                )
                continue
            used.update({(gi.gpu, u): gi for u in range(gi.start, gi.start + gi.size)})
            tag = f"gi{gi.instance}" if gi.instance is not None else f"start{gi.start}"
            vm_id = f"{host.host}/gpu{gi.gpu}/{tag}"
            size = opts.sizes.vm_size(prof.name)
            if size is None:
                unsized.setdefault(prof.name, []).append(vm_id)
                continue
            vms.append(
                {
                    "id": vm_id,
                    "cpu": _plain(size.cpu),
                    "ram_gb": _plain(size.ram_gb),
                    "gis": [prof.name],
                    "gpu_model": model.name,
                    "placement": {"pm": host.host, "gis": [{"gpu": gi.gpu, "start": gi.start}]},
                }
            )
    for name, ids in unsized.items():
        more = f" and {len(ids) - 1} more" if len(ids) > 1 else ""
        problems.append(
            f"VM size of {name} GIs ({ids[0]}{more}): missing: a GPU-instance listing does not say"
            " how many CPU cores and GB of RAM their VMs have; pass --vm-cpu N --vm-ram-gb GB, or set"
            f' [vms.profiles."{name}"] (or [vms]) in a --sizes file'
        )
    if problems:
        raise SnapshotError(problems)
    return pms, vms


def _plain(x: float) -> float | int:
    """80.0 → 80 (snapshots read as written by hand)."""
    return int(x) if float(x).is_integer() else x


def merge(
    base: Mapping[str, Any] | None,
    pms: list[dict[str, Any]],
    vms: list[dict[str, Any]],
    refresh: Sequence[str] = (),
) -> dict[str, Any]:
    """A snapshot document: `base` (if any) with the imported PMs and VMs added.

    A host of `refresh` replaces its entry in `base` (its other fields, such as `weight`, are kept)
    and the VMs that ran on it there; every other imported host must be new to `base`.
    """
    if base is not None and not isinstance(base, Mapping):
        raise SnapshotError(f"--merge: expected a snapshot object, got {show(base)}")
    doc: dict[str, Any] = dict(base) if base is not None else {"version": SNAPSHOT_VERSION}
    old: dict[str, list[Any]] = {}
    for key in ("pms", "vms"):
        old[key] = doc.get(key, [])
        if not isinstance(old[key], list):
            raise SnapshotError(f"--merge: {key}: expected a list, got {show(old[key])}")
    there = {p.get("id"): n for n, p in enumerate(old["pms"]) if isinstance(p, dict)}
    imported = {p["id"] for p in pms}
    problems = [
        f"--refresh {h}: {h} is not a host this command imports" for h in refresh if h not in imported
    ]
    problems += [f"--refresh {h}: {h} is not in the --merge snapshot" for h in refresh if h not in there]
    problems += [
        f"--merge: host {h} is already in the snapshot; pass --refresh {h} to replace its state"
        for h in imported
        if h in there and h not in refresh
    ]
    if problems:
        raise SnapshotError(problems)
    new_pms = list(old["pms"])
    for entry in pms:
        if entry["id"] in there:
            n = there[entry["id"]]
            new_pms[n] = {k: v for k, v in new_pms[n].items() if k != "powered_off"} | entry
        else:
            new_pms.append(entry)
    gone = set(refresh)
    kept_vms = [v for v in old["vms"] if _placed_on(v) not in gone]
    doc["pms"], doc["vms"] = new_pms, [*kept_vms, *vms]
    return doc


def _placed_on(vm: Any) -> Any:
    """The PM id a VM entry of a snapshot is placed on (None for a pending or malformed one)."""
    pl = vm.get("placement") if isinstance(vm, dict) else None
    return pl.get("pm") if isinstance(pl, dict) else None
