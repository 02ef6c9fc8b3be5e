"""A misspelt GPU model is one error per server and hides nothing else: the server's CPU and RAM
checks, and every check of its VMs that does not depend on the model, still run
(docs/formats.md#validation)."""

from __future__ import annotations

import copy
import json

import pytest

from origamig.errors import SnapshotError
from origamig.snapshot.document import parse_snapshot
from tests.paths import ROOT

CLUSTER = json.loads((ROOT / "examples" / "fleets" / "h100-cluster.json").read_text())
KNOWN = "A100-40GB, A100-80GB, A30-24GB, H100-80GB, H100-94GB, H200-141GB"


def problems(doc: dict) -> list[str]:
    with pytest.raises(SnapshotError) as info:
        parse_snapshot(doc)
    return info.value.problems


def on(doc: dict, pm: str) -> list[int]:
    return [i for i, v in enumerate(doc["vms"]) if v.get("placement", {}).get("pm") == pm]


def test_a_misspelt_model_is_one_error_and_the_servers_other_problems_are_still_found() -> None:
    doc = copy.deepcopy(CLUSTER)
    doc["pms"][0]["gpus"] = ["H100-80BG"] * 8
    doc["pms"][0]["cpu"] = 100  # the 20 VMs on hgx-0 use 141 cores
    first, second, third = on(doc, "hgx-0")[:3]
    doc["vms"][first]["cpu"] = "six"  # a VM's own field: still checked (and left out of the sum)
    doc["vms"][second]["placement"]["gis"][0]["gpu"] = 9  # hgx-0 has 8 GPUs, whatever their model
    doc["vms"][third]["placement"]["gis"].append({"gpu": 1, "start": 0})  # 2 slots for 1 GI
    elsewhere = on(doc, "hgx-1")[0]
    doc["vms"][elsewhere]["placement"]["gis"][0]["start"] = 1  # 4g.40gb starts at 0 only
    vm = doc["vms"]
    assert problems(doc) == [
        f'pms[0].gpus[0]: unknown GPU model "H100-80BG", also on GPUs 1-7 (known: {KNOWN})',
        f'vms[{first}].cpu: expected a number, got "six" (a string)',
        f"vms[{second}].placement.gis[0].gpu: 9 is not a GPU of hgx-0 (it has 8)",
        f"vms[{third}].placement.gis: 2 placements for the VM's 1 GIs",
        f"vms[{elsewhere}].placement.gis[0].start: 1 is not a permitted start for 4g.40gb on H100-80GB"
        " (allowed: 0)",
        "pms[0].cpu: 100 cores, but the VMs placed on hgx-0 use 135 "
        f"({', '.join(vm[i]['id'] for i in on(doc, 'hgx-0')[1:6])}, ...)",
    ]


def test_two_misspelt_names_on_one_server_are_two_errors_and_other_servers_are_unaffected() -> None:
    doc = copy.deepcopy(CLUSTER)
    doc["pms"][2]["gpus"][3] = "H100"
    doc["pms"][2]["gpus"][5:8] = ["h100-80gb"] * 3
    assert problems(doc) == [
        f'pms[2].gpus[3]: unknown GPU model "H100" (known: {KNOWN})',
        f'pms[2].gpus[5]: unknown GPU model "h100-80gb", also on GPUs 6, 7 (known: {KNOWN})',
    ]


def test_with_every_server_misspelt_pending_vms_are_not_called_ambiguous() -> None:
    doc = copy.deepcopy(CLUSTER)
    for pm in doc["pms"]:
        pm["gpus"] = ["H100-80BG"] * 8
    found = problems(doc)
    assert len(found) == len(doc["pms"])  # the pending VMs' names are H100 and A100-80GB names alike
    assert all(line.startswith(f"pms[{j}].gpus[0]: unknown GPU model") for j, line in enumerate(found))
