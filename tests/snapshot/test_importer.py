"""`origamig import`: snapshot PMs from `nvidia-smi mig -lgi` text and mig-parted checkpoints.

Fixtures in tests/data/mig/: `a100-lgi.txt` is the `nvidia-smi mig -lgi` example 3 of NVIDIA's MIG user
guide (A100-40GB); `a30-lgi.txt` is the same layout with A30 profiles (models/gpus/A30-24GB.toml);
`a100-checkpoint.json` has the shape of `nvidia-mig-parted checkpoint` (api/checkpoint/v1: Version,
MigState.Devices[].GpuInstances[] with the NVML profile enum and Placement.Start/Size).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from origamig.cluster.catalog import default_catalog
from origamig.errors import SnapshotError
from origamig.judge.check import check_placement
from origamig.snapshot.document import load_snapshot, parse_snapshot
from origamig.snapshot.import_sizes import Size, SizeRules
from origamig.snapshot.importer import (
    HostState,
    ImportOptions,
    build_entries,
    choose_model,
    parse_checkpoint,
    parse_lgi,
)
from tests.cli_helpers import run_main
from tests.paths import TEST_DATA

DATA = TEST_DATA / "mig"
SIZES = ["--cpu", "80", "--ram-gb", "512", "--vm-cpu", "4", "--vm-ram-gb", "16"]
CAT = default_catalog()
BORDER = "+----------------------------------------------------+"
HEAD = f"""{BORDER}
| GPU instances:                                     |
| GPU   Name          Profile  Instance   Placement  |
|                       ID       ID       Start:Size |
|====================================================|
"""


def lgi(*rows: str) -> str:
    """`nvidia-smi mig -lgi` output listing `rows`: row n (0-based) is on line 6 + 2n."""
    return HEAD + "".join(f"{row}\n{BORDER}\n" for row in rows)


def test_parse_lgi_reads_every_row_of_the_guide_example() -> None:
    gis = parse_lgi((DATA / "a100-lgi.txt").read_text(), "a100-lgi.txt")
    rows = [(g.gpu, g.name, g.smi_id, g.instance, g.start, g.size) for g in gis]
    assert rows == [
        (0, "1g.5gb", 19, 7, 0, 1),
        (0, "1g.5gb", 19, 8, 1, 1),
        (0, "1g.5gb", 19, 9, 2, 1),
        (0, "1g.5gb", 19, 10, 3, 1),
        (0, "1g.5gb", 19, 13, 6, 1),
        (0, "2g.10gb", 14, 5, 4, 2),
    ]
    assert gis[0].where == "a100-lgi.txt:7"


def test_no_gpu_instances_is_an_empty_host() -> None:
    assert parse_lgi("No GPU instances found: Not Found\n", "x") == []


def test_garbled_row_names_file_and_line() -> None:
    text = lgi("|   0  MIG 1g.5gb       19        7          0-1     |")
    with pytest.raises(SnapshotError, match=r"^x\.txt:6: cannot read this GPU-instance row"):
        parse_lgi(text, "x.txt")


def test_model_is_inferred_when_names_are_unique() -> None:
    a100 = parse_lgi((DATA / "a100-lgi.txt").read_text(), "a")
    a30 = parse_lgi((DATA / "a30-lgi.txt").read_text(), "b")
    assert choose_model(a100, CAT, None, "pm0").name == "A100-40GB"
    assert choose_model(a30, CAT, None, "pm1").name == "A30-24GB"


def test_identical_rows_on_two_models_need_gpu_model() -> None:
    # `1g.10gb` with profile ID 19 and size 1 is valid on the A100-80GB and the H100-80GB alike.
    gis = parse_lgi(lgi("|   0  MIG 1g.10gb      19        7          0:1     |"), "h")
    with pytest.raises(
        SnapshotError, match=r"fit several GPU models \(A100-80GB, H100-80GB\); pass --gpu-model"
    ):
        choose_model(gis, CAT, None, "pm0")
    assert choose_model(gis, CAT, "H100-80GB", "pm0").name == "H100-80GB"


def test_rows_that_contradict_the_given_model_are_reported_by_line() -> None:
    # On the A100-40GB 1g.10gb is profile ID 15 with 2 slices: ID 19 / size 1 is an 80GB part.
    gis = parse_lgi(lgi("|   0  MIG 1g.10gb      19        7          0:1     |"), "h.txt")
    with pytest.raises(SnapshotError) as info:
        choose_model(gis, CAT, "A100-40GB", "pm0")
    assert info.value.problems == ["h.txt:6: profile ID 19 is not 1g.10gb's ID 15 on A100-40GB"]


def test_me_variants_import_as_their_base_profile() -> None:
    gis = parse_lgi(lgi("|   0  MIG 1g.5gb+me    20        7          3:1     |"), "h")
    _, vms = build_entries(
        [HostState("pm0", tuple(gis), 1)], CAT, ImportOptions(SizeRules(Size(8, 64), Size(1, 8)))
    )
    assert vms[0]["gis"] == ["1g.5gb"] and vms[0]["placement"]["gis"] == [{"gpu": 0, "start": 3}]


def test_overlapping_rows_are_rejected() -> None:
    text = lgi(
        "|   0  MIG 3g.20gb       9        2          4:4     |",
        "|   0  MIG 1g.5gb       19        9          5:1     |",
    )
    with pytest.raises(SnapshotError, match=r"h:8: 1g\.5gb at 5:1 overlaps the GI of h:6"):
        build_entries(
            [HostState("pm0", tuple(parse_lgi(text, "h")), 1)],
            CAT,
            ImportOptions(SizeRules(Size(8, 64), Size(1, 8))),
        )


def test_checkpoint_profiles_come_from_nvml_enum_and_size() -> None:
    found, devices = parse_checkpoint(json.loads((DATA / "a100-checkpoint.json").read_text()), "cp")
    assert devices == 3
    model = choose_model(found, CAT, "A100-40GB", "pm2")
    pms, vms = build_entries(
        [HostState("pm2", tuple(found), devices)],
        CAT,
        ImportOptions(SizeRules(Size(80, 512), Size(1, 8)), "A100-40GB"),
    )
    # Enum 0 = 1 compute slice, size 1 → 1g.5gb; enum 9 (1_SLICE_REV2) size 2 → 1g.10gb;
    # enum 1 = 2 compute, size 2 → 2g.10gb; enum 2 = 3 compute, size 4 → 3g.20gb.
    got = {(v["placement"]["gis"][0]["gpu"], v["placement"]["gis"][0]["start"]): v["gis"][0] for v in vms}
    assert got == {(0, 1): "1g.5gb", (0, 2): "2g.10gb", (0, 6): "1g.10gb", (1, 4): "3g.20gb"}
    assert pms == [{"id": "pm2", "cpu": 80, "ram_gb": 512, "gpus": [model.name] * 3}]


def test_checkpoint_keys_are_matched_in_any_case_and_errors_name_the_field() -> None:
    lower = {
        "version": "v1",
        "migState": {"devices": [{"gpuInstances": [{"profileId": 0, "placement": {"start": 6, "size": 1}}]}]},
    }
    found, devices = parse_checkpoint(lower, "cp")
    assert (devices, found[0].start, found[0].nvml_profile) == (1, 6, 0)
    broken = {
        "Version": "v1",
        "MigState": {
            "Devices": [{"GpuInstances": [{"ProfileID": "x", "Placement": {"Start": 0, "Size": 1}}]}]
        },
    }
    with pytest.raises(SnapshotError, match=r"GpuInstances\[0\]\.ProfileID: expected a non-negative integer"):
        parse_checkpoint(broken, "cp")
    with pytest.raises(SnapshotError, match=r"cp\.MigState: missing"):
        parse_checkpoint({"Version": "v1"}, "cp")


def test_import_cli_builds_a_valid_snapshot_that_solve_can_use(tmp_path: Path) -> None:
    out = tmp_path / "cluster.json"
    code, _, err = run_main(
        [
            "import",
            "--host",
            f"pm0={DATA / 'a100-lgi.txt'}",
            "--host",
            f"pm1={DATA / 'a30-lgi.txt'}",
            "--cpu",
            "80",
            "--ram-gb",
            "512",
            "--gpus",
            "2",
            "--vm-cpu",
            "4",
            "--vm-ram-gb",
            "16",
            "--out",
            str(out),
        ]
    )
    assert code == 0, err
    snap = load_snapshot(out)
    assert [(p.id, [g.name for g in p.gpus]) for p in snap.pms] == [
        ("pm0", ["A100-40GB", "A100-40GB"]),
        ("pm1", ["A30-24GB", "A30-24GB"]),
    ]
    assert len(snap.placement) == 10 and not snap.pending
    assert check_placement(snap.pms, snap.vms, snap.placement) == []
    assert "pm0/gpu0/gi13" in snap.vms and snap.placement["pm0/gpu0/gi13"].gis[0].start == 6


def test_import_merges_into_an_existing_snapshot(tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    base.write_text(
        json.dumps(
            {"version": 1, "pms": [], "vms": [{"id": "new", "cpu": 4, "ram_gb": 16, "gis": ["3g.20gb"]}]}
        )
    )
    cp = DATA / "a100-checkpoint.json"
    code, out, err = run_main(
        ["import", "--checkpoint", f"pm2={cp}", "--gpu-model", "A100-40GB", "--merge", str(base), *SIZES]
    )
    assert code == 0, err
    snap = parse_snapshot(json.loads(out))
    assert snap.pending == ["new"] and len(snap.placement) == 4 and len(snap.pms[0].gpus) == 3


def test_import_errors_exit_2(tmp_path: Path) -> None:
    code, _, err = run_main(["import"])
    assert (
        code == 2 and err == "error: import: give at least one --host HOST=FILE or --checkpoint HOST=FILE\n"
    )
    code, _, err = run_main(["import", "--host", "pm0"])
    assert code == 2 and "expected HOST=FILE" in err
    code, _, err = run_main(["import", "--host", f"pm0={tmp_path / 'missing.txt'}"])
    assert code == 2 and "cannot read" in err
    # Two hosts with the same id: the assembled snapshot is validated before it is written.
    lgi = DATA / "a100-lgi.txt"
    code, _, err = run_main(
        [
            "import",
            "--host",
            f"pm0={lgi}",
            "--host",
            f"pm0={lgi}",
            "--gpus",
            "1",
            *SIZES,
            "--out",
            str(tmp_path / "x"),
        ]
    )
    assert code == 2 and 'error: pms[1].id: "pm0" is also the id of pms[0]' in err
    assert not (tmp_path / "x").exists()
