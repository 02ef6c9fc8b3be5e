"""`check-plan` input: a malformed plan or one made for another snapshot exits 2 with one line per
problem (one per unknown VM or PM name); a well-formed plan is replayed (exit 0 or 1). Fuzzed."""

from __future__ import annotations

import copy
import functools
import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from origamig.judge.replay import STEP_FIELDS, malformed_steps
from tests.cli_helpers import run_main
from tests.paths import ROOT
from tests.profiles import examples

EXAMPLES = ROOT / "examples"
FIG1C = EXAMPLES / "fig1c-compaction.json"
MIXED = EXAMPLES / "mixed-a100-a30.json"


@functools.cache
def solved(path: Path) -> dict[str, Any]:
    code, out, err = run_main(["solve", str(path), "--json", "--neighborhood", "all", "--time-limit", "5"])
    assert code == 0, err
    return json.loads(out)


def check_plan(snapshot: Path, plan: Any, tmp: Path) -> tuple[int, str, str]:
    path = tmp / "plan.json"
    path.write_text(json.dumps(plan))
    return run_main(["check-plan", str(snapshot), str(path)])


def test_a_plan_for_another_snapshot_names_each_unknown_vm_and_pm_once(tmp_path: Path) -> None:
    doc = solved(FIG1C)
    assert doc["plan"], "fig1c needs a plan"
    code, out, err = check_plan(MIXED, doc, tmp_path)
    assert code == 2 and out == ""
    lines = err.splitlines()
    vms = {s["vm"] for s in doc["plan"] if "vm" in s}
    pms = {s.get(k) for s in doc["plan"] for k in ("pm", "from", "to") if k in s}
    mixed = json.loads(MIXED.read_text())
    unknown = (vms - {v["id"] for v in mixed["vms"]}) | (pms - {p["id"] for p in mixed["pms"]})
    assert len(lines) == len(unknown) and unknown  # one line per unknown name, not one per step
    for name in unknown:
        assert sum(f"'{name}', not in the snapshot" in line for line in lines) == 1, (name, lines)
    assert all(re.match(r"^error: .*plan\.json: plan\[\d+\]: unknown (VM|PM) '", line) for line in lines)


def test_a_placement_naming_an_unknown_pm_says_so(tmp_path: Path) -> None:
    doc = {
        "plan": [],
        "placement": {"vmA": {"pm": "elsewhere", "gis": []}, "vmB": {"pm": "elsewhere", "gis": []}},
    }
    code, _, err = check_plan(FIG1C, doc, tmp_path)
    assert code == 2
    assert err.endswith("placement.vmA.pm: unknown PM 'elsewhere', not in the snapshot (vmA and 1 more)\n")
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize(
    ("step", "line"),
    [
        (
            {"op": "teleport", "vm": "vmA"},
            "plan[0].op: 'teleport' is not one of power_on, power_off, create_gi",
        ),
        ({"vm": "vmA"}, "plan[0].op: None is not one of"),
        ({"op": "migrate", "vm": "vmA", "from": "pm0"}, "plan[0].to: missing (migrate needs vm, from, to)"),
        ({"op": "power_on", "pm": 3}, "plan[0].pm: expected a string, got 3"),
        (
            {"op": "create_gi", "vm": "vmA", "gi": True, "pm": "pm1", "gpu": 0, "start": 0},
            "plan[0].gi: expected an integer, got True",
        ),
        (
            {"op": "create_gi", "vm": "vmA", "gi": 0, "pm": "pm1", "gpu": -1, "start": 0},
            "plan[0].gpu: -1 is negative",
        ),
        (
            {"op": "power_on", "pm": "pm1", "parking": "yes"},
            "plan[0].parking: expected true or false, got 'yes'",
        ),
        ("migrate vmA", "plan[0]: expected an object with \"op\", got 'migrate vmA'"),
    ],
)
def test_malformed_steps_exit_2_not_1(tmp_path: Path, step: Any, line: str) -> None:
    # Before: these were replayed and reported as a broken step, exit 1, as if the plan were unsafe.
    code, out, err = check_plan(FIG1C, [step], tmp_path)
    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 1 and line in err, err


# --- fuzz ----------------------------------------------------------------------------------------
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 9) | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


def _run(snapshot: Path, plan: Any) -> tuple[int, str, str]:
    with tempfile.TemporaryDirectory() as tmp:
        return check_plan(snapshot, plan, Path(tmp))


def _assert_exit_2_lines(code: int, out: str, err: str) -> None:
    assert code == 2 and out == "", (code, out, err)
    lines = err.splitlines()
    assert lines and all(line.startswith("error: ") for line in lines), lines
    assert len(set(lines)) == len(lines) and "Traceback" not in err


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=JSON_VALUES)
def test_random_json_is_never_a_traceback(plan: Any) -> None:
    code, out, err = _run(FIG1C, plan)
    if isinstance(plan, list) and not malformed_steps(
        plan, {"pm0", "pm1"}, {"vmA", "vmB", "vmC", "vmD", "vmP"}
    ):
        assert code in (0, 1) and err == ""  # well-formed: replayed
    else:
        _assert_exit_2_lines(code, out, err)


def _mutate(plan: list[dict[str, Any]], data: st.DataObject) -> tuple[list[Any], bool]:
    """A copy of `plan` with one mutation, and whether it leaves every step well-formed."""
    plan = copy.deepcopy(plan)
    i = data.draw(st.integers(0, len(plan) - 1))
    step = plan[i]
    kind = data.draw(
        st.sampled_from(
            ["drop_field", "retype", "rename", "bad_op", "not_object", "swap", "renumber", "drop"]
        )
    )
    fields = list(STEP_FIELDS[step["op"]])
    if kind == "drop_field":
        del step[data.draw(st.sampled_from(fields))]
    elif kind == "retype":
        # None of these is an integer, and "7" names no VM or PM: malformed for every field.
        step[data.draw(st.sampled_from(fields))] = data.draw(st.sampled_from([None, 1.5, [], {}, True, "7"]))
    elif kind == "rename":
        names = [f for f in fields if f in ("vm", "pm", "from", "to")]
        step[data.draw(st.sampled_from(names))] = data.draw(st.sampled_from(["ghost", "pm9", ""]))
    elif kind == "bad_op":
        step["op"] = data.draw(st.sampled_from(["", "Migrate", "noop", 3]))
    elif kind == "not_object":
        plan[i] = data.draw(st.sampled_from([None, 1, "step", [step]]))
    elif kind == "swap":
        j = data.draw(st.integers(0, len(plan) - 1))
        plan[i], plan[j] = plan[j], plan[i]
        return plan, True
    elif kind == "renumber":
        for key in ("gpu", "start", "gi"):
            if key in step:
                step[key] = data.draw(st.integers(0, 8))
        return plan, True
    else:
        del plan[i]
        return plan, True
    return plan, False


PMS, VMS = {"pm0", "pm1"}, {"vmA", "vmB", "vmC", "vmD", "vmP"}


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_plans_exit_2_when_malformed_else_replay(data: st.DataObject) -> None:
    doc = solved(FIG1C)
    snap = json.loads(FIG1C.read_text())
    assert {p["id"] for p in snap["pms"]} == PMS and {v["id"] for v in snap["vms"]} == VMS
    plan, well_formed = _mutate(doc["plan"], data)
    code, out, err = _run(FIG1C, plan)
    if well_formed:
        assert code in (0, 1) and err == "", (code, err)
        assert out.startswith("ok:" if code == 0 else "invalid: ")
    else:
        _assert_exit_2_lines(code, out, err)
