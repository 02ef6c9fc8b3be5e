"""The live state as the store has it (`serve/store.py`), read back at start, after a store failure and
after a server was removed from the fleet: the seed's PMs (those marked `"cordoned": true` cordoned),
every VM, the plans (a running plan holds again what its moves held), the GIs found on hosts, the
VMs the optimizer gave up on.

It is built aside (`Loaded`) and taken by the live state at once (`Live._take`), so that readers go on
while a large state is read. An ended plan that names a server removed since cannot be read against
the fleet: it is kept as it was last shown (`frozen`, stored with the plan as `view`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from origamig.cluster.datacenter import DataCenter
from origamig.errors import SnapshotError
from origamig.policies.base import Policy
from origamig.runtime.lifecycle import Effects, Runtime
from origamig.runtime.loop import Loop
from origamig.runtime.migration import MigrationModel
from origamig.serve import found_gis
from origamig.serve.found_gis import HostGi
from origamig.serve.plans import from_store
from origamig.serve.platform import MoveRules, Platform, move_rules, pin_all
from origamig.serve.requests import EntryContext, most_gis
from origamig.serve.snapshot_view import SnapshotView
from origamig.serve.store import Store, StoreError
from origamig.snapshot.document import Snapshot, parse_snapshot

FROZEN_VIEW = "view"  # a stored plan's key holding its last JSON, when it names a removed server
SIMULATED = "simulated"  # `--controller simulated`: the service carries out the moves itself


@dataclass
class Loaded:
    """Everything the live state reads back from the store (module doc)."""

    seed: Snapshot
    dc: DataCenter
    view: SnapshotView
    request_context: EntryContext
    most_gis: int
    class_members: dict[str, frozenset[int]]
    runtime: Runtime
    loop: Loop
    modeled_s: dict[int, float]
    rejected: dict[str, str]
    frozen: dict[int, dict[str, Any]]
    found: dict[str, HostGi]
    move_rules: MoveRules


def load(
    store: Store,
    policy: Policy,
    effects: Effects,
    *,
    controller: str,
    migration: MigrationModel | None,
    platform: Platform,
    intra_pm_moves: bool | None,
    now: Callable[[], float],
) -> Loaded:
    """The state of `store`, driven by `policy` with `effects` (module doc)."""
    document = store.document()
    try:
        snap = parse_snapshot(_switched_on(document))
    except SnapshotError as exc:
        raise StoreError([f"--state: {store.path}: {line}" for line in exc.problems]) from None
    seed = dataclasses.replace(snap, document={k: v for k, v in document.items() if k != "vms"})
    dc = snap.datacenter()
    if intra_pm_moves is not None:
        dc.intra_pm_moves = intra_pm_moves
    entries = ({k: v for k, v in vm.items() if k != "placement"} for vm in document["vms"])
    rules = move_rules(platform, [m.name for m in snap.present_models])
    pin_all(dc.vms, rules)  # before the plans take the VMs they are to start from the queue
    pin_all(dc.pending, rules)
    # What each VM request is read against (pinned where the platform cannot move it).
    context = dataclasses.replace(EntryContext.of(snap), pin=rules.applied)
    simulated = controller == SIMULATED
    runtime = Runtime(dc, policy, effects, migration, confirm_orphans=not simulated)
    runtime.plans.cordoned = cordoned_in(seed.document, dc)
    stored = store.plans()
    frozen = {doc["id"]: doc[FROZEN_VIEW] for doc in stored if FROZEN_VIEW in doc}
    runs = [from_store(doc, dc, dc.pending) for doc in stored if FROZEN_VIEW not in doc]
    for run in runs:  # VMs a running plan is to start wait in it, not in the queue
        for v in run.reserved:
            dc.drop_pending(v)
    runtime.plans.restore(runs)
    runtime.plans.next_id = max([runtime.plans.next_id, *(i + 1 for i in frozen)])
    found = {g.key: g for g in map(HostGi.of, store.meta_value(found_gis.META_KEY) or [])}
    for gi in found.values():
        found_gis.hold(dc, gi)
    loaded = Loaded(
        seed=seed,
        dc=dc,
        view=SnapshotView(seed.document, dc.pms, entries),
        request_context=context,
        most_gis=most_gis(dc.pms),  # a request for more GIs is refused at once
        # The PMs of each GPU class: the extender's test that a node can host a pod at all.
        class_members={h: frozenset(pms) for h, pms in dc.class_pms.items()},
        runtime=runtime,
        loop=Loop(runtime, simulated_controller=simulated),
        modeled_s={doc["id"]: doc.get("modeled_s", 0.0) for doc in stored},
        rejected=store.rejected(),  # VM id → why the optimizer gave up on it
        frozen=frozen,
        found=found,
        move_rules=rules,
    )
    if simulated:  # a simulated controller carries on with the moves under way
        for run in runtime.plans.running():
            for m in run.running_moves():
                loaded.loop.move_started(run, m, run.started_s[m.n] or now())
    return loaded


def cordoned_in(seed: Mapping[str, Any], dc: DataCenter) -> frozenset[int]:
    """The PMs the seed document marks `"cordoned": true` (the reader checked the field)."""
    return frozenset(dc.index[pm["id"]] for pm in seed.get("pms", []) if pm.get("cordoned") is True)


def _switched_on(document: Mapping[str, Any]) -> dict[str, Any]:
    """`document` with every PM switched on: the service switches PMs on and off as VMs come and
    go, as the simulator does (`sim/start.py`); `GET /v1/snapshot` says which ones host nothing."""
    doc = dict(document)
    doc["pms"] = [{k: v for k, v in pm.items() if k != "powered_off"} for pm in document.get("pms", [])]
    return doc
