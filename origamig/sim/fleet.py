"""Fleet files: the data center and workload of a what-if simulation, as an operator writes them (TOML).

    name = "h100-8x"                  # optional (default: the file name without .toml)
    description = "..."               # optional

    [[pm]]                            # one table per PM kind, in data-center order
    count = 12                        # how many PMs of this kind
    gpus = ["H100-80GB", "H100-80GB"] # GPU models of one PM (catalog names; [] for a PM without GPUs)
    cpu = 192                         # cores
    ram_gb = 2048
    power = "DL380-Gen10Plus-2x8380"  # optional: a power curve of models/pms/ (default: that one)
    label = "hgx-h100"                # optional: a name for this kind in reports

    [workload]                        # optional: the synthetic workload's knobs (docs/simulator.md#workload)
    tenant_share = 0.3
    cores_per_compute = 3

    [workload.profiles."H100-80GB"]   # optional: the profile mix of one GPU model, as weights
    "1g.10gb" = 2                     # (unlisted profiles of that model are not requested)
    "3g.40gb" = 1

    [meta]                            # optional, ignored: room for other tools' own fields

Reading checks everything and raises one `FleetError` listing every problem, each naming the file, the
field and the value (`fleets/x.toml: pm[1].gpus[0]: unknown GPU model 'H100' (known: ...)`). Unknown
keys are errors (a typo would otherwise be ignored silently), except under `[meta]`.

A `Fleet` is a frozen, picklable record: it travels inside `SimConfig` to worker processes and Dask
workers, and `build_pms` turns it into PMs (`pm0, pm1, ...` in data-center order).
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from origamig.cluster.catalog import DEFAULT_PM_MODEL, Catalog, default_catalog
from origamig.cluster.records import PmSpec, cores_to_m, gb_to_mb
from origamig.errors import UserError
from origamig.sim.workload import WorkloadSpec

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
TOP_KEYS = ("name", "description", "pm", "workload", "meta")
PM_KEYS = ("count", "gpus", "cpu", "ram_gb", "power", "label")
# The workload knobs a fleet may set, with their check: (kind, lowest, highest, lowest allowed itself).
WORKLOAD_KEYS: dict[str, tuple[str, float, float, bool]] = {
    "tenant_share": ("number", 0.0, 1.0, True),
    "job_mean_h": ("number", 0.0, float("inf"), False),
    "tenant_mean_h": ("number", 0.0, float("inf"), False),
    "two_gi_share": ("number", 0.0, 1.0, True),
    "lifetimes": ("choice", 0, 0, True),
    "lognormal_sigma": ("number", 0.0, float("inf"), False),
    "larger_weight": ("number", 0.0, float("inf"), False),
    "cores_per_compute": ("number", 0.0, float("inf"), True),
    "ram_gb_per_compute": ("number", 0.0, float("inf"), True),
}
LIFETIMES = ("exponential", "lognormal")

ProfileWeights = tuple[tuple[str, tuple[tuple[str, float], ...]], ...]


class FleetError(UserError):
    """A malformed fleet file: one line per problem, naming the file, the field and the value."""


@dataclass(frozen=True)
class PmKind:
    """One kind of PM of a fleet: how many, their GPU models, cores, RAM and power curve."""

    count: int
    gpus: tuple[str, ...]
    cpu: float
    ram_gb: float
    power: str = DEFAULT_PM_MODEL
    label: str = ""

    def describe(self) -> str:
        if self.gpus:
            models = list(dict.fromkeys(self.gpus))
            gpus = " + ".join(f"{self.gpus.count(m)}× {m}" for m in models)
        else:
            gpus = "no GPU"
        label = f"{self.label}: " if self.label else ""
        return f"{label}{self.count} PMs with {gpus}, {self.cpu:g} cores, {self.ram_gb:g} GB"


@dataclass(frozen=True)
class Fleet:
    """A data center (PM kinds in order) and the workload knobs that go with it."""

    name: str
    kinds: tuple[PmKind, ...]
    workload: tuple[tuple[str, Any], ...] = ()  # WorkloadSpec overrides, sorted by key
    profile_weights: ProfileWeights = ()  # GPU model → ((profile, weight), ...)
    description: str = ""

    @property
    def pm_count(self) -> int:
        return sum(k.count for k in self.kinds)

    @property
    def gpus_per_pm(self) -> int:
        """The most GPUs any PM of the fleet carries."""
        return max((len(k.gpus) for k in self.kinds), default=0)

    def counts(self, total: int | None = None) -> list[int]:
        """PMs per kind for a data center of `total` PMs (default: the fleet's own counts).

        Each kind gets its share of `total`, rounded, and the last kind the rest (the rule the
        default data center uses, so the paper's fleet file builds exactly its PMs); a kind that
        rounding would push below zero gets none, taken from the largest.
        """
        own = [k.count for k in self.kinds]
        n = sum(own)
        if total is None or total == n:
            return own
        counts = [round(c / n * total) for c in own[:-1]]
        counts.append(total - sum(counts))
        while counts[-1] < 0:
            big = max(range(len(counts) - 1), key=lambda i: (counts[i], -i))
            counts[big] -= 1
            counts[-1] += 1
        return counts

    def build_pms(self, total: int | None = None, catalog: Catalog | None = None) -> list[PmSpec]:
        """The PMs `pm0, pm1, ...` of the fleet (scaled to `total` PMs when given), in kind order."""
        cat = catalog or default_catalog()
        pms: list[PmSpec] = []
        for kind, count in zip(self.kinds, self.counts(total), strict=True):
            models = tuple(cat.gpu(g) for g in kind.gpus)
            for _ in range(count):
                pm_id = f"pm{len(pms)}"
                pms.append(PmSpec(pm_id, cores_to_m(kind.cpu), gb_to_mb(kind.ram_gb), models, kind.power))
        return pms

    def apply(self, spec: WorkloadSpec) -> WorkloadSpec:
        """`spec` with this fleet's workload knobs and profile mix."""
        return dataclasses.replace(spec, **dict(self.workload), profile_weights=self.profile_weights)

    def describe(self) -> str:
        kinds = "; ".join(k.describe() for k in self.kinds)
        return f"fleet {self.name}: {kinds}"


# --- reading -------------------------------------------------------------------------------------
def load_fleet(path: str | Path, catalog: Catalog | None = None, option: str = "--fleet") -> Fleet:
    """Read and validate a fleet file; `FleetError` lists every problem."""
    p = Path(path)
    if not p.is_file():
        raise FleetError(f"{option}: {p}: no such file")
    try:
        data = tomllib.loads(p.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise FleetError(f"{p}: not valid TOML ({exc})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise FleetError(f"{option}: {p}: cannot read ({exc})") from None
    return parse_fleet(data, str(p), p.stem, catalog)


def parse_fleet(
    data: Mapping[str, Any], where: str, default_name: str, catalog: Catalog | None = None
) -> Fleet:
    """Validate a parsed fleet table (`where` names the file in errors)."""
    reader = _Reader(where, catalog or default_catalog())
    fleet = reader.fleet(data, default_name)
    if reader.problems or fleet is None:
        raise FleetError(reader.problems)
    return fleet


def _show(value: Any) -> str:
    return repr(value)


class _Reader:
    """Collects every problem of a fleet file, each as `<file>: <field>: <what is wrong>`."""

    def __init__(self, where: str, catalog: Catalog) -> None:
        self.where, self.catalog = where, catalog
        self.problems: list[str] = []

    def err(self, field: str, message: str) -> None:
        self.problems.append(f"{self.where}: {field}: {message}")

    def unknown_keys(self, table: Mapping[str, Any], field: str, known: Sequence[str]) -> None:
        for key in table:
            if key not in known:
                self.err(f"{field}{key}", f"unknown key (known: {', '.join(known)})")

    def number(self, table: Mapping[str, Any], key: str, field: str, positive: bool = True) -> float | None:
        if key not in table:
            self.err(field, "missing")
            return None
        value = table[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.err(field, f"{_show(value)} is not a number")
            return None
        if value != value or value in (float("inf"), float("-inf")):
            self.err(field, f"{_show(value)} is not a finite number")
            return None
        if value < 0 or (positive and value == 0):
            self.err(field, f"{_show(value)} must be {'positive' if positive else 'at least 0'}")
            return None
        return float(value)

    def text(self, table: Mapping[str, Any], key: str, field: str, default: str) -> str | None:
        value = table.get(key, default)
        if not isinstance(value, str):
            self.err(field, f"{_show(value)} is not a string")
            return None
        return value

    def fleet(self, data: Mapping[str, Any], default_name: str) -> Fleet | None:
        self.unknown_keys(data, "", TOP_KEYS)
        name = self.text(data, "name", "name", default_name)
        if name is not None and not NAME.fullmatch(name):
            rule = "must be letters, digits, '.', '_' or '-' (it names result files)"
            self.err("name", f"{_show(name)} {rule}")
        description = self.text(data, "description", "description", "")
        meta = data.get("meta", {})
        if not isinstance(meta, dict):
            self.err("meta", f"{_show(meta)} is not a table")
        raw_pms = data.get("pm")
        kinds: list[PmKind] = []
        if raw_pms is None:
            self.err("pm", "missing: give at least one [[pm]] table")
        elif not isinstance(raw_pms, list) or not raw_pms:
            self.err("pm", "expected one or more [[pm]] tables")
        else:
            for n, raw in enumerate(raw_pms):
                kind = self.pm_kind(raw, f"pm[{n}]")
                if kind is not None:
                    kinds.append(kind)
        models = {g for k in kinds for g in k.gpus}
        workload, weights = self.workload(data.get("workload", {}), models)
        if self.problems or name is None or description is None:
            return None
        return Fleet(name, tuple(kinds), workload, weights, description)

    def pm_kind(self, raw: Any, field: str) -> PmKind | None:
        if not isinstance(raw, dict):
            self.err(field, f"expected a table, got {_show(raw)}")
            return None
        before = len(self.problems)
        self.unknown_keys(raw, f"{field}.", PM_KEYS)
        count = raw.get("count")
        if "count" not in raw:
            self.err(f"{field}.count", "missing")
        elif isinstance(count, bool) or not isinstance(count, int):
            self.err(f"{field}.count", f"{_show(count)} is not a whole number")
        elif count < 1:
            self.err(f"{field}.count", f"{count} must be at least 1")
        gpus = self.gpu_list(raw, f"{field}.gpus")
        cpu = self.number(raw, "cpu", f"{field}.cpu")
        ram = self.number(raw, "ram_gb", f"{field}.ram_gb")
        power = self.text(raw, "power", f"{field}.power", DEFAULT_PM_MODEL)
        if power is not None and power not in self.catalog.pms:
            known = ", ".join(sorted(self.catalog.pms))
            self.err(f"{field}.power", f"unknown power curve {_show(power)} (known: {known})")
        label = self.text(raw, "label", f"{field}.label", "")
        if len(self.problems) > before or not isinstance(count, int) or gpus is None:
            return None
        if cpu is None or ram is None:
            return None
        return PmKind(count, gpus, cpu, ram, str(power), str(label))

    def gpu_list(self, raw: Mapping[str, Any], field: str) -> tuple[str, ...] | None:
        if "gpus" not in raw:
            self.err(field, "missing (use [] for a PM without GPUs)")
            return None
        names = raw["gpus"]
        if not isinstance(names, list):
            self.err(field, f"{_show(names)} is not a list of GPU model names")
            return None
        ok = True
        for k, name in enumerate(names):
            if not isinstance(name, str):
                self.err(f"{field}[{k}]", f"{_show(name)} is not a GPU model name")
                ok = False
            elif name not in self.catalog.gpus:
                known = ", ".join(sorted(self.catalog.gpus))
                self.err(f"{field}[{k}]", f"unknown GPU model {_show(name)} (known: {known})")
                ok = False
        return tuple(names) if ok else None

    def workload(self, raw: Any, models: set[str]) -> tuple[tuple[tuple[str, Any], ...], ProfileWeights]:
        if not isinstance(raw, dict):
            self.err("workload", f"expected a table, got {_show(raw)}")
            return (), ()
        self.unknown_keys(raw, "workload.", (*WORKLOAD_KEYS, "profiles"))
        knobs: dict[str, Any] = {}
        for key, (kind, lo, hi, lo_ok) in WORKLOAD_KEYS.items():
            if key not in raw:
                continue
            field, value = f"workload.{key}", raw[key]
            if kind == "choice":
                if value not in LIFETIMES:
                    self.err(field, f"{_show(value)} is not one of {', '.join(LIFETIMES)}")
                else:
                    knobs[key] = value
                continue
            x = self.number(raw, key, field, positive=False)
            if x is None:
                continue
            if x < lo or x > hi or (x == lo and not lo_ok):
                bound = f"between {lo:g} and {hi:g}" if hi < float("inf") else "positive"
                self.err(field, f"{_show(value)} must be {bound}")
                continue
            knobs[key] = x
        weights = self.profile_weights(raw.get("profiles", {}), models)
        return tuple(sorted(knobs.items())), weights

    def profile_weights(self, raw: Any, models: set[str]) -> ProfileWeights:
        if not isinstance(raw, dict):
            self.err("workload.profiles", f"expected a table of GPU models, got {_show(raw)}")
            return ()
        out = []
        for model_name, table in sorted(raw.items()):
            field = f'workload.profiles."{model_name}"'
            if model_name not in models:
                where = "no [[pm]] carries it" if model_name in self.catalog.gpus else "unknown GPU model"
                self.err(field, f"{where} (the fleet's GPU models: {', '.join(sorted(models)) or 'none'})")
                continue
            if not isinstance(table, dict) or not table:
                self.err(field, f"expected a table of profile weights, got {_show(table)}")
                continue
            model = self.catalog.gpu(model_name)
            pairs = []
            for profile in table:
                pfield = f'{field}."{profile}"'
                if not model.has_profile(profile):
                    known = ", ".join(p.name for p in model.profiles)
                    self.err(pfield, f"not a profile of {model_name} (profiles: {known})")
                    continue
                w = self.number(table, profile, pfield, positive=False)
                if w is not None:
                    pairs.append((profile, w))
            if pairs and not any(w > 0 for _, w in pairs):
                self.err(field, "every weight is 0: at least one profile must be requested")
            order = {p.name: p.index for p in model.profiles}
            out.append((model_name, tuple(sorted(pairs, key=lambda pw: order[pw[0]]))))
        return tuple(out)


def fleet_from_dict(data: Mapping[str, Any]) -> Fleet:
    """A `Fleet` back from its `dataclasses.asdict` form (as results files store it, lists for tuples)."""
    kinds = tuple(
        PmKind(int(k["count"]), tuple(k["gpus"]), float(k["cpu"]), float(k["ram_gb"]), k["power"], k["label"])
        for k in data["kinds"]
    )
    workload = tuple((str(key), value) for key, value in data.get("workload", ()))
    weights = tuple(
        (str(model), tuple((str(p), float(w)) for p, w in pairs))
        for model, pairs in data.get("profile_weights", ())
    )
    return Fleet(str(data["name"]), kinds, workload, weights, str(data.get("description", "")))
