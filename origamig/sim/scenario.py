"""What one simulation run is: the data center, the workload variant (Table 9) and the window.

`SimConfig` is a frozen, picklable record, so that runs travel to worker processes and Dask workers.
`build_pms` makes the data center (the variant's hardware, a fleet file's PMs, or a snapshot's);
`requests_for` the request stream of a seed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from origamig.cluster.catalog import DEFAULT_PM_MODEL, Catalog, GpuModel, default_catalog
from origamig.cluster.records import PmSpec, cores_to_m, gb_to_mb
from origamig.errors import UserError
from origamig.sim.fleet import Fleet
from origamig.sim.trace import trace_dir, trace_requests
from origamig.sim.workload import HOUR, Request, WorkloadSpec, generate

DEFAULT_PMS = 128  # the paper's data center

A100, A30 = "A100-40GB", "A30-24GB"


@dataclass(frozen=True)
class Hardware:
    """PM kinds as (GPU models of one PM, share of the PMs), in data-center order, and PM size."""

    groups: tuple[tuple[tuple[str, ...], float], ...] = (((A100, A100), 0.75), ((A30, A30), 0.25))
    cpu: float = 80
    ram_gb: float = 512
    power_model: str = DEFAULT_PM_MODEL


@dataclass(frozen=True)
class Variant:
    """One row of Table 9: workload overrides, hardware, and where requests come from."""

    name: str
    description: str
    workload: Mapping[str, Any] = field(default_factory=dict)
    hardware: Hardware = Hardware()
    source: str = "synthetic"  # synthetic | alibaba


_A100_ONLY = Hardware(groups=(((A100, A100), 1.0),))
VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("default", "96 PMs with 2x A100, 32 with 2x A30; the paper's workload"),
        Variant("smaller-profiles", "larger profiles half as likely", {"larger_weight": 0.5}),
        Variant("larger-profiles", "larger profiles twice as likely", {"larger_weight": 2.0}),
        Variant("one-gi", "0% of VMs with two GIs", {"two_gi_share": 0.0}),
        Variant("two-gi", "100% of VMs with two GIs", {"two_gi_share": 1.0}),
        Variant("lognormal", "lognormal lifetimes, sigma 1.5, same means", {"lifetimes": "lognormal"}),
        Variant("tenants-10", "10% tenants", {"tenant_share": 0.1}),
        Variant("tenants-60", "60% tenants", {"tenant_share": 0.6}),
        Variant("a100-only", "128 PMs with 2x A100", hardware=_A100_ONLY),
        Variant("a30-only", "128 PMs with 2x A30", hardware=Hardware(groups=(((A30, A30), 1.0),))),
        Variant("small-pms", "32 cores and 256 GB per PM", hardware=Hardware(cpu=32, ram_gb=256)),
        Variant("alibaba", "Alibaba 2023 GPU trace on 2x A100 PMs", hardware=_A100_ONLY, source="alibaba"),
    )
}


@dataclass(frozen=True)
class SimConfig:
    """Everything a run needs besides the policy and the seed."""

    load: float = 0.85
    pms: int = DEFAULT_PMS
    variant: str = "default"
    warmup_s: float = 48 * HOUR
    measure_s: float = 72 * HOUR
    deterministic: bool = False
    solver: str = "highs"
    requests_file: str | None = None
    trace_dir: str | None = None
    debug_check: bool = False
    policy_options: tuple[tuple[str, Any], ...] = ()
    fleet: Fleet | None = None  # a fleet file's data center and workload (`--fleet`), scaled to `pms`
    snapshot: str | None = None  # start from this cluster state (`--from`): its PMs, VMs and queue
    migration: tuple[tuple[str, Any], ...] = ()  # the migration model's settings (`--migration`)

    @property
    def horizon_s(self) -> float:
        return self.warmup_s + self.measure_s

    def replace(self, **changes: Any) -> SimConfig:
        return dataclasses.replace(self, **changes)


def data_center_fields(
    pms: int | None,
    fleet: str | Path | None,
    snapshot: str | Path | None,
    names: tuple[str, str, str] = ("pms", "fleet", "snapshot"),
) -> dict[str, Any]:
    """The `SimConfig` fields of the data center: `pms`, plus the fleet or the snapshot to start from.
    A snapshot's PMs are the data center, so it takes neither a PM count nor a fleet; a fleet file is
    simulated at its own size unless `pms` says otherwise; else the paper's 128 PMs. `names` are how
    the caller calls the three (the CLI: `--pms`, `--fleet`, `--from`), for the errors."""
    if snapshot is not None:
        for given, name in ((pms, names[0]), (fleet, names[1])):
            if given is not None:
                what = "the snapshot's PMs are" if name == names[0] else "the snapshot defines"
                raise UserError(f"{name}: cannot be combined with {names[2]} ({what} the data center)")
        from origamig.sim.start import load_start

        return {"pms": len(load_start(str(snapshot)).pms), "snapshot": str(snapshot)}
    if fleet is not None:
        from origamig.sim.fleet import load_fleet

        chosen = load_fleet(fleet)
        return {"pms": chosen.pm_count if pms is None else pms, "fleet": chosen}
    return {"pms": DEFAULT_PMS if pms is None else pms}


def variant(name: str) -> Variant:
    try:
        return VARIANTS[name]
    except KeyError:
        raise UserError(f"--variant: unknown variant {name!r} (known: {', '.join(VARIANTS)})") from None


def validate(config: SimConfig) -> None:
    """Raise a `UserError` listing every bad field of `config`."""
    problems = []
    if not config.load > 0:
        problems.append(f"--load: {config.load} must be positive")
    if config.pms < 1:
        problems.append(f"--pms: {config.pms} must be at least 1")
    if config.warmup_s < 0:
        problems.append(f"--warmup: {config.warmup_s} s must not be negative")
    if config.measure_s <= 0:
        problems.append(f"--measure: {config.measure_s} s must be positive")
    if config.variant not in VARIANTS:
        problems.append(f"--variant: unknown variant {config.variant!r} (known: {', '.join(VARIANTS)})")
    if config.requests_file and not Path(config.requests_file).is_file():
        problems.append(f"--requests: {config.requests_file}: no such file")
    problems += _hardware_conflicts(config)
    if problems:
        raise UserError(problems)
    if config.snapshot:
        from origamig.sim.start import load_start

        load_start(config.snapshot)  # raises the snapshot's problems, one line each
    if variant(config.variant).source == "alibaba" and not config.requests_file:
        trace_dir(config.trace_dir)  # raises the one-line error when the trace is absent


def _hardware_conflicts(config: SimConfig) -> list[str]:
    """A fleet, a snapshot and a hardware variant each define the data center: at most one may."""
    chosen = VARIANTS.get(config.variant)
    hardware_variant = chosen is not None and chosen.hardware != Hardware() and chosen.source == "synthetic"
    problems = []
    if config.fleet is not None and config.snapshot:
        problems.append("--fleet: cannot be combined with --from (the snapshot defines the data center)")
    if hardware_variant and (config.fleet is not None or config.snapshot):
        option = "--fleet" if config.fleet is not None else "--from"
        problems.append(f"--variant: {config.variant} sets the hardware; it cannot be combined with {option}")
    return problems


def build_pms(config: SimConfig, catalog: Catalog | None = None) -> list[PmSpec]:
    """The PMs of the run: a snapshot's, a fleet's (scaled to `config.pms`), or each hardware group
    of the variant with its share of `config.pms` (rounded), in order."""
    if config.snapshot:
        from origamig.sim.start import start_pms

        return start_pms(config.snapshot)
    if config.fleet is not None:
        return config.fleet.build_pms(config.pms, catalog)
    cat = catalog or default_catalog()
    hw = variant(config.variant).hardware
    counts = [round(share * config.pms) for _, share in hw.groups]
    counts[-1] = config.pms - sum(counts[:-1])
    pms: list[PmSpec] = []
    for (gpus, _), count in zip(hw.groups, counts, strict=True):
        models = tuple(cat.gpu(g) for g in gpus)
        for _ in range(count):
            pms.append(
                PmSpec(f"pm{len(pms)}", cores_to_m(hw.cpu), gb_to_mb(hw.ram_gb), models, hw.power_model)
            )
    return pms


def gpu_inventory(pms: list[PmSpec]) -> dict[str, tuple[GpuModel, int]]:
    """GPU model name → (model, number of such GPUs) over `pms`."""
    out: dict[str, tuple[GpuModel, int]] = {}
    for pm in pms:
        for g in pm.gpus:
            out[g.name] = (g, out.get(g.name, (g, 0))[1] + 1)
    return out


def workload_spec(config: SimConfig) -> WorkloadSpec:
    """The paper's workload at the run's load, with the fleet's knobs, then the variant's."""
    spec = WorkloadSpec(load=config.load)
    if config.fleet is not None:
        spec = config.fleet.apply(spec)
    return dataclasses.replace(spec, **dict(variant(config.variant).workload))


def requests_for(
    config: SimConfig, seed: int, pms: list[PmSpec], catalog: Catalog | None = None
) -> list[Request]:
    """The request stream of `seed`: a user's file, the Alibaba trace, or the synthetic workload."""
    cat = catalog or default_catalog()
    if config.requests_file:
        from origamig.sim.requests_file import read_requests

        return [r for r in read_requests(Path(config.requests_file), cat) if r.arrival_s < config.horizon_s]
    if variant(config.variant).source == "alibaba":
        return trace_requests(pms, config.load, seed, config.horizon_s, config.trace_dir)
    return generate(gpu_inventory(pms), workload_spec(config), seed, config.horizon_s)
