"""MIG-backed vGPU types as Kubernetes resources (docs/service.md#vgpu-types): the shipped table, pods
that ask for them, the printed stanza, and the extender on the 13-server KubeVirt example fleet."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from origamig.cluster.catalog import default_catalog
from origamig.errors import CatalogError
from origamig.serve.pods import pod_entry
from origamig.serve.requests import RequestError
from origamig.serve.vgpu import RESOURCE_DOMAIN, read_vgpu_table, vgpu_table
from tests.serve.test_serve_k8s import pod_args
from tests.serve_helpers import EXAMPLES, ROOT, Server

FLEET = EXAMPLES / "kubevirt-fleet.json"
QUIET = ("check_interval_s=1e9",)


def test_every_type_name_says_the_compute_slices_and_memory_of_its_gi_profile() -> None:
    table = vgpu_table()
    assert len(table.types) >= 60
    for t in table.types.values():
        # NVIDIA's names are <board>-<compute slices>-<memory GB>C, the profiles <c>g.<GB>gb.
        match = re.fullmatch(r"[A-Z0-9]+-(\d)-(\d+)C", t.name)
        assert match is not None, t.name
        profile = default_catalog().gpu(t.gpu_model).profile(t.profile)
        assert (int(match.group(1)), match.group(2)) == (profile.compute_slices, t.profile.split(".")[1][:-2])


def test_each_board_lists_one_type_per_profile_of_its_gpu_model() -> None:
    table = vgpu_table()
    boards: dict[str, set[str]] = {}
    for t in table.types.values():
        boards.setdefault(t.board, set()).add(t.profile)
    for board, profiles in boards.items():
        model = next(t.gpu_model for t in table.types.values() if t.board == board)
        assert profiles == {p.name for p in default_catalog().gpu(model).profiles}, board


def test_both_resource_name_forms_resolve_and_other_names_do_not() -> None:
    table = vgpu_table()
    h100 = table.of_resource("nvidia.com/NVIDIA_H100-3-40C")
    assert h100 is not None and (h100.gpu_model, h100.profile) == ("H100-80GB", "3g.40gb")
    a100 = table.of_resource("nvidia.com/GRID_A100-3-20C")
    assert a100 is not None and (a100.gpu_model, a100.profile) == ("A100-40GB", "3g.20gb")
    assert table.of_resource("nvidia.com/GRID_T4-1Q") is None  # a time-sliced type: no GI behind it
    assert table.of_resource("nvidia.com/OTHER_H100-3-40C") is None
    assert table.of_resource("example.com/NVIDIA_H100-3-40C") is None
    for t in table.types.values():
        for prefix in table.prefixes:
            assert table.of_resource(f"{RESOURCE_DOMAIN}{prefix}_{t.name}") == t
    assert table.models_with("sr-iov") == {"H100-80GB", "H100-94GB", "H200-141GB"}


def test_a_table_naming_a_profile_its_model_lacks_is_refused() -> None:
    raw = {
        "prefixes": ["NVIDIA"],
        "devices": {"A100-40GB": "mdev"},
        "boards": [{"gpu_model": "A100-40GB", "board": "x", "types": {"3g.40gb": "A100-3-40C"}}],
    }
    with pytest.raises(CatalogError, match=r"boards\[0\]\.types\.3g\.40gb: A100-40GB has no GI profile"):
        read_vgpu_table(raw, "t", default_catalog())


def pod(resources: dict[str, str]) -> dict:
    return {
        "metadata": {"name": "vm-a", "namespace": "ml"},
        "spec": {
            "containers": [{"resources": {"limits": resources, "requests": {"cpu": "9", "memory": "96G"}}}]
        },
    }


def test_a_pod_asking_for_a_vgpu_type_asks_for_its_gi_on_its_gpu_model() -> None:
    entry = pod_entry(pod({"nvidia.com/NVIDIA_H100XM-3-40C": "2", "nvidia.com/GRID_T4-1Q": "1"}))
    assert entry["gis"] == ["3g.40gb", "3g.40gb"] and entry["gpu_model"] == "H100-80GB"
    assert entry["cpu"] == 9 and entry["ram_gb"] == 96
    mixed = {"nvidia.com/NVIDIA_H100-3-40C": "1", "nvidia.com/NVIDIA_A100D-3-40C": "1"}
    with pytest.raises(RequestError, match="vGPU types of 2 GPU models"):
        pod_entry(pod(mixed))
    assert "gpu_model" not in pod_entry(pod({"nvidia.com/mig-3g.40gb": "1"}))
    launcher = pod({"nvidia.com/NVIDIA_H100-3-40C": "1"})
    launcher["metadata"]["ownerReferences"] = [{"kind": "VirtualMachineInstance", "name": "train-7"}]
    assert pod_entry(launcher)["id"] == "ml/train-7"  # a virt-launcher pod is its VMI
    assert pod_entry(pod({}))["id"] == "ml/vm-a"


def print_config(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", "from origamig.cli.app import main; main()", "serve"]
    cmd += ["--state", str(tmp_path / "none.db"), "--from", str(FLEET), "--print-k8s-config", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, env={"PYTHONPATH": str(ROOT)})


def managed(stanza: str) -> list[str]:
    return re.findall(r'- name: "([^"]+)"', stanza)


def test_the_stanza_binds_lists_the_fleets_vgpu_types_and_dials_the_advertised_url(tmp_path: Path) -> None:
    done = print_config(
        tmp_path,
        "--listen", "0.0.0.0:18702", "--advertise-url", "https://origamig.kube-system.svc:18702/",
        "--tls-cert", "service.crt", "--client-ca", "ca.crt", "--scheduler-ca", "/etc/k/ca.pem",
        "--scheduler-cert", "/etc/k/s.pem", "--scheduler-key", "/etc/k/s.key",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert 'urlPrefix: "https://origamig.kube-system.svc:18702/k8s"' in out
    assert 'bindVerb: "bind"' in out
    assert (
        'caFile: "/etc/k/ca.pem"' in out
        and 'certFile: "/etc/k/s.pem"' in out
        and 'keyFile: "/etc/k/s.key"' in out
    )
    names = managed(out)
    table = vgpu_table()
    fleet_models = {"H100-80GB", "A100-80GB", "A100-40GB"}
    expected_vgpu = {
        f"nvidia.com/{p}_{t.name}"
        for t in table.types.values()
        if t.gpu_model in fleet_models
        for p in table.prefixes
    }
    assert {n for n in names if not n.startswith("nvidia.com/mig-")} == expected_vgpu
    assert "nvidia.com/NVIDIA_H100-3-40C" in names and "nvidia.com/GRID_A100-3-20C" in names
    assert not any("H200" in n or "A30" in n for n in names)
    assert len(names) == len(set(names))
    assert done.stderr == ""


def test_a_wildcard_listen_address_is_warned_about_and_a_bad_advertise_url_refused(tmp_path: Path) -> None:
    done = print_config(tmp_path, "--listen", "0.0.0.0:18702")
    assert done.returncode == 0
    assert 'urlPrefix: "http://0.0.0.0:18702/k8s"' in done.stdout
    assert "wildcard" in done.stderr and "--advertise-url" in done.stderr
    bad = print_config(tmp_path, "--advertise-url", "origamig:8787")
    assert bad.returncode == 2 and bad.stderr.startswith("error: --advertise-url: 'origamig:8787'")
    assert len(bad.stderr.strip().splitlines()) == 1


def free_3g_start_nodes(seed: dict) -> set[str]:
    """The H100 nodes of `seed` with a GPU whose memory slices 0-3 or 4-7 are all free (a 3g.40gb GI
    starts at 0 or 4 and takes four slices), worked out from the seed's placements alone."""
    slices = {p.name: p.memory_slices for p in default_catalog().gpu("H100-80GB").profiles}
    used: dict[tuple[str, int], set[int]] = {}
    for vm in seed["vms"]:
        where = vm.get("placement")
        for prof, slot in zip(vm["gis"], where["gis"] if where else [], strict=False):
            taken = used.setdefault((where["pm"], slot["gpu"]), set())
            taken.update(range(slot["start"], slot["start"] + slices.get(prof, 0)))
    out = set()
    for pm in seed["pms"]:
        if pm["gpus"][0] != "H100-80GB":
            continue
        for g in range(len(pm["gpus"])):
            taken = used.get((pm["id"], g), set())
            if not taken & {0, 1, 2, 3} or not taken & {4, 5, 6, 7}:
                out.add(pm["id"])
    return out


def test_a_pod_asking_for_an_h100_vgpu_passes_only_h100_nodes_with_a_free_3g_start(tmp_path: Path) -> None:
    seed = json.loads(FLEET.read_text())
    nodes = [pm["id"] for pm in seed["pms"]]
    expected = free_3g_start_nodes(seed)
    assert expected and expected != {n for n in nodes if n.startswith("h100")}  # the example tells them apart
    args = pod_args([], cpu="9", memory="96G", names=nodes)
    args["Pod"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/NVIDIA_H100-3-40C"] = "1"
    with Server(tmp_path, seed=FLEET, options=QUIET) as srv, srv.client() as c:
        result = c.post("/k8s/filter", json=args).json()
        scores = {h["Host"]: h["Score"] for h in c.post("/k8s/prioritize", json=args).json()}
    assert result["Error"] == ""
    assert set(result["NodeNames"]) == expected
    for node, why in result["FailedNodes"].items():
        if node.startswith("h100"):
            assert why.startswith("no free permitted start slices"), (node, why)
        else:
            assert why == "no H100-80GB GPU", (node, why)
    assert {n for n, s in scores.items() if s > 0} == expected


def test_the_walk_throughs_stanza_is_the_one_printed(tmp_path: Path) -> None:
    doc = (ROOT / "docs" / "service.md").read_text()
    block = doc.split("<!-- printed: the command above")[1].split("```yaml\n", 1)[1].split("```\n", 1)[0]
    command = doc.split("**2. kube-scheduler.**")[1].split("```sh\n", 1)[1].split("```", 1)[0]
    args = command.replace("\\\n", " ").split()
    assert args[:2] == ["origamig", "serve"]
    args = [a if a != "/var/lib/origamig/state.db" else str(tmp_path / "state.db") for a in args[2:]]
    done = subprocess.run(
        [sys.executable, "-c", "from origamig.cli.app import main; main()", "serve", *args],
        capture_output=True, text=True, cwd=ROOT, env={"PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == block
    assert "nvidia.com/NVIDIA_H100XM-3-40C" in managed(block) and "A100" not in block
