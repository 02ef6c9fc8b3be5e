"""MIG-backed NVIDIA vGPU types (C-series) as Kubernetes resources (docs/service.md#vgpu-types).

A KubeVirt virt-launcher pod asks for the vGPU type that `permittedHostDevices` (or NVIDIA's device
plugin) exposes — `nvidia.com/NVIDIA_H100-3-40C`, `nvidia.com/GRID_A100-3-20C` — not for
`nvidia.com/mig-<profile>`. Each such type is one GI of one profile of one GPU model; the table
(`models/vgpu/nvidia-c-series.toml`, with its sources) says which, and how a vGPU of each model reaches
a VM (`mdev` or `sr-iov`: what KubeVirt can live-migrate, `serve/platform.py`).
"""

from __future__ import annotations

import functools
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from origamig.cluster.catalog import Catalog, default_catalog, models_dir
from origamig.errors import CatalogError

VGPU_FILE = Path("vgpu") / "nvidia-c-series.toml"
RESOURCE_DOMAIN = "nvidia.com/"
DEVICES = ("mdev", "sr-iov")  # how a vGPU reaches a VM: a mediated device, or an SR-IOV function


@dataclass(frozen=True)
class VgpuType:
    """One MIG-backed vGPU type: its name as NVIDIA's tables write it, the GI profile behind it, the
    GPU model of the catalog and the board it is listed for."""

    name: str  # e.g. "H100-3-40C"
    gpu_model: str  # e.g. "H100-80GB"
    profile: str  # e.g. "3g.40gb"
    board: str


@dataclass(frozen=True)
class VgpuTable:
    """Every known type, the resource-name prefixes, and each GPU model's kind of vGPU device."""

    types: Mapping[str, VgpuType]  # by type name
    prefixes: tuple[str, ...]  # "NVIDIA", "GRID": `nvidia.com/<prefix>_<type>`
    devices: Mapping[str, str]  # GPU model → "mdev" | "sr-iov"

    def of_resource(self, key: str) -> VgpuType | None:
        """The vGPU type a container resource names (`nvidia.com/NVIDIA_H100-3-40C`), or None."""
        if not key.startswith(RESOURCE_DOMAIN):
            return None
        prefix, sep, name = key.removeprefix(RESOURCE_DOMAIN).partition("_")
        if not sep or prefix not in self.prefixes:
            return None
        return self.types.get(name)

    def resource_names(self, gpu_model: str) -> list[str]:
        """Every resource name of the types of `gpu_model`, each prefix in turn."""
        names = [t.name for t in self.types.values() if t.gpu_model == gpu_model]
        return [f"{RESOURCE_DOMAIN}{prefix}_{name}" for prefix in self.prefixes for name in names]

    def models_with(self, device: str) -> frozenset[str]:
        """The GPU models whose vGPUs reach a VM as `device`."""
        return frozenset(m for m, d in self.devices.items() if d == device)


def read_vgpu_table(raw: Mapping[str, Any], where: str, catalog: Catalog) -> VgpuTable:
    """The table of a parsed file, every type checked against the catalog: its GPU model exists and
    offers its profile; `CatalogError` names the entry otherwise."""
    prefixes = raw.get("prefixes")
    if not isinstance(prefixes, list) or not prefixes or not all(isinstance(p, str) for p in prefixes):
        raise CatalogError(f"{where}.prefixes: expected a list of names")
    devices = raw.get("devices")
    if not isinstance(devices, dict):
        raise CatalogError(f"{where}.devices: expected a table of GPU model = device")
    for model, device in devices.items():
        if device not in DEVICES:
            raise CatalogError(f"{where}.devices.{model}: {device!r} is not one of {', '.join(DEVICES)}")
        catalog.gpu(model)
    types: dict[str, VgpuType] = {}
    for n, board in enumerate(raw.get("boards", [])):
        at = f"{where}.boards[{n}]"
        model_name, table = board.get("gpu_model"), board.get("types")
        if not isinstance(model_name, str) or not isinstance(table, dict):
            raise CatalogError(f"{at}: needs gpu_model and a table of types")
        model = catalog.gpu(model_name)
        for profile, name in table.items():
            if not model.has_profile(profile):
                raise CatalogError(f"{at}.types.{profile}: {model_name} has no GI profile {profile!r}")
            if name in types:
                raise CatalogError(f"{at}.types.{profile}: type {name!r} appears twice")
            types[name] = VgpuType(name, model_name, profile, str(board.get("board", "")))
        if model_name not in devices:
            raise CatalogError(f"{at}.gpu_model: {model_name} has no entry in devices")
    return VgpuTable(types, tuple(prefixes), dict(devices))


@functools.cache
def vgpu_table() -> VgpuTable:
    """The shipped table, read once per process."""
    path = models_dir() / VGPU_FILE
    try:
        raw = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CatalogError(f"{path}: cannot be read ({exc})") from None
    return read_vgpu_table(raw, str(path), default_catalog())


def fleet_resource_names(models: Iterable[str]) -> list[str]:
    """The vGPU resource names of the GPU models `models`, in their order."""
    table = vgpu_table()
    return [name for model in dict.fromkeys(models) for name in table.resource_names(model)]
