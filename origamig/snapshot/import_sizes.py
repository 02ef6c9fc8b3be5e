"""The sizes `origamig import` cannot read from a GPU-instance listing: each host's CPU and RAM, and the
CPU and RAM of the VM that holds each GI. They come from flags or a small TOML file (`--sizes FILE`,
docs/formats.md#import-sizes), and a size that neither gives is an error, never a default:

```toml
[hosts]                    # every imported host
cpu = 192
ram_gb = 2048

[vms]                      # the VM of every imported GI, unless its profile has an entry below
cpu = 8
ram_gb = 64

[vms.profiles."1g.10gb"]   # the VM of a 1g.10gb GI
cpu = 2
ram_gb = 16
```

A flag replaces the file's value at its own level: `--cpu`/`--ram-gb` the `[hosts]` sizes, `--vm-cpu`/
`--vm-ram-gb` the `[vms]` sizes; a `[vms.profiles."<name>"]` entry still sizes the VMs of its profile.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from origamig.errors import SnapshotError
from origamig.files import check_quantities, quantity_problem, show


@dataclass(frozen=True)
class Size:
    """CPU cores and RAM (GB) of one host or VM."""

    cpu: float
    ram_gb: float


@dataclass(frozen=True)
class SizeRules:
    """Host size, and the VM size per GI profile (`vm_profiles`) or for any profile (`vm_default`)."""

    host: Size | None = None
    vm_default: Size | None = None
    vm_profiles: Mapping[str, Size] = field(default_factory=dict)

    def vm_size(self, profile: str) -> Size | None:
        """The size of the VM holding a GI of `profile`, or None when nothing gives it."""
        return self.vm_profiles.get(profile, self.vm_default)


def size_rules(
    path: Path | None,
    cpu: float | None,
    ram_gb: float | None,
    vm_cpu: float | None,
    vm_ram_gb: float | None,
) -> SizeRules:
    """The rules of the `--sizes` file (if any) with the flags in place of its values; every bad
    value or flag given without its partner is one error line."""
    check_quantities({"--cpu": cpu, "--ram-gb": ram_gb}, positive=("--cpu", "--ram-gb"))
    check_quantities({"--vm-cpu": vm_cpu, "--vm-ram-gb": vm_ram_gb})
    rules = _read_file(path) if path is not None else SizeRules()
    host = _flag_pair(("--cpu", cpu), ("--ram-gb", ram_gb)) or rules.host
    vm_default = _flag_pair(("--vm-cpu", vm_cpu), ("--vm-ram-gb", vm_ram_gb)) or rules.vm_default
    if host is None:
        raise SnapshotError(
            "--cpu/--ram-gb: missing: a GPU-instance listing does not say how many CPU cores and GB of RAM"
            " each host has; pass --cpu N --ram-gb GB, or set them under [hosts] in a --sizes file"
        )
    return SizeRules(host, vm_default, rules.vm_profiles)


def _flag_pair(cpu: tuple[str, float | None], ram: tuple[str, float | None]) -> Size | None:
    if (cpu[1] is None) != (ram[1] is None):
        given, other = (cpu, ram) if cpu[1] is not None else (ram, cpu)
        raise SnapshotError(f"{given[0]}: given without {other[0]} (a size needs both)")
    return None if cpu[1] is None or ram[1] is None else Size(cpu[1], ram[1])


def _read_file(path: Path) -> SizeRules:
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise SnapshotError(f"{path}: cannot read ({exc.__class__.__name__}: {exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise SnapshotError(f"{path}: not valid TOML: {exc}") from None
    problems: list[str] = []
    _unknown(doc, {"hosts", "vms"}, str(path), problems)
    hosts = doc.get("hosts")
    vms = doc.get("vms", {})
    host = _size(hosts, f"{path}: hosts", problems, positive=True) if hosts is not None else None
    vm_default = None
    profiles: dict[str, Size] = {}
    if not isinstance(vms, dict):
        problems.append(f"{path}: vms: expected a table, got {show(vms)}")
    else:
        _unknown(vms, {"cpu", "ram_gb", "profiles"}, f"{path}: vms", problems)
        if "cpu" in vms or "ram_gb" in vms:
            vm_default = _size(vms, f"{path}: vms", problems, keys_only=("cpu", "ram_gb"))
        table = vms.get("profiles", {})
        if not isinstance(table, dict):
            problems.append(f"{path}: vms.profiles: expected a table, got {show(table)}")
            table = {}
        for name, raw in table.items():
            size = _size(raw, f'{path}: vms.profiles."{name}"', problems)
            if size is not None:
                profiles[name] = size
    if problems:
        raise SnapshotError(problems)
    return SizeRules(host, vm_default, profiles)


def _unknown(table: dict[str, Any], known: set[str], where: str, problems: list[str]) -> None:
    problems.extend(
        f"{where}: unknown key {show(k)} (known: {', '.join(sorted(known))})" for k in table if k not in known
    )


def _size(
    raw: Any, where: str, problems: list[str], positive: bool = False, keys_only: tuple[str, ...] = ()
) -> Size | None:
    """`{cpu, ram_gb}` as a Size; each missing or bad value is one problem."""
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected a table with cpu and ram_gb, got {show(raw)}")
        return None
    if not keys_only:
        _unknown(raw, {"cpu", "ram_gb"}, where, problems)
    values: list[float] = []
    for key in ("cpu", "ram_gb"):
        value = raw.get(key)
        if value is None:
            problems.append(f"{where}.{key}: missing")
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            problems.append(f"{where}.{key}: expected a number, got {show(value)}")
        elif (problem := quantity_problem(value)) is not None:
            problems.append(f"{where}.{key}: {problem}")
        elif positive and value == 0:
            problems.append(f"{where}.{key}: 0 must be positive")
        else:
            values.append(float(value))
    return Size(*values) if len(values) == 2 else None
