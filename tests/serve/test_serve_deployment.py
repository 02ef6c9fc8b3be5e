"""`origamig serve` in a real deployment (docs/service.md): a mixed H100 / A100-80GB fleet behind
kube-scheduler's extender, VMs placed by others, the life cycle of plans nobody acknowledges or that a
client cancels, `--optimizer off`, bounded requests, TLS with real certificates, and a start that
leaves nothing half-written."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import trustme

from tests.serve.test_serve_k8s import pod_args
from tests.serve.test_serve_plans import ack, wait_plan
from tests.serve_helpers import EXAMPLES, ROOT, Server, read, valid, write_token

MIXED = EXAMPLES / "mixed-h100-a100.json"
FRAGMENTED = EXAMPLES / "fragmented-a100.json"
QUIET = ("check_interval_s=1e9",)
FAST = ("check_interval_s=0.2", "deterministic=true", "work_limit=100000")
H100_NODES = [f"h100-{n:02d}" for n in range(1, 7)]
A100_NODES = ["a100-01", "a100-02"]


# --- a mixed fleet behind the extender -------------------------------------------------------------
def test_a_mig_pod_without_a_model_passes_the_nodes_of_every_model_that_offers_its_profile(
    tmp_path: Path,
) -> None:
    with Server(tmp_path, seed=MIXED, options=QUIET) as srv, srv.client() as c:
        args = pod_args(["2g.20gb"], cpu="6", memory="64Gi", names=H100_NODES + A100_NODES)
        result = c.post("/k8s/filter", json=args).json()
        assert result["Error"] == ""
        assert set(result["NodeNames"]) & set(A100_NODES) and set(result["NodeNames"]) & set(H100_NODES)
        scores = {h["Host"]: h["Score"] for h in c.post("/k8s/prioritize", json=args).json()}
        assert max(scores.values()) == 10 and set(scores) == set(args["NodeNames"])
        for node in result["NodeNames"]:  # the VM platform binds it where the scheduler chose
            r = c.post(
                "/v1/vms",
                json={"id": f"pod-{node}", "cpu": 6, "ram_gb": 68.72, "gis": ["2g.20gb"], "pm": node},
            )
            assert r.status_code == 201, r.text
            assert r.json()["placement"]["pm"] == node
        valid(c.get("/v1/snapshot").json())


def test_the_printed_scheduler_stanza_names_the_profiles_of_the_fleet(tmp_path: Path) -> None:
    cmd = [sys.executable, "-c", "from origamig.cli.app import main; main()", "serve"]
    cmd += ["--state", str(tmp_path / "none.db"), "--from", str(MIXED), "--print-k8s-config"]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True, env={"PYTHONPATH": str(ROOT)})
    assert 'name: "nvidia.com/mig-2g.20gb"' in done.stdout and 'name: "nvidia.com/mig-7g.80gb"' in done.stdout
    assert "mig-1g.5gb" not in done.stdout  # an A100-40GB profile: no such GPU here
    assert not (tmp_path / "none.db").exists()


# --- VMs placed by others ------------------------------------------------------------------------------
def test_a_vm_bound_to_a_node_or_already_running_is_recorded_as_given_or_refused(tmp_path: Path) -> None:
    with Server(tmp_path, seed=MIXED, options=QUIET) as srv, srv.client() as c:
        bound = c.post(
            "/v1/vms", json={"id": "b", "cpu": 3, "ram_gb": 32, "gis": ["1g.10gb"], "pm": "h100-03"}
        )
        assert bound.status_code == 201 and bound.json()["placement"]["pm"] == "h100-03"
        full = c.post(
            "/v1/vms", json={"id": "f", "cpu": 168, "ram_gb": 1792, "gis": ["7g.80gb"] * 8, "pm": "h100-01"}
        )
        assert full.status_code == 409 and "does not fit h100-01" in full.json()["error"]
        given = {"pm": "h100-03", "gis": [{"gpu": 7, "start": 0}]}
        r = c.post(
            "/v1/vms", json={"id": "g", "cpu": 21, "ram_gb": 224, "gis": ["7g.80gb"], "placement": given}
        )
        assert r.status_code == 201 and r.json()["placement"] == given
        taken = {"pm": "h100-03", "gis": [{"gpu": 7, "start": 3}]}
        clash = c.post(
            "/v1/vms", json={"id": "h", "cpu": 3, "ram_gb": 32, "gis": ["1g.10gb"], "placement": taken}
        )
        assert clash.status_code == 409 and "overlaps" in clash.json()["error"]
        odd = c.post("/v1/vms", json={"id": "o", "cpu": 3, "ram_gb": 32, "gis": [], "node": "h100-03"})
        assert odd.status_code == 400 and odd.json()["problems"][0].startswith("node: not a field")
        snap = read(c.get("/v1/snapshot").json())
        assert {"b", "g"} <= set(snap.placement) and not {"f", "h", "o"} & set(snap.vms)
        valid(c.get("/v1/snapshot").json())


# --- bounded work ------------------------------------------------------------------------------------
def test_a_request_for_more_gis_than_any_pm_holds_is_refused_at_once(tmp_path: Path) -> None:
    with Server(tmp_path, seed=MIXED, options=QUIET) as srv, srv.client() as c:
        args = pod_args(["1g.10gb"], names=H100_NODES)
        args["Pod"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/mig-1g.10gb"] = "3000000"
        t0 = time.monotonic()
        result = c.post("/k8s/filter", json=args).json()
        assert time.monotonic() - t0 < 2.0
        assert "3000000 GIs is more than any PM holds (at most 64)" in result["Error"]
        r = c.post("/v1/vms", json={"id": "x", "cpu": 1, "ram_gb": 1, "gis": ["1g.10gb"] * 65})
        assert r.status_code == 400 and "65 GIs is more than any PM holds" in r.json()["error"]


# --- plans: cancelled, timed out, failed — and what they leave behind -------------------------------------
def test_a_client_cancels_a_running_plan_and_its_servers_are_free(tmp_path: Path) -> None:
    with Server(tmp_path, seed=FRAGMENTED, options=FAST) as srv, srv.client() as c:
        plan = wait_plan(c, 1)
        assert plan["pms"] == sorted({s[k] for s in plan["steps"] for k in ("pm", "from", "to") if k in s})
        assert c.delete("/v1/plans/99").status_code == 404
        ready = c.get("/v1/plans/1").json()["ready_steps"]
        r = c.delete("/v1/plans/1")
        assert r.status_code == 200 and r.json()["status"] == "cancelled"
        assert [s["status"] for s in r.json()["steps"]] == ["aborted"] * len(plan["steps"])
        assert c.delete("/v1/plans/1").status_code == 409
        never = [n for n in range(len(plan["steps"])) if n not in ready]
        assert never and ack(c, 1, never[-1]).status_code == 409  # never handed out: never carried out
        late = ack(c, 1, ready[0])  # handed out before the cancel and done: recorded as what happened
        assert late.status_code == 200 and late.json()["late"] is True
        assert late.json()["steps"][ready[0]]["status"] == "done"
        assert wait_plan(c, 2)["status"] in ("running", "done")  # the optimizer goes on


def test_a_plan_whose_step_is_not_acknowledged_in_time_is_aborted(tmp_path: Path) -> None:
    with (
        Server(tmp_path, seed=FRAGMENTED, options=FAST, extra=["--step-timeout", "1"]) as srv,
        srv.client() as c,
    ):
        assert wait_plan(c, 1)["status"] in ("running", "aborted")
        deadline = time.monotonic() + 30
        while (now := c.get("/v1/plans/1").json())["status"] == "running":
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert now["status"] == "aborted" and "not acknowledged within 1 s" in now["reason"]


def test_a_failed_migration_lists_the_gis_its_created_and_the_idle_servers(tmp_path: Path) -> None:
    seed = EXAMPLES / "fig1c-compaction.json"  # the paper's goal parks a VM on the switched-off PM
    with Server(tmp_path, seed=seed, options=(*FAST, "goal=paper")) as srv, srv.client() as c:
        plan = wait_plan(c, 1)
        steps = plan["steps"]
        first_migrate = next(n for n, s in enumerate(steps) if s["op"] == "migrate")
        for n in range(first_migrate):
            assert ack(c, 1, n).status_code == 200
        failed = ack(c, 1, first_migrate, "failed").json()
        created = [
            {k: s[k] for k in ("vm", "gi", "pm", "gpu", "start")} | {"step": n}
            for n, s in enumerate(steps[:first_migrate])
            if s["op"] == "create_gi"
        ]
        left = [{k: v for k, v in o.items() if k != "profile"} for o in failed["orphan_gis"]]
        assert failed["status"] == "failed" and left == created and created
        held = c.get("/v1/status").json()["held"]
        assert held["orphan_gis"] == len(created)  # their slices stay taken until confirmed gone
        for o in failed["orphan_gis"]:
            assert c.delete(f"/v1/plans/1/orphan-gis/{o['step']}").status_code == 200
        assert c.get("/v1/status").json()["held"]["orphan_gis"] == 0
        switched_on = {s["pm"] for s in steps[:first_migrate] if s["op"] == "power_on"}
        assert switched_on <= set(failed["idle_pms"])
        assert ack(c, 1, first_migrate, "failed").status_code == 200  # the same report again
        assert ack(c, 1, first_migrate, "done").status_code == 409


# --- an extender-only deployment ------------------------------------------------------------------------
def test_with_the_optimizer_off_nothing_is_planned_and_what_fits_nowhere_is_refused(tmp_path: Path) -> None:
    with Server(tmp_path, seed=FRAGMENTED, extra=["--optimizer", "off"]) as srv, srv.client() as c:
        r = c.post("/v1/vms", json={"id": "big", "cpu": 12, "ram_gb": 48, "gis": ["3g.20gb"]})
        assert r.status_code == 422 and r.json()["status"] == "rejected"
        time.sleep(1.5)
        assert c.get("/v1/plans").json()["plans"] == []
        assert c.post("/v1/vms", json={"id": "small", "cpu": 4, "ram_gb": 16, "gis": []}).status_code == 201


def test_without_intra_pm_moves_no_plan_moves_a_vm_inside_a_server(tmp_path: Path) -> None:
    extra = ["--intra-pm-moves", "false"]
    with Server(tmp_path, seed=FRAGMENTED, options=FAST, extra=extra) as srv, srv.client() as c:
        plan = wait_plan(c, 1)  # the VM that fits only after a GI moves: the move goes to the other PM
        migrates = [s for s in plan["steps"] if s["op"] == "migrate"]
        assert migrates and all(s["from"] != s["to"] for s in migrates)


# --- TLS ---------------------------------------------------------------------------------------------
def test_https_with_client_certificates_as_credentials(tmp_path: Path) -> None:
    ca, other = trustme.CA(), trustme.CA()
    server_cert = ca.issue_cert("127.0.0.1")
    cert, key, client_ca = tmp_path / "server.pem", tmp_path / "server.key", tmp_path / "clients.pem"
    server_cert.cert_chain_pems[0].write_to_path(str(cert))
    server_cert.private_key_pem.write_to_path(str(key))
    ca.cert_pem.write_to_path(str(client_ca))
    trust = ssl.create_default_context()
    ca.configure_trust(trust)
    extra = ["--tls-cert", str(cert), "--tls-key", str(key), "--client-ca", str(client_ca)]
    with Server(tmp_path, seed=FRAGMENTED, options=QUIET, extra=extra, verify=trust) as srv:
        assert srv.url.startswith("https://")
        with srv.client() as c:  # the token still works
            assert c.get("/v1/snapshot").status_code == 200
        with srv.client(token=None) as c:
            assert c.get("/v1/snapshot").status_code == 401
        scheduler = ssl.create_default_context()
        ca.configure_trust(scheduler)
        ca.issue_cert("kube-scheduler").configure_cert(scheduler)
        with srv.client(token=None, verify=scheduler) as c:  # kube-scheduler's tlsConfig: no token
            assert c.post("/k8s/filter", json=pod_args(["1g.5gb"])).status_code == 200
        stranger = ssl.create_default_context()
        ca.configure_trust(stranger)
        other.issue_cert("intruder").configure_cert(stranger)
        with srv.client(token=None, verify=stranger) as c, pytest.raises(httpx.TransportError):
            c.get("/v1/snapshot")
        with pytest.raises(httpx.TransportError), httpx.Client(verify=trust) as plain:
            plain.get(srv.url.replace("https://", "http://") + "/healthz")


# --- nothing half-written --------------------------------------------------------------------------------
def test_a_start_on_a_port_in_use_is_one_error_line_and_leaves_no_state(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        write_token(tmp_path / "token")
        state = tmp_path / "state.db"
        cmd = [sys.executable, "-c", "from origamig.cli.app import main; main()", "serve"]
        cmd += ["--state", str(state), "--from", str(FRAGMENTED), "--token-file", str(tmp_path / "token")]
        cmd += ["--listen", f"127.0.0.1:{port}"]
        done = subprocess.run(cmd, capture_output=True, text=True, env={"PYTHONPATH": str(ROOT)}, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: --listen: 127.0.0.1:{port}: cannot listen there")
    assert done.stderr.count("\n") == 1 and not list(tmp_path.glob("state.db*"))


def test_a_bad_tls_file_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    write_token(tmp_path / "token")
    (tmp_path / "cert.pem").write_text("not a certificate")
    cmd = [sys.executable, "-c", "from origamig.cli.app import main; main()", "serve"]
    cmd += [
        "--state",
        str(tmp_path / "s.db"),
        "--from",
        str(FRAGMENTED),
        "--token-file",
        str(tmp_path / "token"),
    ]
    cmd += ["--tls-cert", str(tmp_path / "cert.pem"), "--tls-key", str(tmp_path / "cert.pem")]
    done = subprocess.run(cmd, capture_output=True, text=True, env={"PYTHONPATH": str(ROOT)}, timeout=60)
    assert done.returncode == 2 and done.stderr.startswith("error: --tls-cert/--tls-key:")
    assert not list(tmp_path.glob("s.db*"))


def test_the_stored_state_has_the_plan_reasons_of_a_restart(tmp_path: Path) -> None:
    # A plan's new fields (step timer, leftovers) survive a restart of the service.
    with Server(tmp_path, seed=FRAGMENTED, options=FAST) as srv, srv.client() as c:
        wait_plan(c, 1)
        assert c.delete("/v1/plans/1").status_code == 200
    with Server(tmp_path, options=("check_interval_s=1e9",)) as srv, srv.client() as c:
        again = c.get("/v1/plans/1").json()
        assert again["status"] == "cancelled" and "step_since_s" in again and again["orphan_gis"] == []
        json.dumps(again)
