"""`simulate --from SNAPSHOT`: the run starts from a cluster's state — running VMs in place until their
drawn lifetime ends, pending VMs arriving at t = 0 — and a seed's own requests are unchanged by it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from origamig.errors import UserError
from origamig.judge.check import check
from origamig.sim.engine import Simulation
from origamig.sim.scenario import SimConfig, build_pms, requests_for, validate, workload_spec
from origamig.sim.start import draw_lifetimes, load_start, start_state
from origamig.sim.workload import HOUR, WorkloadSpec
from origamig.snapshot.document import load_snapshot
from origamig.study.runner import RunSpec, make_run_policy, run_one
from tests.cli_helpers import run_main
from tests.paths import ROOT

CLUSTER = ROOT / "examples" / "fleets" / "h100-cluster.json"


def config(**changes) -> SimConfig:
    base = SimConfig(snapshot=str(CLUSTER), pms=6, warmup_s=0.0, measure_s=12 * HOUR, load=0.5)
    return base.replace(**changes)


def test_snapshot_gives_the_data_center_with_every_pm_free_to_switch() -> None:
    snap = load_snapshot(CLUSTER)
    pms = build_pms(config())
    assert [p.id for p in pms] == [p.id for p in snap.pms]
    assert not any(p.powered_off for p in pms)


def test_running_vms_start_in_place_and_leave_at_their_drawn_lifetime() -> None:
    cfg = config()
    snap = load_start(str(CLUSTER))
    requests = requests_for(cfg, 4, build_pms(cfg))
    start = start_state(cfg.snapshot, workload_spec(cfg), 4, [r.id for r in requests])
    assert len(start.running) == len(snap.placement) and len(start.pending) == len(snap.pending)
    assert all(r.arrival_s == 0.0 for r in start.pending)
    assert [r.id for r in start.pending] == snap.pending  # file order, oldest first
    seen: dict[float, dict[str, object]] = {}

    def sample(t: float, dc) -> None:
        assert not check(dc)
        seen[t] = dict(dc.placement)

    lifetimes = {r.id: r.lifetime_s for r, _ in start.running}
    times = sorted({0.0, *(x + 1.0 for x in lifetimes.values() if x + 1.0 < cfg.horizon_s)})
    sim = Simulation(
        build_pms(cfg),
        [*start.pending, *requests],
        make_run_policy("ff", cfg, 4),
        cfg.warmup_s,
        cfg.measure_s,
        samples=times,
        on_sample=sample,
        initial=start.running,
    )
    sim.run()
    assert {v: pl for v, pl in seen[0.0].items() if v in lifetimes} == dict(snap.placement)
    for vm_id, life in lifetimes.items():
        if life + 1.0 < cfg.horizon_s:
            assert vm_id not in seen[life + 1.0], vm_id  # gone once its lifetime has ended


def test_lifetimes_follow_the_workload_and_leave_the_seed_requests_alone() -> None:
    spec = WorkloadSpec()
    xs = draw_lifetimes(spec, 1, 4000)
    mean_h = sum(xs) / len(xs) / HOUR
    assert abs(mean_h - spec.mean_lifetime_h) < 0.1 * spec.mean_lifetime_h
    assert draw_lifetimes(spec, 1, 10) == draw_lifetimes(spec, 1, 10) != draw_lifetimes(spec, 2, 10)
    cfg = config()
    from_snapshot = requests_for(cfg, 3, build_pms(cfg))
    plain = requests_for(SimConfig(pms=6, load=0.5, warmup_s=0.0, measure_s=12 * HOUR), 3, build_pms(cfg))
    assert [(r.id, r.arrival_s, r.lifetime_s) for r in from_snapshot] == [
        (r.id, r.arrival_s, r.lifetime_s) for r in plain
    ]


def test_a_snapshot_vm_named_like_a_request_is_renamed() -> None:
    cfg = config()
    start = start_state(cfg.snapshot, workload_spec(cfg), 1, taken=["vm-000", "new-1"])
    ids = [r.id for r, _ in start.running] + [r.id for r in start.pending]
    assert "vm-000@start" in ids and "new-1@start" in ids
    assert "vm-000" not in ids and len(set(ids)) == len(ids)


def test_run_from_snapshot_is_deterministic_and_counts_the_pending_vms() -> None:
    cfg = config(deterministic=True, measure_s=1 * HOUR, policy_options=(("work_limit", 20),))
    a = run_one(RunSpec(cfg, "origamig", 2))
    b = run_one(RunSpec(cfg, "origamig", 2))
    assert a.metrics == b.metrics and a.calls > 0
    ff = run_one(RunSpec(cfg, "ff", 2))
    assert ff.requests == len(requests_for(cfg, 2, build_pms(cfg))) + 2  # the pending VMs arrive at t = 0
    assert ff.metrics["active_pms"] >= 5  # the snapshot's VMs keep its servers on at first


def test_cli_from_snapshot_and_its_errors(tmp_path: Path) -> None:
    args = ["simulate", "--from", str(CLUSTER), "--policy", "ff", "--seeds", "1", "--warmup", "0"]
    args += ["--measure", "2h", "--json"]
    code, out, err = run_main(args)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["runs"][0]["config"]["snapshot"] == str(CLUSTER) and doc["runs"][0]["config"]["pms"] == 6
    assert doc["summary"][0]["fleet"] == "from h100-cluster.json"
    code, _, err = run_main([*args, "--pms", "8"])
    assert code == 2 and "error: --pms: cannot be combined with --from" in err
    code, _, err = run_main([*args, "--fleet", "examples/fleets/paper.toml"])
    assert code == 2 and "error: --fleet: cannot be combined with --from" in err
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 1, "pms": [{"id": "a", "cpu": 8, "ram_gb": 16, "gpus": ["X"]}], "vms": []}')
    code, _, err = run_main(["simulate", "--from", str(bad), "--policy", "ff"])
    assert code == 2 and err.startswith(f"error: {bad}: pms[0].gpus[0]: unknown GPU model") and "X" in err
    code, _, err = run_main(["simulate", "--from", str(tmp_path / "none.json"), "--policy", "ff"])
    assert code == 2 and err.strip() == f"error: --from: {tmp_path / 'none.json'}: no such file"


def test_hardware_variant_cannot_replace_the_snapshot() -> None:
    with pytest.raises(UserError, match="--variant: small-pms sets the hardware"):
        validate(config(variant="small-pms"))
