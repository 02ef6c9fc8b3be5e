"""Replay a user's own request trace from a CSV or JSON file.

CSV (header required; one request per row):

    id,arrival_s,lifetime_s,gpu_model,gis,cpu,ram_gb
    job1,0,7200,A100-40GB,3g.20gb;1g.5gb,,
    cpu-only,30.5,600,,,8,32

JSON: `{"requests": [{"id": "job1", "arrival_s": 0, "lifetime_s": 7200, "gpu_model": "A100-40GB",
"gis": ["3g.20gb", "1g.5gb"]}, ...]}` (or the list alone).

- `arrival_s`, `lifetime_s`: seconds from the start of the run; the lifetime starts at admission.
- `gpu_model`: a catalog GPU model name; required when `gis` is not empty. `gis`: profile names of
  that model (`;` or space separated in CSV), possibly empty.
- `cpu` (cores), `ram_gb`: optional; when empty, 4 cores and 16 GB per compute slice
  (docs/simulator.md#workload).
- `id`: optional (default `r<row>`), unique.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from origamig.cluster.catalog import Catalog
from origamig.cluster.records import VmSpec, cores_to_m, gb_to_mb
from origamig.errors import UserError
from origamig.files import parse_json_text
from origamig.sim.workload import Request, vm_for


class RequestsFileError(UserError):
    """A malformed request file: one line per problem, naming the row/JSON path and the value."""


def read_requests(path: Path, catalog: Catalog) -> list[Request]:
    """Every request of `path` (CSV or JSON by suffix), sorted by arrival time (stable)."""
    if not path.is_file():
        raise RequestsFileError(f"--requests: {path}: no such file")
    if path.suffix.lower() == ".json":
        rows = _json_rows(path)
    else:
        with path.open(newline="") as fh:
            rows = [(f"{path}:{n + 2}", dict(r)) for n, r in enumerate(csv.DictReader(fh))]
    problems: list[str] = []
    out: list[Request] = []
    seen: set[str] = set()
    for n, (where, row) in enumerate(rows):
        vm_id = str(row.get("id") or f"r{n}")
        if vm_id in seen:
            problems.append(f"{where}.id: {vm_id!r} appears twice")
        seen.add(vm_id)
        try:
            out.append(_request(row, vm_id, where, catalog))
        except RequestsFileError as err:
            problems.extend(err.problems)
    if problems:
        raise RequestsFileError(problems)
    return sorted(out, key=lambda r: r.arrival_s)


def _json_rows(path: Path) -> list[tuple[str, Mapping[str, Any]]]:
    data = parse_json_text(path.read_text(), str(path), RequestsFileError)
    items = data.get("requests") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise RequestsFileError(f"{path}: expected a list of requests or {{'requests': [...]}}")
    rows: list[tuple[str, Mapping[str, Any]]] = []
    for n, item in enumerate(items):
        if not isinstance(item, dict):
            raise RequestsFileError(f"{path}: requests[{n}]: expected an object, got {item!r}")
        rows.append((f"{path}: requests[{n}]", item))
    return rows


def _number(row: Mapping[str, Any], key: str, where: str, default: float | None = None) -> float:
    value = row.get(key)
    if value is None or value == "":
        if default is None:
            raise RequestsFileError(f"{where}.{key}: missing")
        return default
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise RequestsFileError(f"{where}.{key}: {value!r} is not a number") from None
    if not x >= 0 or x == float("inf"):
        raise RequestsFileError(f"{where}.{key}: {value!r} must be a finite number ≥ 0")
    return x


def _request(row: Mapping[str, Any], vm_id: str, where: str, catalog: Catalog) -> Request:
    arrival = _number(row, "arrival_s", where)
    lifetime = _number(row, "lifetime_s", where)
    raw = row.get("gis") or []
    names = raw.replace(";", " ").split() if isinstance(raw, str) else list(raw)
    profiles = []
    if names:
        model_name = row.get("gpu_model")
        if not model_name:
            raise RequestsFileError(f"{where}.gpu_model: missing (needed for gis {names})")
        try:
            model = catalog.gpu(str(model_name))
        except UserError:
            raise RequestsFileError(f"{where}.gpu_model: unknown GPU model {model_name!r}") from None
        for name in names:
            if not model.has_profile(str(name)):
                raise RequestsFileError(f"{where}.gis: {name!r} is not a profile of {model.name}")
            profiles.append(model.profile(str(name)))
    default = vm_for(vm_id, profiles)
    cpu = _number(row, "cpu", where, default.cpu)
    ram = _number(row, "ram_gb", where, default.ram_gb)
    vm = VmSpec(vm_id, cores_to_m(cpu), gb_to_mb(ram), tuple(profiles))
    return Request(vm, arrival, lifetime, "file")


def write_requests(path: Path, requests: list[Request]) -> None:
    """Write `requests` as the CSV above (e.g. to edit a generated stream and replay it)."""
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "arrival_s", "lifetime_s", "gpu_model", "gis", "cpu", "ram_gb"])
        for r in requests:
            model = r.vm.gis[0].gpu_model if r.vm.gis else ""
            gis = ";".join(p.name for p in r.vm.gis)
            w.writerow(
                [r.id, repr(r.arrival_s), repr(r.lifetime_s), model, gis, f"{r.vm.cpu:g}", f"{r.vm.ram_gb:g}"]
            )
