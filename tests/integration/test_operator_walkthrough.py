"""The operator walk-through of docs/operators.md on the shipped 8x H100 cluster (examples/h100-8x):
`import` the hosts' `nvidia-smi mig -lgi` listings with their sizes and the waiting requests, `check`
the snapshot, `solve` it, `check-plan` the plan — every step through the CLI, as a user types it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from origamig.judge.check import check_placement
from origamig.snapshot.document import load_snapshot
from tests.cli_helpers import run_main
from tests.paths import ROOT

EXAMPLE = ROOT / "examples" / "h100-8x"
HOSTS = ("hgx-01", "hgx-02", "hgx-03", "hgx-04")


def import_args(out: Path) -> list[str]:
    hosts = [arg for h in HOSTS for arg in ("--host", f"{h}={EXAMPLE / f'{h}.lgi.txt'}")]
    return [
        "import",
        *hosts,
        "--gpus",
        "8",
        "--gpu-model",
        "H100-80GB",
        "--sizes",
        str(EXAMPLE / "sizes.toml"),
        "--merge",
        str(EXAMPLE / "requests.json"),
        "--out",
        str(out),
    ]


def test_import_check_solve_check_plan_on_the_8x_h100_example(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.json"
    code, _, err = run_main(import_args(cluster))
    assert code == 0 and err == f"wrote {cluster}: 4 hosts, 21 running GIs\n"
    snap = load_snapshot(cluster)
    assert [(pm.id, len(pm.gpus), pm.cpu, pm.ram_gb) for pm in snap.pms] == [(h, 8, 192, 2048) for h in HOSTS]
    assert all(g.name == "H100-80GB" for pm in snap.pms for g in pm.gpus)
    requests = [v["id"] for v in json.loads((EXAMPLE / "requests.json").read_text())["vms"]]
    assert snap.pending == requests and len(snap.placement) == 21

    code, out, err = run_main(["check", str(cluster)])
    assert (code, err) == (0, "") and out.startswith(f"{cluster}: valid\n4 servers (3 on, 0 powered off)")

    after, script, solved = tmp_path / "after.json", tmp_path / "plan.sh", tmp_path / "solve.json"
    code, out, err = run_main(
        ["solve", str(cluster), "--deterministic", "--json", "--out", str(after), "--script", str(script)]
    )
    assert code == 0, err
    solved.write_text(out)
    doc = json.loads(out)
    assert doc["status"] == "improved" and sorted(doc["admitted"]) == sorted(requests)
    result = load_snapshot(after)
    assert result.pending == [] and check_placement(result.pms, result.vms, result.placement) == []

    code, out, err = run_main(["check-plan", str(cluster), str(solved)])
    assert (code, err) == (0, "") and out.startswith("ok: ") and "ends in the document's placement" in out

    sh = shutil.which("sh")
    if sh is not None:  # the dry-run script prints every command and reaches its end
        ran = subprocess.run([sh, str(script)], capture_output=True, text=True, check=True, timeout=60)
        assert ran.stdout.rstrip().endswith("plan complete")


def test_the_walkthrough_in_the_docs_uses_the_shipped_files() -> None:
    text = (ROOT / "docs" / "operators.md").read_text()
    for name in ("sizes.toml", "requests.json", *(f"{h}.lgi.txt" for h in HOSTS)):
        assert f"examples/h100-8x/{name}" in text, name
        assert (EXAMPLE / name).is_file()


def test_the_check_output_shown_in_the_docs_is_what_check_prints(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.json"
    code, _, err = run_main(import_args(cluster))
    assert code == 0, err
    code, out, _ = run_main(["check", str(cluster)])
    shown = (ROOT / "docs" / "operators.md").read_text().split("$ origamig check cluster.json\n", 1)[1]
    shown = shown.split("```", 1)[0]
    printed = "\n".join(line.rstrip() for line in out.replace(str(cluster), "cluster.json").splitlines())
    assert code == 0 and printed + "\n" == shown
