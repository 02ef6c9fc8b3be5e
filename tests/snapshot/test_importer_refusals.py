"""`origamig import` refuses what is not MIG state: each refusal is one `error:` line naming the file
and line, exit 2, nothing written; a GPU count is read or given, never guessed.

The fuzz half feeds random text, random lines spliced into real output, and every truncation of the
real outputs in tests/data/mig/ through the CLI in process.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from origamig.errors import SnapshotError
from origamig.snapshot.importer import parse_lgi
from tests.cli_helpers import run_main
from tests.paths import TEST_DATA
from tests.profiles import examples

DATA = TEST_DATA / "mig"
A100_LGI = (DATA / "a100-lgi.txt").read_text()
A30_LGI = (DATA / "a30-lgi.txt").read_text()
SIZES = ["--cpu", "80", "--ram-gb", "512", "--vm-cpu", "4", "--vm-ram-gb", "16"]
SMI_FAILED = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running.\n"
)


def import_text(tmp_path: Path, text: str, *extra: str) -> tuple[int, str, str, Path]:
    src = tmp_path / "host.txt"
    src.write_text(text)
    out = tmp_path / "out.json"
    code, stdout, err = run_main(["import", "--host", f"pm0={src}", *SIZES, *extra, "--out", str(out)])
    return code, stdout, err, out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", r"host\.txt: empty: not `nvidia-smi mig -lgi` output"),
        ("\n  \n", r"host\.txt: empty: not `nvidia-smi mig -lgi` output"),
        ("hello world\nsecond line\n", r"host\.txt:1: not `nvidia-smi mig -lgi` output .*'hello world'"),
        (SMI_FAILED, r"host\.txt:1: nvidia-smi failed on this host, no MIG state to import"),
        ("No MIG-enabled devices found.\n", r"host\.txt:1: the host reports no MIG-enabled GPU"),
        (A100_LGI + "trailing junk\n", r"host\.txt:19: not `nvidia-smi mig -lgi` output"),
        ("|   0  MIG 1g.5gb  19  7  0:1  |\n", r"host\.txt:1: not `nvidia-smi mig -lgi` output"),
        (A100_LGI.rsplit("+", 2)[0], r"host\.txt: the GPU-instance table ends without its closing border"),
        (A100_LGI.split("|====")[0], r"host\.txt: not `nvidia-smi mig -lgi` output: no GPU-instance table"),
        (
            A100_LGI.replace("|   0  MIG 1g.5gb       19        8 ", "|   0  MIG 1g.5gb       19        7 "),
            r"host\.txt:9: GI ID 7 of GPU 0 is also listed on line 7",
        ),
    ],
)
def test_garbage_is_refused_with_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    # --gpu-model and --gpus given: before, such input became a host with idle GPUs and exit 0.
    code, stdout, err, out = import_text(tmp_path, text, "--gpu-model", "A100-40GB", "--gpus", "2")
    assert code == 2 and stdout == ""
    assert len(err.splitlines()) == 1 and re.match(rf"^error: .*{message}", err), err
    assert not out.exists()


def test_no_gpu_instances_found_is_an_idle_host_when_the_count_is_given(tmp_path: Path) -> None:
    code, _, err, out = import_text(
        tmp_path, "No GPU instances found: Not Found\n", "--gpu-model", "A30-24GB", "--gpus", "4"
    )
    assert code == 0, err
    doc = json.loads(out.read_text())
    assert doc["pms"][0]["gpus"] == ["A30-24GB"] * 4 and doc["vms"] == []


def test_the_gpu_count_of_lgi_output_is_never_guessed(tmp_path: Path) -> None:
    # The A30 listing shows GPUs 0 and 1 only; the host may have more idle ones: --gpus is required.
    code, _, err, out = import_text(tmp_path, A30_LGI)
    assert code == 2 and not out.exists()
    assert err == (
        "error: pm0: GPU count unknown (`nvidia-smi mig -lgi` lists only GPUs with GPU instances); "
        "pass --gpus N or --gpus pm0=N\n"
    )
    code, _, err, out = import_text(tmp_path, A30_LGI, "--gpus", "pm0=4")
    assert code == 0, err
    assert json.loads(out.read_text())["pms"][0]["gpus"] == ["A30-24GB"] * 4


def test_per_host_gpu_counts_and_their_errors(tmp_path: Path) -> None:
    a100, a30 = DATA / "a100-lgi.txt", DATA / "a30-lgi.txt"
    hosts = ["--host", f"pm0={a100}", "--host", f"pm1={a30}"]
    code, out, err = run_main(["import", *hosts, *SIZES, "--gpus", "1", "--gpus", "pm1=3"])
    assert code == 0, err
    assert [len(p["gpus"]) for p in json.loads(out)["pms"]] == [1, 3]
    for bad, message in [
        ("0", "--gpus '0': expected a GPU count N >= 1 or HOST=N"),
        ("pm9=2", "--gpus 'pm9=2': 'pm9' is not a host given with --host or --checkpoint"),
        ("pm1=x", "--gpus 'pm1=x': expected a GPU count N >= 1 or HOST=N"),
    ]:
        code, out, err = run_main(["import", *hosts, *SIZES, "--gpus", bad])
        assert (code, out, err) == (2, "", f"error: {message}\n")
    # The listing puts a GI on GPU 1, so one GPU is too few.
    code, _, err = run_main(["import", *hosts, *SIZES, "--gpus", "2", "--gpus", "pm1=1"])
    assert code == 2 and err == "error: pm1: a GI is on GPU 1 but the host has 1 GPUs\n"


def test_a_checkpoint_gives_its_gpu_count_and_a_contradicting_one_is_refused(tmp_path: Path) -> None:
    cp = DATA / "a100-checkpoint.json"
    code, out, err = run_main(["import", "--checkpoint", f"pm2={cp}", "--gpu-model", "A100-40GB", *SIZES])
    assert code == 0, err and len(json.loads(out)["pms"][0]["gpus"]) == 3
    code, out, err = run_main(
        ["import", "--checkpoint", f"pm2={cp}", "--gpu-model", "A100-40GB", "--gpus", "4", *SIZES]
    )
    assert (code, out) == (2, "")
    assert err == f"error: --gpus: pm2 has 4 GPUs, but its checkpoint {cp} lists 3\n"
    empty = tmp_path / "cp.json"
    empty.write_text(json.dumps({"Version": "v1", "MigState": {"Devices": []}}))
    code, _, err = run_main(["import", "--checkpoint", f"pm2={empty}", "--gpu-model", "A100-40GB", *SIZES])
    assert code == 2 and err == f"error: {empty}: MigState.Devices: the checkpoint lists no GPU\n"


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--vm-cpu", "-1", "--vm-cpu: -1 is negative"),
        ("--vm-ram-gb", "-0.5", "--vm-ram-gb: -0.5 is negative"),
        ("--cpu", "0", "--cpu: 0 must be positive"),
        ("--ram-gb", "nan", "--ram-gb: nan is not a finite number"),
        ("--vm-cpu", "inf", "--vm-cpu: inf is not a finite number"),
    ],
)
def test_size_flags_are_blamed_by_name(tmp_path: Path, flag: str, value: str, message: str) -> None:
    # Before: `--vm-cpu -1` was reported as `vms[0..5].cpu` of a snapshot the user never wrote.
    code, stdout, err, out = import_text(tmp_path, A100_LGI, "--gpus", "1", flag, value)
    assert (code, stdout, err) == (2, "", f"error: {message}\n")
    assert not out.exists()


# --- fuzz ----------------------------------------------------------------------------------------
FULL_ROWS = {txt: parse_lgi(txt, "x") for txt in (A100_LGI, A30_LGI)}


def _import_once(text: str) -> tuple[int, str, str, bool]:
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "h.txt", Path(tmp) / "out.json"
        src.write_text(text)
        code, stdout, err = run_main(
            ["import", "--host", f"pm0={src}", "--gpus", "2", *SIZES, "--out", str(out)]
        )
        return code, stdout, err, out.exists()


def _assert_refused(code: int, stdout: str, err: str, written: bool) -> None:
    assert code == 2, (code, err)
    assert stdout == "" and not written
    lines = err.splitlines()
    assert lines and all(line.startswith("error: ") for line in lines), lines
    assert "Traceback" not in err


_PRINTABLE = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=400)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_PRINTABLE)
def test_random_text_is_refused(text: str) -> None:
    _assert_refused(*_import_once(text))


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    base=st.sampled_from([A100_LGI, A30_LGI]),
    where=st.integers(min_value=0, max_value=30),
    junk=st.text(st.characters(codec="ascii", exclude_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85"), min_size=1),
)
def test_a_foreign_line_spliced_into_real_output_is_refused_by_its_line(
    base: str, where: int, junk: str
) -> None:
    lines = base.splitlines()
    where = min(where, len(lines))
    if not junk.strip() or junk.strip()[0] in "$#" or junk.strip().startswith("+-"):
        junk = "x" + junk  # blank, prompt and border lines are part of the format
    text = "\n".join([*lines[:where], junk, *lines[where:]]) + "\n"
    code, stdout, err, written = _import_once(text)
    if code == 0:  # the spliced line happened to be a valid row or header: then it must parse as one
        parse_lgi(text, "h")
        return
    _assert_refused(code, stdout, err, written)
    assert f"h.txt:{where + 1}:" in err or f"on line {where + 1}" in err, err  # the spliced line


@pytest.mark.parametrize("base", [A100_LGI, A30_LGI], ids=["a100", "a30"])
def test_every_truncation_of_real_output_is_refused_or_a_prefix_of_its_rows(base: str) -> None:
    full = FULL_ROWS[base]
    for cut in range(len(base)):
        text = base[:cut]
        try:
            rows = parse_lgi(text, "h")
        except SnapshotError as err:
            assert len(err.problems) == 1 and err.problems[0].startswith("h")
            continue
        # Accepted only when the cut fell right after a row's closing border: the rows read so far.
        assert [(g.gpu, g.start, g.name) for g in rows] == [
            (g.gpu, g.start, g.name) for g in full[: len(rows)]
        ]
        assert text.rstrip().endswith("+") and rows
    for cut in (0, len(base) // 3, len(base) // 2, len(base) - 2):  # and through the CLI
        code, stdout, err, written = _import_once(base[:cut])
        if code != 0:
            _assert_refused(code, stdout, err, written)
