"""The snapshot format (docs/formats.md#snapshot): examples, schema, path-named validation errors, round trip,
atomic write."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest

from origamig.cluster.records import GiSlot, Placement, Weights
from origamig.errors import SnapshotError
from origamig.judge.check import check_placement
from origamig.snapshot.document import (
    load_snapshot,
    parse_snapshot,
    read_json,
    schema_path,
    snapshot_document,
    write_json_atomic,
)
from tests.paths import ROOT

EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
A100, A30, A100_80 = "A100-40GB", "A30-24GB", "A100-80GB"


def pm(pm_id: str, gpus: list[str], cpu: float = 80, ram: float = 512, **extra: object) -> dict:
    return {"id": pm_id, "cpu": cpu, "ram_gb": ram, "gpus": gpus, **extra}


def vm(
    vm_id: str, gis: list[str], where: tuple[str, list[tuple[int, int]]] | None = None, **extra: object
) -> dict:
    out: dict = {"id": vm_id, "cpu": 4, "ram_gb": 16, "gis": gis, **extra}
    if where is not None:
        out["placement"] = {"pm": where[0], "gis": [{"gpu": g, "start": z} for g, z in where[1]]}
    return out


def doc(pms: list[dict], vms: list[dict], **extra: object) -> dict:
    return {"version": 1, "pms": pms, "vms": vms, **extra}


def problems(d: object) -> list[str]:
    with pytest.raises(SnapshotError) as info:
        parse_snapshot(d)
    return info.value.problems


def test_examples_exist_and_cover_the_documented_cases() -> None:
    names = {p.stem for p in EXAMPLES}
    assert {
        "fragmented-a100",
        "mixed-a100-a30",
        "fig1a-noncontiguous",
        "fig1b-start-slice",
        "fig1c-compaction",
    } <= names


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_are_valid_and_pass_the_checker(path: Path) -> None:
    snap = load_snapshot(path)
    assert snap.pending, "every example has a pending VM to admit"
    assert check_placement(snap.pms, snap.vms, snap.placement) == []
    jsonschema.validate(read_json(path), json.loads(schema_path("snapshot").read_text()))


@pytest.mark.parametrize("name", ["snapshot", "plan", "solve"])
def test_shipped_schemas_are_valid_json_schema(name: str) -> None:
    schema = json.loads(schema_path(name).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)


def test_pending_vm_of_the_fragmented_example_fits_no_gpu_now() -> None:
    # The point of the example: no GPU has a free permitted start for 3g.20gb (0 or 4) right now.
    snap = load_snapshot(next(p for p in EXAMPLES if p.stem == "fragmented-a100"))
    dc = snap.datacenter()
    (pending,) = snap.pending
    prof = snap.vms[pending].gis[0]
    for j in range(len(dc.pms)):
        for k in range(dc.gpu_count(j)):
            assert not dc.gpu_geometry(j, k).fits(dc.occupancy(j, k), prof)


# --- validation: one line per problem, naming the JSON path and the value ----------------------
CASES = [
    (
        "start not permitted (the documented example)",
        doc(
            [pm("pm0", [A100])],
            [vm("v0", ["1g.5gb"]), vm("v1", []), vm("v2", []), vm("v3", ["2g.10gb"], ("pm0", [(0, 3)]))],
        ),
        [
            "vms[3].placement.gis[0].start: 3 is not a permitted start for 2g.10gb on A100-40GB "
            "(allowed: 0, 2, 4)"
        ],
    ),
    (
        "unknown GPU model",
        doc([pm("pm0", ["A100-40G"])], []),
        [
            'pms[0].gpus[0]: unknown GPU model "A100-40G" (known: A100-40GB, A100-80GB, A30-24GB, H100-80GB, '
            "H100-94GB, H200-141GB)"
        ],
    ),
    (
        "unknown profile",
        doc([pm("pm0", [A30])], [vm("v0", ["2g.11gb"])]),
        ['vms[0].gis[0]: unknown GI profile "2g.11gb" (known here: 1g.6gb, 2g.12gb, 4g.24gb)'],
    ),
    (
        "profile on a GPU of another class",
        doc([pm("pm0", [A100, A30])], [vm("v0", ["3g.20gb"], ("pm0", [(1, 0)]))]),
        [
            "vms[0].placement.gis[0].gpu: GPU 1 of pm0 is an A30-24GB (class 30); "
            "3g.20gb of A100-40GB needs class 100"
        ],
    ),
    (
        "overlapping GIs",
        doc(
            [pm("pm0", [A100])],
            [vm("v0", ["3g.20gb"], ("pm0", [(0, 4)])), vm("v1", ["1g.5gb"], ("pm0", [(0, 5)]))],
        ),
        [
            "vms[1].placement.gis[0]: 1g.5gb at start 5 on GPU 0 of pm0 overlaps vms[0].placement.gis[0] "
            "(3g.20gb at start 4)"
        ],
    ),
    (
        "PM over its CPU and RAM",
        doc(
            [pm("pm0", [A100], cpu=6, ram=20)],
            [vm("v0", ["1g.5gb"], ("pm0", [(0, 0)])), vm("v1", [], ("pm0", []))],
        ),
        [
            "pms[0].cpu: 6 cores, but the VMs placed on pm0 use 8 (v0, v1)",
            "pms[0].ram_gb: 20 GB, but the VMs placed on pm0 use 32 (v0, v1)",
        ],
    ),
    (
        "duplicate ids",
        doc([pm("pm0", []), pm("pm0", [])], [vm("v0", []), vm("v0", [])]),
        ['pms[1].id: "pm0" is also the id of pms[0]', 'vms[1].id: "v0" is also the id of vms[0]'],
    ),
    (
        "dangling PM id",
        doc([pm("pm0", [A100])], [vm("v0", ["1g.5gb"], ("pm9", [(0, 0)]))]),
        ['vms[0].placement.pm: "pm9" is not the id of a PM in pms'],
    ),
    (
        "wrong types",
        doc([pm("pm0", "A100-40GB", cpu="80")], [{"id": 7, "cpu": True, "ram_gb": None, "gis": "1g.5gb"}]),  # type: ignore[arg-type]
        [
            'pms[0].cpu: expected a number, got "80" (a string)',
            'pms[0].gpus: expected a list of GPU model names, got "A100-40GB" (a string)',
            "vms[0].id: expected a string, got 7 (a number)",
            "vms[0].cpu: expected a number, got true (a boolean)",
            "vms[0].ram_gb: expected a number, got null (null)",
            'vms[0].gis: expected a list of GI profile names, got "1g.5gb" (a string)',
        ],
    ),
    (
        "negative numbers",
        doc([pm("pm0", [A100], cpu=-1)], [vm("v0", [], migration_penalty=-2)], weights={"pm": -50}),
        [
            "pms[0].cpu: -1 is negative",
            "vms[0].migration_penalty: -2 is negative",
            "weights.pm: -50 is negative",
        ],
    ),
    (
        "implausibly large numbers",
        doc([pm("pm0", [A100], cpu=1e38)], [vm("v0", [], migration_penalty=2e6)], weights={"pm": 1e300}),
        [
            "pms[0].cpu: 1e+38 is implausibly large (at most 1,000,000)",
            "vms[0].migration_penalty: 2000000.0 is implausibly large (at most 1,000,000)",
            "weights.pm: 1e+300 is implausibly large (at most 1,000,000)",
        ],
    ),
    (
        "a VM's GIs on two PMs",
        doc(
            [pm("pm0", [A100]), pm("pm1", [A100])],
            [
                {
                    "id": "v0",
                    "cpu": 4,
                    "ram_gb": 16,
                    "gis": ["1g.5gb", "1g.5gb"],
                    "placement": {
                        "pm": "pm0",
                        "gis": [{"gpu": 0, "start": 0}, {"pm": "pm1", "gpu": 0, "start": 1}],
                    },
                }
            ],
        ),
        ['vms[0].placement.gis[1].pm: "pm1" differs from the VM\'s PM "pm0" (a VM\'s GIs share one PM)'],
    ),
    (
        "missing keys and version",
        {"pms": [{"id": "pm0", "gpus": []}], "vms": [{"id": "v0", "gis": [], "placement": {"pm": "pm0"}}]},
        [
            "version: missing",
            "pms[0].cpu: missing",
            "pms[0].ram_gb: missing",
            "vms[0].cpu: missing",
            "vms[0].ram_gb: missing",
            "vms[0].placement.gis: missing",
        ],
    ),
    (
        "unsupported version",
        doc([], [], version=2) | {"version": 2},
        ["version: 2 is not a supported version (supported: 1)"],
    ),
    ("not an object", [], ["snapshot: expected an object, got a list"]),
    (
        "slot count and GPU index",
        doc(
            [pm("pm0", [A100])],
            [vm("v0", ["1g.5gb"], ("pm0", [(0, 0), (0, 1)])), vm("v1", ["1g.5gb"], ("pm0", [(2, 0)]))],
        ),
        [
            "vms[0].placement.gis: 2 placements for the VM's 1 GIs",
            "vms[1].placement.gis[0].gpu: 2 is not a GPU of pm0 (it has 1)",
        ],
    ),
    (
        "powered-off PM hosting a VM",
        doc([pm("pm0", [A100], powered_off=True)], [vm("v0", ["1g.5gb"], ("pm0", [(0, 0)]))]),
        ["pms[0].powered_off: true, but pm0 hosts v0"],
    ),
    (
        "unknown weight",
        doc([pm("pm0", [A100])], [], weights={"acept": 100}),
        ["weights.acept: unknown weight (known: accept, pm, gpu, free_start, migration)"],
    ),
    (
        "GIs of two models",
        doc([pm("pm0", [A100, A30])], [vm("v0", ["3g.20gb", "2g.12gb"])]),
        ["vms[0].gis: 3g.20gb, 2g.12gb are not profiles of one GPU model (a VM's GIs share one)"],
    ),
]


@pytest.mark.parametrize(("label", "document", "expected"), CASES, ids=[c[0] for c in CASES])
def test_each_problem_is_one_line_naming_path_and_value(
    label: str, document: object, expected: list[str]
) -> None:
    assert problems(document) == expected


def test_all_problems_are_listed_not_just_the_first() -> None:
    d = doc(
        [pm("pm0", [A100], cpu=-1), pm("pm1", ["nope"])],
        [vm("v0", ["2g.10gb"], ("pm0", [(0, 6)])), vm("v1", ["zz"]), vm("v0", [])],
    )
    found = problems(d)
    # Hand count: PM cpu, unknown GPU model, start 6 for 2g.10gb, unknown profile, duplicate id.
    assert len(found) == 5
    assert [line.split(":")[0] for line in found] == [
        "pms[0].cpu",
        "pms[1].gpus[0]",
        "vms[0].placement.gis[0].start",
        "vms[1].gis[0]",
        "vms[2].id",
    ]


def test_validation_does_not_mutate_the_document() -> None:
    d = json.loads(EXAMPLES[0].read_text())
    before = copy.deepcopy(d)
    parse_snapshot(d)
    assert d == before


# --- ambiguous profile names across models ----------------------------------------------------
def test_profile_of_a_catalog_model_absent_from_the_snapshot_is_a_valid_pending_request() -> None:
    # An A100 request in an A30-only cluster is not malformed: it can only be rejected.
    snap = parse_snapshot(doc([pm("pm0", [A30])], [vm("v0", ["2g.10gb"])]))
    assert snap.vms["v0"].gis[0].gpu_model == A100 and snap.pending == ["v0"]


def test_a_pending_vm_without_gpu_model_may_run_on_every_model_that_offers_its_profiles() -> None:
    # 1g.10gb: 2 memory slices on the A100-40GB, 1 on the A100-80GB (models/gpus/*.toml): each model
    # defines the GI as it knows it, in order of first appearance on the PMs.
    base = [pm("pm0", [A100, A100_80])]
    spec = parse_snapshot(doc(base, [vm("v0", ["1g.10gb"])])).vms["v0"]
    assert [(c[0].gpu_model, c[0].memory_slices) for c in spec.gi_choices] == [(A100, 2), (A100_80, 1)]
    assert spec.gpu_classes == ("100", "A100-80GB")
    for model, slices in ((A100, 2), (A100_80, 1)):  # "gpu_model" is a constraint
        snap = parse_snapshot(doc(base, [vm("v0", ["1g.10gb"], gpu_model=model)]))
        assert snap.vms["v0"].gis[0].memory_slices == slices
        assert snap.vms["v0"].gis[0].gpu_model == model
        assert snap.vms["v0"].alternatives == ()


def test_migratable_and_intra_pm_moves_are_read_and_typed() -> None:
    base = [pm("pm0", [A100_80])]
    pinned = {**vm("v0", ["1g.10gb"], ("pm0", [(0, 0)])), "migratable": False}
    snap = parse_snapshot({**doc(base, [pinned]), "intra_pm_moves": False})
    assert snap.vms["v0"].migratable is False and snap.intra_pm_moves is False
    assert snap.datacenter().intra_pm_moves is False
    assert parse_snapshot(doc(base, [vm("v1", ["1g.10gb"])])).vms["v1"].migratable is True
    bad = {**doc(base, [{**vm("v0", ["1g.10gb"]), "migratable": "no"}]), "intra_pm_moves": 0}
    assert problems(bad) == [
        'vms[0].migratable: expected true or false, got "no" (a string)',
        "intra_pm_moves: expected true or false, got 0 (a number)",
    ]


def test_running_vm_is_resolved_by_the_gpu_it_runs_on() -> None:
    snap = parse_snapshot(doc([pm("pm0", [A100, A100_80])], [vm("v0", ["1g.10gb"], ("pm0", [(1, 3)]))]))
    assert snap.vms["v0"].gis[0].gpu_model == A100_80  # start 3 is valid only for the 1-slice profile


def test_unambiguous_when_only_one_model_is_present() -> None:
    snap = parse_snapshot(doc([pm("pm0", [A100_80])], [vm("v0", ["1g.10gb"])]))
    assert snap.vms["v0"].gis[0].memory_slices == 1


def test_gpu_model_field_is_checked() -> None:
    assert problems(doc([pm("pm0", [A100])], [vm("v0", ["1g.6gb"], gpu_model=A100)])) == [
        'vms[0].gis[0]: "1g.6gb" is not a profile of A100-40GB (profiles: 1g.5gb, 1g.10gb, 2g.10gb, 3g.20gb, '
        "4g.20gb, 7g.40gb)"
    ]


# --- inline GPU models, weights ----------------------------------------------------------------
HALF = {
    "class": "half",
    "memory_slices": 2,
    "compute_slices": 2,
    "idle_power_w": 10,
    "max_power_w": 50,
    "profiles": [
        {"name": "1g.x", "compute_slices": 1, "memory_slices": 1, "starts": [0, 1]},
        {"name": "2g.x", "compute_slices": 2, "memory_slices": 2, "starts": [0]},
    ],
}


def test_inline_gpu_model_is_used_before_the_catalog() -> None:
    d = doc(
        [pm("pm0", ["HALF"])],
        [vm("v0", ["1g.x"], ("pm0", [(0, 1)])), vm("v1", ["2g.x"])],
        gpu_models={"HALF": HALF},
    )
    snap = parse_snapshot(d)
    assert snap.pms[0].gpus[0].name == "HALF" and snap.pending == ["v1"]
    bad = copy.deepcopy(d)
    bad["gpu_models"]["HALF"]["profiles"][0]["starts"] = [0, 3]
    assert problems(bad) == ["gpu_models.HALF.profiles[0].starts: 3 + 1 slices runs past the GPU's 2 slices"]


def test_weights_default_to_spec_and_accept_per_profile_free_start() -> None:
    assert parse_snapshot(doc([], [])).weights == Weights()  # docs/model.md#objective: 100, 50, 20, 1, 10
    snap = parse_snapshot(doc([pm("pm0", [A100])], [], weights={"accept": 7, "free_start": {"1g.10gb": 2}}))
    assert snap.weights.accept == 7 and snap.weights.w("1g.10gb") == 2 and snap.weights.w("1g.5gb") == 1


def test_per_vm_and_per_pm_weights_reach_the_specs() -> None:
    snap = parse_snapshot(
        doc([pm("pm0", [A100], weight=5)], [vm("v0", [], accept_weight=3, migration_penalty=0)])
    )
    assert snap.pms[0].weight == 5
    assert (snap.vms["v0"].accept_weight, snap.vms["v0"].migration_penalty) == (3, 0)


# --- writing -----------------------------------------------------------------------------------
def test_document_round_trip_keeps_unknown_fields(tmp_path: Path) -> None:
    d = doc(
        [pm("pm0", [A100], rack="r1"), pm("pm1", [A100], powered_off=True)],
        [vm("v0", ["1g.5gb"], ("pm0", [(0, 0)]), owner="team-a"), vm("v1", ["3g.20gb"])],
        comment="kept",
    )
    snap = parse_snapshot(d)
    moved = {"v0": Placement(1, (GiSlot(0, 6),)), "v1": Placement(0, (GiSlot(0, 4),))}
    out = snapshot_document(snap, moved, powered_off=[])
    assert out["comment"] == "kept" and out["pms"][0]["rack"] == "r1" and out["vms"][0]["owner"] == "team-a"
    assert "powered_off" not in out["pms"][1]  # it hosts v0 now
    assert out["vms"][0]["placement"] == {"pm": "pm1", "gis": [{"gpu": 0, "start": 6}]}
    again = parse_snapshot(out)
    assert dict(again.placement) == moved
    assert d["vms"][0]["placement"]["pm"] == "pm0", "the input document is not modified"
    write_json_atomic(tmp_path / "s.json", out)
    assert load_snapshot(tmp_path / "s.json").placement == again.placement


def test_atomic_write_leaves_nothing_half_written(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text('{"old": true}')
    with pytest.raises(TypeError):
        write_json_atomic(target, {"bad": object()})  # not serializable: fails midway
    assert target.read_text() == '{"old": true}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]
    with pytest.raises(SnapshotError, match="cannot write"):
        write_json_atomic(tmp_path / "missing-dir" / "x.json", {})


def test_read_json_errors_name_file_line_and_column(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 1,\n "pms": [,]}')
    with pytest.raises(SnapshotError, match=r"bad\.json: not valid JSON: .* \(line 2 column 10\)"):
        read_json(bad)
    nan = tmp_path / "nan.json"
    nan.write_text('{"version": NaN}')
    with pytest.raises(SnapshotError, match="NaN is not valid JSON"):
        read_json(nan)
