"""A server added to the fleet in place (`PUT /v1/pms/{id}`, docs/service.md#the-fleet-as-it-changes):
its snapshot PM entry read as the snapshot reader reads one, then appended to the live state so that
it is the state a restart would read from the store — the PM last in the data center and in the
seed's PMs, a GPU model new to the fleet last among the models VM requests are read against (and the
VMs not yet running read against them again, the platform's pins put in force again), the
extender's tables grown. No other PM's number changes: plans, holds and the policy go on as they were.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from origamig.cluster.records import PmSpec
from origamig.serve.door import id_problem
from origamig.serve.live import Live
from origamig.serve.platform import enforce, move_rules
from origamig.serve.requests import RequestError, most_gis, read_vm_entry
from origamig.snapshot.reader import read_pm_entry

ENTRY_PATH = "pm"


def read_server(live: Live, pm_id: str, raw: Any) -> tuple[PmSpec, dict[str, Any]]:
    """The PM of entry `raw` for the server `pm_id` of the path (its `id` may be left out), and the
    entry as stored; `RequestError` (400) naming every bad field. Call with the state lock held."""
    if not isinstance(raw, dict):
        raise RequestError(f"body: expected a PM entry (an object), got {type(raw).__name__}")
    if (problem := id_problem(pm_id, "pm")) is not None:
        raise RequestError(problem)
    entry = {"id": pm_id, **raw}
    if entry["id"] != pm_id:
        raise RequestError(f"id: {entry['id']!r} is not the server of the path ({pm_id!r})")
    spec, problems = read_pm_entry(entry, live.request_context.catalog, ENTRY_PATH)
    problems = [line.removeprefix(f"{ENTRY_PATH}.") for line in problems]
    known = live.dc.class_slices
    for k, g in enumerate(spec.gpus if spec is not None else ()):
        slices = known.get(g.gpu_class, g.memory_slices)
        if slices != g.memory_slices:
            problems.append(
                f"gpus[{k}]: {g.name} has {g.memory_slices} memory slices but class {g.gpu_class} "
                f"already has {slices} in the fleet (one class, one geometry)"
            )
    if spec is None or problems:
        raise RequestError(problems)
    return spec, entry


def grow(live: Live, spec: PmSpec, entry: dict[str, Any]) -> int:
    """Add the PM `spec` (snapshot entry `entry`) to `live` after the others (module doc); its
    number. Call with `writing` and the state lock held; the seed is stored at the next commit."""
    dc = live.dc
    j = dc.add_pm(spec)
    doc = dict(live.seed.document)
    doc["pms"] = [*doc["pms"], entry]
    live.seed = dataclasses.replace(live.seed, pms=dc.pms, document=doc)
    live.view.put_pm(j, entry, dc.pms)
    live.pm_version.append(0)
    live.most_gis = max(live.most_gis, most_gis([spec]))
    for h in spec.gpu_classes:
        live.class_members[h] = frozenset(dc.class_pms[h])
    present = live.request_context.present
    names = {m.name for m in present}
    new = [g for g in dict.fromkeys(spec.gpus) if g.name not in names]
    if new:
        live.request_context = dataclasses.replace(live.request_context, present=(*present, *new))
        enforce(live, move_rules(live.move_rules.platform, [m.name for m in live.request_context.present]))
        _read_waiting_again(live)
    if entry.get("cordoned") is True:
        live.runtime.cordon(j)
    return j


def _read_waiting_again(live: Live) -> None:
    """The VMs not yet running (pending, or to be started by a plan) read again against the models
    now present, as a restart reads them: a VM that names no GPU model may run on a new one."""
    dc = live.dc
    entries = live.view.entries
    for v in list(dc.pending):
        dc.pending[v] = read_vm_entry(entries[v], live.request_context)
    for run in live.runtime.plans.running():
        for v in list(run.reserved):
            run.reserved[v] = read_vm_entry(entries[v], live.request_context)
