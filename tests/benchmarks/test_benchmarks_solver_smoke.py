"""The machinery of the solver benchmarks (optimality gap, BILP scaling, solver replay), in seconds.

No real `--quick` run: each test drives the script's functions in-process on a few PMs in seconds and
checks properties that must hold whatever the timings (OPT bounds OrigaMIG, snapshots round-trip,
instances are valid), plus that each script writes its figure.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from benchmarks.paper import bilp_scaling, optimality_gap
from benchmarks.solver import no_change, solver_replay, solvers
from origamig.bilp import solve_region
from origamig.call.admission_neighborhood import select_admission
from origamig.call.neighborhood_bounds import Bounds
from origamig.cluster.records import Weights
from origamig.judge.check import check, check_counters
from origamig.policies.base import Placed
from origamig.sim.engine import Simulation
from origamig.sim.workload import Request
from origamig.snapshot.document import parse_snapshot
from tests.builders import at, datacenter, pm, vm

TINY_GAP = optimality_gap.Setup(
    points=((3, 16), (3, 2)),
    seeds=(1,),
    first_h=6.0,
    last_h=12.0,
    every_h=6.0,
    settle_s=600.0,
    call_limit_s=2.0,
    opt_limit_s=10.0,
)


class _Always:
    """A policy that places every VM at PM 0, GPU 0, start 0 (enough to drive the loop)."""

    name = "always"

    def arrive(self, dc, vm_spec, now, locked):
        return Placed(at(0, (0, 0)))

    def depart(self, dc, vm_id, now):
        return None

    def next_check(self, now):
        return None

    def work(self, dc, now, locked=frozenset()):
        return None

    def finished(self, dc, work, now):
        return None

    def counters(self):
        return {}


def test_sample_hook_sees_the_state_before_events_at_its_time() -> None:
    # VM a arrives at 10 s and leaves at 30 s; samples at 5, 10, 20, 30 and 99 s (the end is 50 s).
    # Expected by hand: 5 s → none; 10 s → none (the arrival at 10 s comes after); 20 s → a;
    # 30 s → a (the departure at 30 s comes after); 99 s is past the end: never called.
    reqs = [Request(vm("a", ["7g.40gb"]), 10.0, 20.0)]
    seen: list[tuple[float, tuple[str, ...]]] = []
    sim = Simulation(
        [pm("pm0")],
        reqs,
        _Always(),
        0.0,
        50.0,
        samples=[30.0, 5.0, 20.0, 10.0, 99.0],
        on_sample=lambda t, dc: seen.append((t, tuple(sorted(dc.vms)))),
    )
    sim.run()
    assert seen == [(5.0, ()), (10.0, ()), (20.0, ("a",)), (30.0, ("a",))]


def test_optimality_gap_machinery(tmp_path: Path) -> None:
    doc = optimality_gap.run(TINY_GAP, progress=False)
    assert [(s["pms"], s["m_max"]) for s in doc["summary"]] == [(3, 16), (3, 2)]
    assert len(doc["snapshots"]) == 4  # 2 points x 1 seed x snapshots at 6 h and 12 h
    for row in doc["snapshots"]:
        assert row["opt_proved"]
        assert row["opt_objective_matches"]  # the solver's objective is the referee's Eq. (5)
        # OPT starts from OrigaMIG's placement, so it is never worse in Eq. (5).
        assert row["eq5_opt"] >= row["eq5_origamig"] - 1e-6
        assert row["eq5_gap_pct"] >= -1e-9
        assert row["active_pms_origamig"] <= 3 and row["active_pms_opt"] <= 3
    assert all(s["calls"] >= 0 and s["snapshots"] == 2 for s in doc["summary"])
    doc.update(mode="test", scale="tiny")
    optimality_gap.print_table(doc)
    optimality_gap.draw(doc, tmp_path / "fig8.png")
    assert (tmp_path / "fig8.png").stat().st_size > 10_000


def test_snapshots_wait_for_a_settled_state() -> None:
    outcome = optimality_gap.simulate(3, 16, 2, TINY_GAP)
    assert [s.target_h for s in outcome.snapshots] == [6.0, 12.0]
    for snap in outcome.snapshots:
        assert snap.target_h * 3600 <= snap.taken_s <= snap.target_h * 3600 + TINY_GAP.settle_s
        assert not check(snap.dc) and not check_counters(snap.dc)
        if snap.settled:
            assert not snap.dc.pending


@pytest.mark.parametrize(("n_pms", "n_vms"), [(4, 8), (2, 16), (8, 27)])
def test_scaling_instance_shape(n_pms: int, n_vms: int) -> None:
    dc = bilp_scaling.scaling_instance(n_pms, n_vms, seed=3)
    assert not check(dc) and not check_counters(dc)
    assert len(dc.pending) == max(1, n_vms // 8)
    assert len(dc.vms) <= n_vms - len(dc.pending)
    assert all(len(v.gis) == 1 for v in [*dc.vms.values(), *dc.pending.values()])
    # Same seed, same instance (determinism).
    again = bilp_scaling.scaling_instance(n_pms, n_vms, seed=3)
    assert again.placement == dc.placement and list(again.pending) == list(dc.pending)


def test_occupancy_sizing() -> None:
    # A100 profiles 1g.5gb, 1g.10gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb take 1, 2, 2, 4, 4, 8 memory
    # slices (mean 21/6 = 3.5); 3/4 of 16 slices per PM is 12, i.e. 12 / 3.5 = 3.43 VMs per PM:
    # 16 PMs → 54.9 → 55, 32 PMs → 109.7 → 110 (by hand).
    assert bilp_scaling.mean_memory_slices() == pytest.approx(3.5)
    assert bilp_scaling.vms_for_occupancy(16) == 55
    assert bilp_scaling.vms_for_occupancy(32) == 110


def test_solver_benchmark_generator_follows_its_recipe() -> None:
    import random

    dc = solvers.fragmented(random.Random(5), 6)
    assert not check(dc) and not check_counters(dc)
    assert 4 <= len(dc.pending) <= 8
    assert all(1 <= len(v.gis) <= 2 for v in [*dc.vms.values(), *dc.pending.values()])
    thin = solvers.fragmented(random.Random(5), 6, keep_vms=5)
    assert len(thin.vms) == 5 and not check(thin)
    hoods = solvers.neighborhoods(3, 2)
    assert [h.placement for h in hoods[:1]] == [solvers.neighborhoods(3, 1)[0].placement]  # a prefix
    assert all(40 <= len(h.vms) + len(h.pending) <= 64 and len(h.pms) == 16 for h in hoods)


def test_solver_benchmark_instance_row() -> None:
    import random

    dc = solvers.fragmented(random.Random(2), 2)
    row = solvers.run_instance(dc, "dc2#0", False, 10.0, (("highs", 1),))
    solve = row["solves"]["highs-1t"]
    assert solve["proved_optimal"] and solve["checker_violations"] == 0
    assert solve["evaluate"] >= solve["objective"] - 1e-6 >= row["start_objective"] - 1e-6
    (entry,) = solvers.summarize([row])
    assert entry["proved"] == 1 and entry["max_solve_s"] == solve["wall_s"]


def test_bilp_scaling_machinery(tmp_path: Path) -> None:
    setup = bilp_scaling.Setup(pms=(2, 4), pms_34=(2,), vms=(4,), seeds=(1, 2), time_limit_s=10.0)
    doc = bilp_scaling.run(setup, progress=False)
    assert len(doc["solves"]) == 8
    assert all(r["proved"] for r in doc["solves"])
    for s in doc["summary"]:
        assert s["min_s"] <= s["median_s"] <= s["max_s"]
        assert not s["limit_majority"]
    doc.update(mode="test", scale="tiny")
    bilp_scaling.print_table(doc)
    bilp_scaling.draw(doc, tmp_path / "fig3.png")
    assert (tmp_path / "fig3.png").stat().st_size > 10_000


def _fragment() -> tuple:
    dc = datacenter(
        [pm("pm0"), pm("pm1"), pm("pm2")],
        [
            (vm("a", ["3g.20gb"]), at(0, (0, 4))),
            (vm("b", ["1g.5gb"]), at(0, (1, 0))),
            (vm("c", ["2g.10gb"]), at(1, (0, 2))),
        ],
    )
    dc.add_pending(vm("p", ["7g.40gb", "4g.20gb"]))
    nb = select_admission(dc, list(dc.pending), Bounds())
    return dc, nb


def test_neighborhood_snapshot_round_trip_and_replay(tmp_path: Path) -> None:
    dc, nb = _fragment()
    doc = solver_replay.neighborhood_document(dc, nb, Weights())
    snap = solver_replay.parse_snapshot(doc)
    back = snap.datacenter()
    assert [p.id for p in back.pms] == [dc.pms[j].id for j in nb.pms]
    assert set(back.pending) == set(nb.pending)
    for v, pl in back.placement.items():
        orig = dc.placement[v]
        assert dc.pms[orig.pm].id == back.pms[pl.pm].id and orig.gis == pl.gis
    # The replayed snapshot is the call's BILP: same optimum as the call on the full data center.
    call = solve_region(dc, nb.pms, nb.pending, Weights())
    row = solver_replay.replay_call(
        {"t_s": 0.0, "kind": nb.kind, "snapshot": doc}, settings=(("highs", 1), ("cpsat", 1))
    )
    assert call.result.proved_optimal
    for s in row["solves"].values():
        assert s["proved"]
        assert s["objective"] == pytest.approx(call.result.objective)
        assert s["objective_at"]["10"] == s["objective"]
    summary = solver_replay.summarize([row])
    assert all(s["at_best_share_10s"] == 1.0 and s["proved_share"] == 1.0 for s in summary)
    out = {"mode": "test", "scale": "tiny", "summary": summary, "calls": [row]}
    solver_replay.print_table(out)
    solver_replay.draw(out, tmp_path / "solvers.png")
    assert (tmp_path / "solvers.png").stat().st_size > 10_000


def test_recording_policy_writes_each_call() -> None:
    dc, _ = _fragment()
    policy = solver_replay._RecordingOrigaMIG(0.0, time_limit_s=5.0, threads=1)
    work = policy.work(dc, 10.0)
    assert work is not None and work.kind == "admission"
    assert len(policy.recorded) == 1
    rec = policy.recorded[0]
    assert rec["t_s"] == 10.0 and rec["pms"] == len(work.pms)
    assert solver_replay.parse_snapshot(rec["snapshot"]).pending == ["p"]


def test_spread_picks_evenly() -> None:
    assert solver_replay.spread(list(range(10)), 5) == [0, 2, 4, 6, 8]
    assert solver_replay.spread([1, 2], 5) == [1, 2]


def test_publish_writes_json_with_run_time_and_load_and_draws_next_to_it(tmp_path):
    import json
    import os
    import time

    from benchmarks.publish import publish

    drawn, printed = [], []
    out = tmp_path / "sub" / "study.json"
    publish(
        {"mode": "quick"},
        out,
        time.perf_counter(),
        os.getloadavg(),
        printed.append,
        lambda doc, png: drawn.append(png),
    )
    doc = json.loads(out.read_text())
    assert doc["mode"] == "quick" and doc["wall_s"] >= 0 and doc["meta"]["cpus"] == os.cpu_count()
    assert drawn == [out.with_suffix(".png")] and printed[0]["mode"] == "quick"


def test_no_change_replay_compares_both_versions(tmp_path: Path) -> None:
    dc, nb = _fragment()  # a pending VM that fits: the optimum admits it
    doc = solver_replay.neighborhood_document(dc, nb, Weights())
    improving = {"t_s": 0.0, "kind": nb.kind, "snapshot": doc}
    settled = datacenter([pm("pm0")], [(vm("a", ["3g.20gb"]), at(0, (0, 4)))])
    alone = solver_replay.Neighborhood((0,), (), kind="consolidation")
    doc = solver_replay.neighborhood_document(settled, alone, Weights())
    still = {"t_s": 1.0, "kind": "consolidation", "snapshot": doc}
    rows = [no_change.replay(improving, 0), no_change.replay(still, 1)]
    assert not rows[0]["no_change"] and rows[0]["solves"]["bound+mip"]["termination"] != "bound"
    assert rows[1]["no_change"] and rows[1]["solves"]["bound+mip"]["termination"] == "bound"
    for r in rows:
        assert r["root_gap"] >= -1e-6  # the LP bound is never below the optimum
    summary = no_change.summarize(rows)
    assert summary["proved_by_bound"] == 1 and summary["unchanged_calls"] == 1
    assert summary["wrong_proofs"] == 0 and summary["objective_mismatches"] == 0
    doc = {"scale": "tiny", "summary": summary, "calls": rows}
    no_change.print_table(doc)
    no_change.draw(doc, tmp_path / "no_change.png")
    assert (tmp_path / "no_change.png").stat().st_size > 10_000


def test_benchmark_cpu_time_counts_the_solver_helper_process() -> None:
    """A solve runs in a helper process: its CPU time must show in the benchmarks' CPU readings."""
    import random

    from origamig.bilp import Limits, build_model, compile_model, restrict
    from origamig.bilp.backends.base import get_backend
    from origamig.bilp.backends.cpu_time import cpu_seconds
    from origamig.bilp.backends.helper_pool import helper_pids

    dc = solvers.fragmented(random.Random(3), 8)
    compiled = compile_model(build_model(restrict(dc, range(8), list(dc.pending)), solvers.Weights()))
    backend, limits = get_backend("highs"), Limits(time_limit_s=30.0, threads=1)
    backend.solve(compiled, compiled.hint, limits)  # the helper is running: its start is not measured
    helpers = helper_pids()
    assert helpers  # the solve ran in a helper process
    if not Path("/proc/self/stat").exists():
        pytest.skip("no /proc to read the helper's CPU time from")
    own0, cpu0, helper0 = time.process_time(), cpu_seconds(), _helpers_cpu_s(helpers)
    result = backend.solve(compiled, compiled.hint, limits)
    own, cpu, helper = time.process_time() - own0, cpu_seconds() - cpu0, _helpers_cpu_s(helpers) - helper0
    assert result.wall_s > 0.05 and helper > 0.02  # a solve long enough to measure, done by the helper
    # The reading counts the helper's CPU (ps's, read apart; /proc ticks are 10 ms), however loaded
    # the machine is — a share of the wall time would not hold with other jobs on the cores.
    assert cpu - own >= helper - 0.02


def _helpers_cpu_s(pids: list[int]) -> float:
    """User + system seconds of processes `pids`, read from /proc/<pid>/stat here (not by the code
    under test)."""
    import os

    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of stat(5)
    return total / tick


def test_solve_mixed_runs_this_checkout_and_judges_each_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from benchmarks.product import solve_mixed

    doc = solve_mixed.mixed_cluster(12, 0)
    snap = parse_snapshot(doc)
    classes = {pm.gpus[0].gpu_class for pm in snap.pms}
    assert classes == {"H100-80GB", "A100-80GB"} and len(snap.pending) == solve_mixed.PENDING
    assert any(spec.alternatives for spec in snap.vms.values())  # pending VMs without a GPU model
    written = parse_snapshot(solve_mixed.with_models_written_out(doc, snap))
    assert not any(spec.alternatives for spec in written.vms.values())
    out = tmp_path / "mixed.json"
    argv = ["solve_mixed", "--servers", "12", "--seeds", "1", "--all-up-to", "12", "--out", str(out)]
    monkeypatch.setattr("sys.argv", argv)
    solve_mixed.main()
    result = json.loads(out.read_text())
    assert [r["version"] for r in result["runs"]] == ["default", "all"]
    for run in result["runs"]:
        assert run["replay_ok"] and run["pinned_moved"] == 0 and run["admitted"] <= run["pending"]


@pytest.mark.slow
def test_primal_benchmark_writes_its_table_and_the_repair_never_loses(tmp_path: Path) -> None:
    from benchmarks.solver import primal

    out = tmp_path / "primal.json"
    assert primal.main(["--recorded", "2", "--fragmented", "0", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert [r["instance"] for r in doc["instances"]] == ["recorded 0", "recorded 1"]
    for r in doc["instances"]:
        assert r["repair"]["gain"] >= 0 and r["optimum"]["objective"] >= r["start"]
        for limit in doc["limits_s"]:
            solved = r["limited"][str(limit)]
            # the repair is the solver's start: at any limit the answer is worth at least as much
            gain = solved["with_repair"]["primal_gain"]
            assert gain is not None and solved["with_repair"]["objective"] >= r["start"] + gain - 1e-6
    settings = {s["setting"] for s in doc["summary"]}
    assert {"repair alone", "0.5 s, solver alone", "0.5 s, repair as start"} <= settings
