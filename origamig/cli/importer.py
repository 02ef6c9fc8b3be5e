"""`origamig import`: snapshot PMs and their running GIs from `nvidia-smi mig -lgi` or mig-parted."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from origamig.cluster.catalog import default_catalog
from origamig.errors import SnapshotError
from origamig.snapshot.document import json_text, parse_snapshot, read_json, write_json_atomic
from origamig.snapshot.import_sizes import size_rules
from origamig.snapshot.importer import (
    HostState,
    ImportOptions,
    build_entries,
    merge,
    parse_checkpoint,
    parse_lgi,
)


def _pairs(values: list[str], flag: str) -> list[tuple[str, Path]]:
    out: list[tuple[str, Path]] = []
    problems: list[str] = []
    for value in values:
        host, sep, path = value.partition("=")
        if not sep or not host or not path:
            problems.append(f"{flag} {value!r}: expected HOST=FILE (e.g. pm0=pm0-lgi.txt)")
        else:
            out.append((host, Path(path)))
    if problems:
        raise SnapshotError(problems)
    return out


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SnapshotError(f"{path}: cannot read ({exc.__class__.__name__}: {exc})") from None


def _gpu_counts(values: list[str], hosts: list[str]) -> tuple[int | None, dict[str, int]]:
    """`--gpus N` (every -lgi host) and `--gpus HOST=N` (that host) → (default, per host)."""
    default: int | None = None
    per_host: dict[str, int] = {}
    problems: list[str] = []
    for value in values:
        host, sep, count = value.rpartition("=") if "=" in value else ("", "", value)
        try:
            n = int(count)
        except ValueError:
            n = 0
        if n < 1 or (sep and not host):
            problems.append(f"--gpus {value!r}: expected a GPU count N >= 1 or HOST=N")
        elif sep and host not in hosts:
            problems.append(f"--gpus {value!r}: {host!r} is not a host given with --host or --checkpoint")
        elif sep:
            per_host[host] = n
        elif default is not None and default != n:
            problems.append(f"--gpus {value!r}: a count for every host was already given ({default})")
        else:
            default = n
    if problems:
        raise SnapshotError(problems)
    return default, per_host


def import_(
    host: Annotated[
        list[str] | None,
        typer.Option("--host", help="HOST=FILE: the output of `nvidia-smi mig -lgi` on HOST (repeatable)."),
    ] = None,
    checkpoint: Annotated[
        list[str] | None,
        typer.Option(
            "--checkpoint", help="HOST=FILE: a `nvidia-mig-parted checkpoint` file of HOST (repeatable)."
        ),
    ] = None,
    cpu: Annotated[
        float | None,
        typer.Option("--cpu", help="CPU cores of each imported host (required, or [hosts] in --sizes)."),
    ] = None,
    ram_gb: Annotated[
        float | None,
        typer.Option("--ram-gb", help="RAM (GB) of each imported host (required, or [hosts] in --sizes)."),
    ] = None,
    gpu_model: Annotated[
        str | None,
        typer.Option("--gpu-model", help="GPU model of the hosts (default: inferred from the GIs)."),
    ] = None,
    gpus: Annotated[
        list[str] | None,
        typer.Option(
            "--gpus",
            help="GPUs per host: N for every -lgi host, or HOST=N (repeatable). Required for -lgi input,"
            " which lists only GPUs that have GPU instances; a checkpoint lists its GPUs (a count given"
            " for it must agree).",
        ),
    ] = None,
    vm_cpu: Annotated[
        float | None,
        typer.Option("--vm-cpu", help="CPU cores of the VM that holds each imported GI (or --sizes)."),
    ] = None,
    vm_ram_gb: Annotated[
        float | None,
        typer.Option("--vm-ram-gb", help="RAM (GB) of the VM that holds each imported GI (or --sizes)."),
    ] = None,
    sizes: Annotated[
        Path | None,
        typer.Option(
            "--sizes",
            help="TOML file with the hosts' CPU/RAM ([hosts]) and the VMs' per GI profile"
            ' ([vms], [vms.profiles."1g.10gb"]); docs/formats.md#import-sizes. Flags override it.',
        ),
    ] = None,
    base: Annotated[
        Path | None, typer.Option("--merge", help="Append the imported PMs and VMs to this snapshot.")
    ] = None,
    refresh: Annotated[
        list[str] | None,
        typer.Option(
            "--refresh",
            help="HOST: replace HOST's entry and the VMs running on it in the --merge snapshot with the"
            " imported state (repeatable).",
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Write the snapshot here (default: stdout).")
    ] = None,
) -> None:
    """Build snapshot PMs from real MIG state: every GI found becomes a running VM that holds it.

    The listings do not say how much CPU and RAM the hosts and the VMs have: give them (--cpu,
    --ram-gb, --vm-cpu, --vm-ram-gb, or a --sizes file with a size per GI profile). Input that is not
    `nvidia-smi mig -lgi` output (or a mig-parted checkpoint) is refused, naming the file and line;
    nothing is written on any error.
    """
    lgi_hosts = _pairs(host or [], "--host")
    cp_hosts = _pairs(checkpoint or [], "--checkpoint")
    if not lgi_hosts and not cp_hosts:
        raise SnapshotError("import: give at least one --host HOST=FILE or --checkpoint HOST=FILE")
    if refresh and base is None:
        raise SnapshotError("--refresh: needs --merge SNAPSHOT (the snapshot whose hosts it replaces)")
    default_gpus, host_gpus = _gpu_counts(gpus or [], [h for h, _ in lgi_hosts + cp_hosts])
    states: list[HostState] = [
        HostState(h, tuple(parse_lgi(_read_text(p), str(p))), host_gpus.get(h, default_gpus))
        for h, p in lgi_hosts
    ]
    for h, p in cp_hosts:
        found, devices = parse_checkpoint(read_json(p), str(p))
        given = host_gpus.get(h, default_gpus)
        if given is not None and given != devices:
            raise SnapshotError(f"--gpus: {h} has {given} GPUs, but its checkpoint {p} lists {devices}")
        if devices == 0:
            raise SnapshotError(f"{p}: MigState.Devices: the checkpoint lists no GPU")
        states.append(HostState(h, tuple(found), devices))
    rules = size_rules(sizes, cpu, ram_gb, vm_cpu, vm_ram_gb)
    pms, vms = build_entries(states, default_catalog(), ImportOptions(rules, gpu_model))
    doc = merge(read_json(base) if base is not None else None, pms, vms, refresh or ())
    parse_snapshot(doc)  # the result must be a valid snapshot (duplicate ids with --merge, capacities, ...)
    if out is None:
        typer.echo(json_text(doc), nl=False)
    else:
        write_json_atomic(out, doc)
        typer.echo(f"wrote {out}: {len(pms)} hosts, {len(vms)} running GIs", err=True)


def register(app: typer.Typer) -> None:
    app.command("import")(import_)
