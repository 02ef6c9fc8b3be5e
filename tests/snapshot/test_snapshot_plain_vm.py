"""The snapshot reader's fast path for plain VM entries (`snapshot/plain_vm.py`) gives exactly the
full reader's answer: the same records and the same problems, on the examples and on mutations of
their VM entries aimed at every rule the fast path decides on its own (hypothesis)."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.cluster.catalog import default_catalog
from origamig.snapshot.reader import read_document
from tests.paths import ROOT
from tests.profiles import examples

EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
BASES = [json.loads(p.read_text()) for p in EXAMPLES]
CATALOG = default_catalog()

ODD_IDS = ["", " ", "a\u200db", "é-1", "x\ny", "tab\there", 5, None]
ODD_NUMBERS = [True, "3", -1, 2_000_000, 0, 2.5, None, 1e6]
ODD_GIS: list[Any] = [[], ["nope"], [1], "1g.10gb", ["1g.10gb", "1g.10gb"], ["1g.5gb"], ["1g.6gb"]]
ODD_MODELS: list[Any] = ["A100-40GB", "H100-80GB", "A30-24GB", "A100-80GB", "Nope", 3]
ODD_INDICES: list[Any] = [0, 1, 3, 6, 7, 99, -1, True, "0", None, 2.0]
MUTATIONS = (
    "id", "same_id", "cpu", "ram", "gis", "model", "drop_model", "extra", "placement", "pm", "slots",
    "gpu", "start", "slot_pm", "copy_place", "drop_place", "unknown_key", "twin",
)  # fmt: skip


def both(doc: Any) -> tuple[Any, Any]:
    return read_document(doc, CATALOG, True), read_document(doc, CATALOG, False)


def test_every_example_reads_alike() -> None:
    for doc in BASES:
        fast, full = both(doc)
        assert fast == full
        assert fast[0] is not None  # the examples are valid


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    doc = copy.deepcopy(draw(st.sampled_from(BASES)))
    vms = doc["vms"]
    for _ in range(draw(st.integers(1, 3))):
        vm = vms[draw(st.integers(0, len(vms) - 1))]
        other = vms[draw(st.integers(0, len(vms) - 1))]
        kind = draw(st.sampled_from(MUTATIONS))
        pl = vm.get("placement")
        slot = pl["gis"][0] if isinstance(pl, dict) and pl.get("gis") else None
        if kind == "id":
            vm["id"] = draw(st.sampled_from(ODD_IDS))
        elif kind == "same_id":
            vm["id"] = other["id"]
        elif kind in ("cpu", "ram"):
            vm["cpu" if kind == "cpu" else "ram_gb"] = draw(st.sampled_from(ODD_NUMBERS))
        elif kind == "gis":
            vm["gis"] = draw(st.sampled_from(ODD_GIS))
        elif kind == "model":
            vm["gpu_model"] = draw(st.sampled_from(ODD_MODELS))
        elif kind == "drop_model":
            vm.pop("gpu_model", None)
        elif kind == "extra":
            key = draw(st.sampled_from(["accept_weight", "migration_penalty", "migratable"]))
            vm[key] = False if key == "migratable" else 5
        elif kind == "placement":
            vm["placement"] = draw(st.sampled_from(["x", None, [], {"pm": "nope", "gis": []}]))
        elif kind == "pm" and isinstance(pl, dict):
            theirs = other.get("placement")  # an earlier mutation may have made it anything
            their_pm = theirs.get("pm") if isinstance(theirs, dict) else None
            pl["pm"] = draw(st.sampled_from([their_pm, "nope", 3, None]))
        elif kind == "slots" and isinstance(pl, dict):
            pl["gis"] = pl["gis"][:-1] if draw(st.booleans()) else [*pl["gis"], {"gpu": 0, "start": 0}]
        elif kind in ("gpu", "start") and slot is not None:
            slot[kind] = draw(st.sampled_from(ODD_INDICES))
        elif kind == "slot_pm" and slot is not None:
            slot["pm"] = draw(st.sampled_from([pl["pm"], "nope"]))
        elif kind == "copy_place" and "placement" in other:
            vm["placement"] = copy.deepcopy(other["placement"])
        elif kind == "drop_place":
            vm.pop("placement", None)
        elif kind == "twin" and slot is not None and vm.get("gis"):
            vm["gis"] = [vm["gis"][0], vm["gis"][0]]  # two GIs on the same slices of one GPU
            pl["gis"] = [dict(slot), dict(slot)]
        elif kind == "unknown_key":
            vm["note"] = "kept as it is"
    return doc


@settings(max_examples=examples(300), deadline=None)
@given(doc=mutated())
def test_mutated_vm_entries_read_alike(doc: dict[str, Any]) -> None:
    fast, full = both(doc)
    assert fast == full


def test_a_snapshot_s_state_is_the_one_validated_placements_build() -> None:
    from origamig.cluster.datacenter import DataCenter
    from origamig.judge.check import check, check_counters
    from origamig.snapshot.document import parse_snapshot

    for doc in BASES:
        snap = parse_snapshot(doc)
        trusted = snap.datacenter()  # the reader judged every placement: not judged again
        judged = DataCenter(snap.pms, snap.intra_pm_moves)
        for v, pl in snap.placement.items():
            judged.place(snap.vms[v], pl)
        assert check(trusted) == [] and check_counters(trusted) == []
        assert trusted.placement == judged.placement and trusted.active_gpus == judged.active_gpus
        assert [trusted.free_memory_slices(j) for j in range(len(snap.pms))] == [
            judged.free_memory_slices(j) for j in range(len(snap.pms))
        ]
