"""Fuzz: ≥ 1,000 malformed snapshots (mutated valid examples) through the CLI, in process.

Every one must exit 2 with only `error: <json path>: <problem>` lines on stderr (no duplicates,
never a traceback, never exit 0); with a single mutation, one line names the mutated path.
"""

from __future__ import annotations

import copy
import json
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.cli_helpers import run_main
from tests.paths import ROOT
from tests.profiles import examples

EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
BASES = [json.loads(p.read_text()) for p in EXAMPLES]
ERROR_LINE = r"^error: (version|snapshot|pms|vms|weights|gpu_models)[^:]*: .+$"
# Values of the wrong type for a number field / a string field / an object / a list
NOT_NUMBERS = ["80", None, True, [], {}, "x"]
NOT_STRINGS = [7, None, False, [], {}, 1.5]
NOT_OBJECTS = [1, "x", None, [], True]
NOT_LISTS = [1, "x", None, {}, False]


Mutation = Callable[[dict[str, Any]], str]  # mutates the document, returns the path an error must name


@st.composite
def mutations(draw: st.DrawFn) -> Mutation:
    kind = draw(
        st.sampled_from(
            [
                "delete_pm_key",
                "delete_vm_key",
                "delete_placement_key",
                "delete_slot_key",
                "delete_top",
                "pm_type",
                "vm_type",
                "placement_type",
                "slot_type",
                "entry_type",
                "top_type",
                "negative",
                "huge",
                "bad_start",
                "gpu_index",
                "overlap",
                "dangling",
                "dup_vm",
                "dup_pm",
                "unknown_gpu",
                "unknown_profile",
                "version",
                "capacity",
                "slot_count",
                "two_pms",
                "weight",
                "empty_id",
                "zero_pm",
            ]
        )
    )
    pick = draw(st.integers(0, 10**6))
    value_pick = draw(st.integers(0, 10**6))

    def nth(seq: list[Any]) -> int:
        return pick % len(seq)

    def placed(d: dict) -> int:
        idx = [i for i, v in enumerate(d["vms"]) if "placement" in v and v["gis"]]
        return idx[pick % len(idx)]

    def mutate(d: dict) -> str:
        if kind == "delete_top":
            key = ["version", "pms", "vms"][pick % 3]
            del d[key]
            return key
        if kind == "delete_pm_key":
            j, key = nth(d["pms"]), ["id", "cpu", "ram_gb", "gpus"][value_pick % 4]
            del d["pms"][j][key]
            return f"pms[{j}].{key}"
        if kind == "delete_vm_key":
            i, key = nth(d["vms"]), ["id", "cpu", "ram_gb", "gis"][value_pick % 4]
            del d["vms"][i][key]
            return f"vms[{i}].{key}"
        if kind == "delete_placement_key":
            i, key = placed(d), ["pm", "gis"][value_pick % 2]
            del d["vms"][i]["placement"][key]
            return f"vms[{i}].placement.{key}"
        if kind == "delete_slot_key":
            i, key = placed(d), ["gpu", "start"][value_pick % 2]
            del d["vms"][i]["placement"]["gis"][0][key]
            return f"vms[{i}].placement.gis[0].{key}"
        if kind == "pm_type":
            j, key = nth(d["pms"]), ["id", "cpu", "ram_gb", "gpus"][value_pick % 4]
            pool = NOT_STRINGS if key == "id" else NOT_LISTS if key == "gpus" else NOT_NUMBERS
            d["pms"][j][key] = pool[value_pick % len(pool)]
            return f"pms[{j}].{key}"
        if kind == "vm_type":
            i, key = nth(d["vms"]), ["id", "cpu", "ram_gb", "gis"][value_pick % 4]
            pool = NOT_STRINGS if key == "id" else NOT_LISTS if key == "gis" else NOT_NUMBERS
            d["vms"][i][key] = pool[value_pick % len(pool)]
            return f"vms[{i}].{key}"
        if kind == "placement_type":
            i = placed(d)
            d["vms"][i]["placement"] = NOT_OBJECTS[value_pick % len(NOT_OBJECTS)]
            return f"vms[{i}].placement"
        if kind == "slot_type":
            i, key = placed(d), ["gpu", "start"][value_pick % 2]
            d["vms"][i]["placement"]["gis"][0][key] = [-1, 1.5, "0", None, True][value_pick % 5]
            return f"vms[{i}].placement.gis[0].{key}"
        if kind == "entry_type":
            group = ["pms", "vms"][value_pick % 2]
            k = nth(d[group])
            d[group][k] = NOT_OBJECTS[value_pick % len(NOT_OBJECTS)]
            return f"{group}[{k}]"
        if kind == "top_type":
            key = ["pms", "vms", "weights"][value_pick % 3]
            d[key] = (
                NOT_LISTS[value_pick % len(NOT_LISTS)] if key != "weights" else NOT_OBJECTS[value_pick % 4]
            )
            return key
        if kind == "negative":
            if value_pick % 2:
                j = nth(d["pms"])
                d["pms"][j]["cpu" if pick % 2 else "ram_gb"] = -(1 + value_pick % 50)
                return f"pms[{j}]"
            i = nth(d["vms"])
            d["vms"][i]["cpu" if pick % 2 else "ram_gb"] = -0.5
            return f"vms[{i}]"
        if kind == "huge":
            j = nth(d["pms"])
            d["pms"][j]["cpu" if pick % 2 else "ram_gb"] = 10.0 ** (7 + value_pick % 300)
            return f"pms[{j}]"
        if kind == "bad_start":
            i = placed(d)
            d["vms"][i]["placement"]["gis"][0]["start"] = 7  # no profile of the A100 or the A30 starts at 7
            return f"vms[{i}].placement.gis[0].start"
        if kind == "gpu_index":
            i = placed(d)
            host = next(p for p in d["pms"] if p["id"] == d["vms"][i]["placement"]["pm"])
            d["vms"][i]["placement"]["gis"][0]["gpu"] = len(host["gpus"]) + value_pick % 5  # beyond its GPUs
            return f"vms[{i}].placement.gis[0].gpu"
        if kind == "overlap":
            twin = copy.deepcopy(d["vms"][placed(d)])
            twin["id"] = "twin-of-" + twin["id"]
            d["vms"].append(twin)
            return f"vms[{len(d['vms']) - 1}].placement.gis[0]"
        if kind == "dangling":
            i = placed(d)
            d["vms"][i]["placement"]["pm"] = "no-such-pm"
            return f"vms[{i}].placement.pm"
        if kind == "dup_vm":
            i = nth(d["vms"][1:]) + 1
            d["vms"][i]["id"] = d["vms"][value_pick % i]["id"]
            return f"vms[{i}].id"
        if kind == "dup_pm":
            if len(d["pms"]) < 2:
                d["pms"].append(copy.deepcopy(d["pms"][0]))
                return f"pms[{len(d['pms']) - 1}].id"
            j = nth(d["pms"][1:]) + 1
            d["pms"][j]["id"] = d["pms"][value_pick % j]["id"]
            return f"pms[{j}].id"
        if kind == "unknown_gpu":
            j = next(j for j, p in enumerate(d["pms"]) if p["gpus"])
            d["pms"][j]["gpus"][0] = "B999-1GB"
            return f"pms[{j}].gpus[0]"
        if kind == "unknown_profile":
            i = next(i for i, v in enumerate(d["vms"]) if v["gis"])
            d["vms"][i]["gis"][0] = "9g.99gb"
            return f"vms[{i}].gis[0]"
        if kind == "version":
            d["version"] = [2, 0, "1", None, 1.5, True][value_pick % 6]
            return "version"
        if kind == "capacity":
            i = placed(d)
            d["vms"][i]["cpu" if pick % 2 else "ram_gb"] = 100000
            pm_id = d["vms"][i]["placement"]["pm"]
            return f"pms[{next(j for j, p in enumerate(d['pms']) if p['id'] == pm_id)}]"
        if kind == "slot_count":
            i = placed(d)
            d["vms"][i]["placement"]["gis"].append({"gpu": 0, "start": 0})
            return f"vms[{i}].placement.gis"
        if kind == "two_pms":
            i = placed(d)
            d["vms"][i]["placement"]["gis"][0]["pm"] = "elsewhere"
            return f"vms[{i}].placement.gis[0].pm"
        if kind == "weight":
            key = ["accept", "pm", "gpu", "free_start", "migration", "typo"][value_pick % 6]
            d.setdefault("weights", {})[key] = -1 if key != "typo" else 1
            return f"weights.{key}"
        if kind == "empty_id":
            group = ["pms", "vms"][value_pick % 2]
            k = nth(d[group])
            d[group][k]["id"] = " "
            return f"{group}[{k}].id"
        # zero_pm: a PM with no CPU
        j = nth(d["pms"])
        d["pms"][j]["cpu"] = 0
        return f"pms[{j}].cpu"

    return mutate


@settings(max_examples=examples(1000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    base=st.sampled_from(BASES),
    muts=st.lists(mutations(), min_size=1, max_size=3),
    command=st.sampled_from(["check", "solve"]),  # solve validates before it builds anything
)
@pytest.mark.slow
def test_malformed_snapshots_exit_2_with_one_error_line_per_problem(
    base: dict, muts: list[Mutation], command: str
) -> None:
    d = copy.deepcopy(base)
    anchors = []
    for mut in muts:  # a later mutation may find the structure it needs already broken: skip it
        trial = copy.deepcopy(d)
        try:
            anchors.append(mut(trial))
        except (KeyError, TypeError, IndexError, StopIteration, ZeroDivisionError, AttributeError):
            continue
        d = trial
    assume(anchors)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(d, fh)
    try:
        code, out, err = run_main([command, fh.name])
    finally:
        Path(fh.name).unlink()
    lines = err.splitlines()
    assert code == 2, (code, out, err, anchors)
    assert lines, "at least one problem is reported"
    assert "Traceback" not in err
    assert all(re.match(ERROR_LINE, line) for line in lines), lines
    assert len(set(lines)) == len(lines), f"a problem reported twice: {lines}"
    if len(anchors) == 1:
        (anchor,) = anchors
        assert any(line[len("error: ") :].startswith(anchor) for line in lines), (anchor, lines)


def test_fuzz_bases_are_valid() -> None:
    for path in EXAMPLES:
        code, _, err = run_main(["check", str(path)])
        assert code == 0 and err == ""
