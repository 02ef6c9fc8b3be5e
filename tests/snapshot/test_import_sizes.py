"""`origamig import` asks for what it cannot read: host and VM CPU/RAM from flags or a `--sizes` TOML
file (per GI profile), an error when missing; `--refresh HOST` replaces a host of a `--merge` file
(docs/formats.md#import-sizes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from origamig.snapshot.document import load_snapshot
from tests.cli_helpers import run_main
from tests.paths import ROOT, TEST_DATA

DATA = TEST_DATA / "mig"
LGI = DATA / "a100-lgi.txt"  # GPU 0 of an A100-40GB: five 1g.5gb and one 2g.10gb
EXAMPLE = ROOT / "examples" / "h100-8x"


def run_import(tmp_path: Path, *args: str, host: str = "pm0", lgi: Path = LGI) -> tuple[int, str, Path]:
    out = tmp_path / "out.json"
    out.unlink(missing_ok=True)
    code, stdout, err = run_main(
        ["import", "--host", f"{host}={lgi}", "--gpus", "1", *args, "--out", str(out)]
    )
    assert stdout == ""
    return code, err, out


def test_without_host_sizes_import_stops_with_one_error_naming_the_flags(tmp_path: Path) -> None:
    code, err, out = run_import(tmp_path, "--vm-cpu", "4", "--vm-ram-gb", "16")
    assert code == 2 and not out.exists()
    assert err.startswith("error: --cpu/--ram-gb: missing: ") and err.count("\n") == 1
    assert "--sizes" in err


def test_without_vm_sizes_each_unsized_profile_is_one_error(tmp_path: Path) -> None:
    code, err, out = run_import(tmp_path, "--cpu", "80", "--ram-gb", "512")
    assert code == 2 and not out.exists()
    lines = err.splitlines()
    assert len(lines) == 2  # 1g.5gb (five GIs) and 2g.10gb (one)
    assert lines[0].startswith("error: VM size of 1g.5gb GIs (pm0/gpu0/gi7 and 4 more): missing")
    assert lines[1].startswith("error: VM size of 2g.10gb GIs (pm0/gpu0/gi5): missing")
    assert '[vms.profiles."2g.10gb"]' in lines[1]


def test_a_size_flag_without_its_partner_is_an_error(tmp_path: Path) -> None:
    code, err, _ = run_import(tmp_path, "--cpu", "80", "--vm-cpu", "4", "--vm-ram-gb", "16")
    assert (code, err) == (2, "error: --cpu: given without --ram-gb (a size needs both)\n")


def test_sizes_file_sizes_hosts_and_vms_per_profile_and_flags_override_it(tmp_path: Path) -> None:
    sizes = tmp_path / "sizes.toml"
    sizes.write_text(
        "[hosts]\ncpu = 64\nram_gb = 256\n\n[vms]\ncpu = 2\nram_gb = 8\n\n"
        '[vms.profiles."2g.10gb"]\ncpu = 6\nram_gb = 24\n'
    )
    code, err, out = run_import(tmp_path, "--sizes", str(sizes))
    assert code == 0, err
    snap = load_snapshot(out)
    assert (snap.pms[0].cpu, snap.pms[0].ram_gb) == (64, 256)
    by_profile = {vm.gis[0].name: (vm.cpu_m / 1000, vm.ram_mb / 1000) for vm in snap.vms.values()}
    assert by_profile == {"1g.5gb": (2, 8), "2g.10gb": (6, 24)}
    # Flags replace the file's value at their own level; a profile's own entry still applies.
    code, err, out = run_import(
        tmp_path, "--sizes", str(sizes), "--cpu", "96", "--ram-gb", "384", "--vm-cpu", "1", "--vm-ram-gb", "4"
    )
    assert code == 0, err
    snap = load_snapshot(out)
    assert (snap.pms[0].cpu, snap.pms[0].ram_gb) == (96, 384)
    by_profile = {vm.gis[0].name: (vm.cpu_m / 1000, vm.ram_mb / 1000) for vm in snap.vms.values()}
    assert by_profile == {"1g.5gb": (1, 4), "2g.10gb": (6, 24)}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[hosts]\ncpu = 64\n", ["hosts.ram_gb: missing"]),
        (
            "[hosts]\ncpu = 0\nram_gb = 1e400\n",
            ["hosts.cpu: 0 must be positive", "hosts.ram_gb: inf is not a finite number"],
        ),
        (
            '[hosts]\ncpu = "lots"\nram_gb = 10\n[host]\n',
            ['unknown key "host" (known: hosts, vms)', 'hosts.cpu: expected a number, got "lots"'],
        ),
        (
            '[vms.profiles."1g.5gb"]\ncpu = 2\nram = 8\n',
            [
                'vms.profiles."1g.5gb": unknown key "ram" (known: cpu, ram_gb)',
                'vms.profiles."1g.5gb".ram_gb: missing',
            ],
        ),
        ("[hosts\n", ["not valid TOML: "]),
    ],
    ids=["missing", "bad numbers", "types and keys", "profile key", "syntax"],
)
def test_a_bad_sizes_file_is_one_error_line_per_problem(
    tmp_path: Path, text: str, expected: list[str]
) -> None:
    sizes = tmp_path / "sizes.toml"
    sizes.write_text(text)
    code, err, out = run_import(tmp_path, "--sizes", str(sizes), "--vm-cpu", "1", "--vm-ram-gb", "4")
    assert code == 2 and not out.exists()
    lines = err.splitlines()
    assert len(lines) == len(expected)
    for line, want in zip(lines, expected, strict=True):
        assert line.startswith(f"error: {sizes}") and want in line, (line, want)


def test_refresh_replaces_a_hosts_state_in_the_merge_file(tmp_path: Path) -> None:
    sizes = ["--sizes", str(EXAMPLE / "sizes.toml"), "--gpu-model", "H100-80GB"]
    first = tmp_path / "cluster.json"
    code, _, err = run_main(
        [
            "import",
            "--host",
            f"hgx-01={EXAMPLE / 'hgx-01.lgi.txt'}",
            "--host",
            f"hgx-03={EXAMPLE / 'hgx-03.lgi.txt'}",
            "--gpus",
            "8",
            *sizes,
            "--merge",
            str(EXAMPLE / "requests.json"),
            "--out",
            str(first),
        ]
    )
    assert code == 0, err
    doc = json.loads(first.read_text())
    doc["pms"][1]["weight"] = 80  # an operator's own field on hgx-03: kept by a refresh
    first.write_text(json.dumps(doc))
    # hgx-03 imported again from a listing without GPU instances (hgx-04's): its GIs are gone.
    again = ["import", "--host", f"hgx-03={EXAMPLE / 'hgx-04.lgi.txt'}", "--gpus", "8", *sizes]
    code, _, err = run_main([*again, "--merge", str(first)])  # without --refresh: refused
    assert (code, err) == (
        2,
        "error: --merge: host hgx-03 is already in the snapshot;"
        " pass --refresh hgx-03 to replace its state\n",
    )
    out = tmp_path / "refreshed.json"
    code, _, err = run_main([*again, "--merge", str(first), "--refresh", "hgx-03", "--out", str(out)])
    assert code == 0, err
    before, after = load_snapshot(first), load_snapshot(out)
    assert [pm.id for pm in after.pms] == ["hgx-01", "hgx-03"] and after.pms[1].weight == 80
    assert {v for v, pl in after.placement.items() if after.pms[pl.pm].id == "hgx-03"} == set()
    kept = {v: pl for v, pl in before.placement.items() if before.pms[pl.pm].id == "hgx-01"}
    assert dict(after.placement) == kept and after.pending == before.pending


def test_refresh_names_hosts_that_are_not_imported_or_not_in_the_merge_file(tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    base.write_text(json.dumps({"version": 1, "pms": [], "vms": []}))
    code, err, out = run_import(
        tmp_path,
        "--cpu",
        "80",
        "--ram-gb",
        "512",
        "--vm-cpu",
        "1",
        "--vm-ram-gb",
        "4",
        "--merge",
        str(base),
        "--refresh",
        "pm0",
        "--refresh",
        "pm9",
    )
    assert code == 2 and not out.exists()
    assert err.splitlines() == [
        "error: --refresh pm9: pm9 is not a host this command imports",
        "error: --refresh pm0: pm0 is not in the --merge snapshot",
        "error: --refresh pm9: pm9 is not in the --merge snapshot",
    ]
    code, err, _ = run_import(tmp_path, "--cpu", "80", "--ram-gb", "512", "--refresh", "pm0")
    assert (code, err) == (
        2,
        "error: --refresh: needs --merge SNAPSHOT (the snapshot whose hosts it replaces)\n",
    )
