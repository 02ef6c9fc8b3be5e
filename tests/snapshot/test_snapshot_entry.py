"""One VM entry read on its own (`snapshot.reader.read_vm_entry`, how the service reads a request)
reads exactly as the same entry inside a snapshot of the same PMs: the same record, or the same
problems under its own path (hypothesis, on entries of the examples with odd fields)."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.cluster.catalog import default_catalog
from origamig.snapshot.document import parse_snapshot
from origamig.snapshot.reader import read_document, read_pm_entry, read_vm_entry
from tests.paths import ROOT
from tests.profiles import examples

EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
BASES = [json.loads(p.read_text()) for p in EXAMPLES]
CATALOG = default_catalog()

ODD: dict[str, list[Any]] = {
    "id": ["", " ", "a\u200db", "x\ny", 5, None, "ok-1"],
    "cpu": [True, "3", -1, 2_000_000, 0, 2.5, None],
    "ram_gb": [True, "3", -1, 0, 16, None],
    "gis": [[], ["nope"], [1], "1g.10gb", ["1g.10gb", "1g.10gb"], ["1g.5gb"], ["7g.80gb"], ["3g.40gb"]],
    "gpu_model": ["A100-40GB", "H100-80GB", "A30-24GB", "A100-80GB", "Nope", 3],
    "accept_weight": [5, -1, "x"],
    "migration_penalty": [0, 2.5, None],
    "migratable": [False, "no"],
    "note": ["kept as it is"],
}


@st.composite
def entries(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """(a valid example, one of its VM entries without placement and with a few odd fields)."""
    base = draw(st.sampled_from(BASES))
    entry = copy.deepcopy(draw(st.sampled_from(base["vms"])))
    entry.pop("placement", None)
    for key in draw(st.lists(st.sampled_from(sorted(ODD)), max_size=3, unique=True)):
        if draw(st.booleans()) and key in entry:
            del entry[key]
        else:
            entry[key] = draw(st.sampled_from(ODD[key]))
    return base, entry


def present_models(base: dict[str, Any]) -> tuple[list[Any], Any]:
    snap = parse_snapshot(base)
    return list(snap.present_models), CATALOG.with_gpus(snap.gpu_models)


@settings(max_examples=examples(300), deadline=None)
@given(entries())
def test_an_entry_alone_reads_as_inside_a_snapshot(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    base, entry = case
    inside, problems = read_document({**base, "vms": [entry]}, CATALOG)
    alone, alone_problems = read_vm_entry(entry, *present_models(base), path="vms[0]")
    assert alone_problems == problems
    if inside is None:
        assert alone is None
    else:
        assert alone is not None and inside.vms == {alone.id: alone}


def test_an_entry_with_a_placement_or_not_an_object_is_refused() -> None:
    present, catalog = present_models(BASES[0])
    placed = next(v for v in BASES[0]["vms"] if "placement" in v)
    assert read_vm_entry(placed, present, catalog) == (
        None,
        ["vm.placement: a VM entry read on its own has no placement"],
    )
    assert read_vm_entry([1], present, catalog) == (None, ["vm: expected an object, got [1] (a list)"])


ODD_PM: dict[str, list[Any]] = {
    "id": ["", "a\u200db", 5, None, "new-1"],
    "cpu": [True, "3", -1, 0, 2_000_000, 64],
    "ram_gb": [0, -2, 256, None],
    "gpus": [[], ["Nope"], ["A100-40GB", "Nope", "Nope"], [3], "A100-40GB", ["H100-80GB"] * 8],
    "weight": [-1, 5, "x"],
    "powered_off": [True, "yes"],
    "cordoned": [True, False, 1, "yes"],
    "power_model": ["nope", 3],
    "rack": ["kept as it is"],
}


@st.composite
def pm_entries(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """(a valid example, one of its PM entries with a few odd fields)."""
    base = draw(st.sampled_from(BASES))
    entry = copy.deepcopy(draw(st.sampled_from(base["pms"])))
    for key in draw(st.lists(st.sampled_from(sorted(ODD_PM)), max_size=3, unique=True)):
        if draw(st.booleans()) and key in entry:
            del entry[key]
        else:
            entry[key] = draw(st.sampled_from(ODD_PM[key]))
    return base, entry


@settings(max_examples=examples(200), deadline=None)
@given(pm_entries())
def test_a_pm_entry_alone_reads_as_inside_a_snapshot(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    base, entry = case
    inside, problems = read_document({**base, "pms": [entry], "vms": []}, CATALOG)
    alone, alone_problems = read_pm_entry(entry, present_models(base)[1], path="pms[0]")
    assert alone_problems == problems
    if inside is None:
        assert alone is None
    else:
        assert alone is not None and inside.pms == (alone,)


def test_cordoned_is_true_or_false() -> None:
    base = {
        "version": 1,
        "pms": [{"id": "a", "cpu": 8, "ram_gb": 64, "gpus": [], "cordoned": "yes"}],
        "vms": [],
    }
    assert read_document(base, CATALOG)[1] == [
        'pms[0].cordoned: expected true or false, got "yes" (a string)'
    ]
