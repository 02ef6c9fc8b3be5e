"""The event loop and the metric/energy accounting on hand-computed tiny scenarios (docs/simulator.md)."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from origamig.cluster.catalog import DEFAULT_PM_MODEL, default_catalog
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import GiSlot, Placement, PmSpec, VmSpec
from origamig.policies.base import Deferred, Placed, Rejection, Work
from origamig.sim.energy import PowerModel, gpu_power_w
from origamig.sim.engine import Simulation, SimulationError
from origamig.sim.workload import Request, vm_for

H = 3600.0
CAT = default_catalog()
A100 = CAT.gpu("A100-40GB")


def one_pm() -> list[PmSpec]:
    """One PM: 80 cores, 512 GB, 2x A100 40GB, the default SPECpower curve."""
    return [PmSpec("pm0", 80_000, 512_000, (A100, A100), DEFAULT_PM_MODEL)]


def vm(vm_id: str, *profiles: str) -> VmSpec:
    return vm_for(vm_id, [A100.profile(p) for p in profiles])


class Scripted:
    """A policy that follows a script: where each VM goes, and which calls run when."""

    name = "scripted"

    def __init__(
        self,
        where: dict[str, Placement | str],
        calls: dict[float, Callable[[DataCenter], Work] | list[Callable[[DataCenter], Work]]] | None = None,
    ) -> None:
        self.where = where
        self.calls = dict(calls or {})
        self.asked: list[tuple[float, frozenset[int]]] = []  # (time, locked) of every `work` call
        self.finished_at: list[float] = []
        self.departed: list[tuple[str, float]] = []

    def arrive(self, dc: DataCenter, vm: VmSpec, now: float, locked: frozenset[int]):
        w = self.where[vm.id]
        if w == "defer":
            return Deferred("scripted")
        if w == "reject":
            return Rejection("scripted")
        return Placed(w)

    def depart(self, dc: DataCenter, vm_id: str, now: float) -> None:
        self.departed.append((vm_id, now))

    def next_check(self, now: float) -> float | None:
        later = [t for t in self.calls if t >= now]
        return min(later) if later else None

    def work(self, dc: DataCenter, now: float, locked: frozenset[int] = frozenset()) -> Work | None:
        self.asked.append((now, locked))
        make = self.calls.get(now)
        if isinstance(make, list):  # several calls at one check: one per ask
            make = make.pop(0) if make else None
        else:
            self.calls.pop(now, None)
        return make(dc) if make else None

    def finished(self, dc: DataCenter, work: Work, now: float) -> None:
        self.finished_at.append(now)

    def counters(self) -> dict[str, float]:
        return {}


def at(gpu: int, start: int = 0) -> Placement:
    return Placement(0, (GiSlot(gpu, start),))


def run(requests: list[Request], policy: Scripted, warmup_h: float = 1, measure_h: float = 4, **kw):
    sim = Simulation(one_pm(), requests, policy, warmup_h * H, measure_h * H, debug_check=True, **kw)
    return sim, sim.run()


# Scenario A, window [1 h, 5 h]:
#   a: 3g.20gb (12 cores, 48 GB) arrives 0.5 h, runs 2 h (leaves 2.5 h), GPU 0 start 4
#   b: 7g.40gb (28 cores, 112 GB) arrives 3 h, runs 10 h (past the end), GPU 1
#   c: 2x 7g.40gb (16 slices) arrives 3.5 h, rejected
# PM power (SPECpower curve, linear): 15% load → 196.8 + 0.5·(224.7−196.8) = 210.75 W;
#   35% → 251.5 + 0.5·(279.4−251.5) = 265.45 W.  GPU: 3/7 of compute → 50 + 200·3/7 = 135.714 W.
#   [1, 2.5): 210.75 + 135.714 + 50 (idle GPU) = 396.464 W; [2.5, 3): PM off; [3, 5): 265.45 + 50 + 250.
A_POWER_1 = 210.75 + (50 + 200 * 3 / 7) + 50
A_POWER_2 = 265.45 + 50 + 250
A_ENERGY_WH = A_POWER_1 * 1.5 + A_POWER_2 * 2.0
A_GPU_HOURS = 3 / 7 * 1.5 + 1.0 * 2.0


def scenario_a() -> tuple[list[Request], Scripted]:
    reqs = [
        Request(vm("a", "3g.20gb"), 0.5 * H, 2 * H),
        Request(vm("b", "7g.40gb"), 3 * H, 10 * H),
        Request(vm("c", "7g.40gb", "7g.40gb"), 3.5 * H, 1 * H),
    ]
    return reqs, Scripted({"a": at(0, 4), "b": at(1), "c": "reject"})


def test_hand_computed_scenario_metrics() -> None:
    reqs, policy = scenario_a()
    _, res = run(reqs, policy)
    m = res.metrics
    assert m["acceptance"] == pytest.approx(
        8 / 24
    )  # b's 8 slices admitted of b + c's 24; a arrived in warm-up
    assert m["active_pms"] == pytest.approx(3.5 / 4)  # on during [1, 2.5) and [3, 5)
    assert m["active_gpus"] == pytest.approx(3.5 / 4)  # one GPU during the same spans
    assert m["packing_density"] == pytest.approx((4 * 1.5 + 8 * 2) / (8 * 1.5 + 8 * 2))  # 22/28
    assert m["energy_mwh"] == pytest.approx(A_ENERGY_WH / 1e6)  # 1725.6 Wh
    assert m["energy_kwh_per_gpu_hour"] == pytest.approx(A_ENERGY_WH / 1e3 / A_GPU_HOURS)
    assert m["switch_ons_per_hour"] == pytest.approx(1 / 4)  # off at 2.5 h, on again at 3 h
    assert m["migrations_per_hour"] == 0 and m["calls_per_hour"] == 0
    assert m["mean_wait_s"] == 0 and m["median_call_s"] is None
    assert policy.departed == [("a", 2.5 * H)]


def test_power_model_matches_the_hand_values() -> None:
    pms = one_pm()
    dc = DataCenter(pms)
    power = PowerModel(pms)
    assert power.pm_power_w(dc, 0) == 0  # an empty PM is off
    dc.place(vm("a", "3g.20gb"), at(0, 4))
    assert power.pm_power_w(dc, 0) == pytest.approx(A_POWER_1)
    assert gpu_power_w(33, 165, 4, 4) == 165 and gpu_power_w(33, 165, 0, 4) == 33  # A30 bounds


def test_switch_on_is_sampled_once_a_minute() -> None:
    # The PM is off for 30 s between two samples (10 min and 10.5 min): no sample sees it off.
    reqs = [
        Request(vm("a", "1g.5gb"), 0.0, 600.0 + 10),
        Request(vm("b", "1g.5gb"), 600.0 + 40, 2 * H),
    ]
    _, res = run(reqs, Scripted({"a": at(0), "b": at(0)}), warmup_h=0, measure_h=1)
    assert res.metrics["switch_ons_per_hour"] == pytest.approx(
        1.0
    )  # only the first switch-on (sample at 60 s)


# A move of a 7g.40gb inside one PM: its 40 GB of GPU memory copied at 12.5 Gbit/s (25.6 s), one GI
# created and one destroyed (1 s each, models/gpus/A100-40GB.toml).
INTRA_7G_S = 40e9 * 8 / 12.5e9 + 2.0


def test_migration_and_call_accounting() -> None:
    # b (7g.40gb) runs on GPU 1 from 2 h; a call at 4 h solves for 30 s (modeled), then its plan moves
    # b to GPU 0, which the move holds (busy) while it runs.
    reqs = [Request(vm("b", "7g.40gb"), 2 * H, 10 * H)]

    def move(dc: DataCenter) -> Work:
        return Work("consolidation", frozenset({0}), {"b": at(0)}, wall_s=99.0, modeled_s=30.0)

    policy = Scripted({"b": at(1)}, {4 * H: move})
    sim, res = run(reqs, policy, deterministic=True)
    m = res.metrics
    assert m["migrations_per_hour"] == pytest.approx(1 / 4)
    assert m["migrated_gb_per_hour"] == 0  # a move inside a PM copies nothing over the network
    assert m["calls_per_hour"] == pytest.approx(1 / 4) and m["median_call_s"] == pytest.approx(30.0)
    assert policy.finished_at == [4 * H + 30]  # the call ends with its solve; its plan runs after
    assert sim.dc.placement["b"] == at(0) and not sim.dc.holds
    assert m["plan_duration_s_p50"] == pytest.approx(INTRA_7G_S)
    assert m["link_busy_share"] == 0  # no copy over the network
    # While the move runs, both GPUs are busy (GPU 0 held at 250 W instead of 50 W idle).
    held_wh = 200 * INTRA_7G_S / 3600
    assert m["energy_mwh"] == pytest.approx(((265.45 + 250 + 50) * 3 + held_wh) / 1e6)


def test_wall_time_is_used_outside_deterministic_mode() -> None:
    reqs = [Request(vm("b", "7g.40gb"), 2 * H, 10 * H)]

    def move(dc: DataCenter) -> Work:
        return Work("consolidation", frozenset({0}), {"b": at(0)}, wall_s=99.0, modeled_s=30.0)

    policy = Scripted({"b": at(1)}, {4 * H: move})
    run(reqs, policy, deterministic=False)
    assert policy.finished_at == [4 * H + 99]


def test_deferred_request_waits_for_its_admission_call() -> None:
    # d arrives at 3.5 h (a multiple of 10 s); the check at the same instant runs after the arrival
    # (events.py order) and admits it after a 5-s call and a 1-s start (its GI created): wait 6 s,
    # lifetime starts at admission.
    reqs = [Request(vm("d", "1g.5gb"), 3.5 * H, 1 * H)]

    def admit(dc: DataCenter) -> Work:
        assert "d" in dc.pending
        return Work("admission", frozenset({0}), {"d": at(0)}, admitted=("d",), modeled_s=5.0)

    policy = Scripted({"d": "defer"}, {3.5 * H: admit})
    _, res = run(reqs, policy, deterministic=True)
    assert res.metrics["mean_wait_s"] == pytest.approx(6.0)
    assert res.metrics["plan_wait_s"] == pytest.approx(6.0)
    assert res.metrics["acceptance"] == 1.0
    assert policy.departed == [("d", 3.5 * H + 6 + 1 * H)]


def test_rejected_pending_and_departure_during_a_call() -> None:
    # e is pending and rejected by the call; f departs while the call that moves it runs.
    reqs = [Request(vm("f", "1g.5gb"), 1.5 * H, 0.5 * H), Request(vm("e", "7g.40gb"), 1.9 * H, H)]

    def call(dc: DataCenter) -> Work:
        return Work("admission", frozenset({0}), {"f": at(1)}, rejected=("e",), modeled_s=0.5 * H)

    policy = Scripted({"f": at(0), "e": "defer"}, {1.9 * H: call})
    sim, res = run(reqs, policy, deterministic=True)
    assert res.metrics["acceptance"] == pytest.approx(1 / 9)  # f's 1 slice of f + e = 1 + 8
    assert res.metrics["migrations_per_hour"] == 0  # f left before the plan applied
    assert not sim.dc.pending and not sim.dc.vms


def test_a_call_solving_holds_nothing() -> None:
    # A call solves from 1 h to 1.5 h on PM 0: g arrives meanwhile and goes to PM 0 all the same.
    reqs = [Request(vm("a", "1g.5gb"), 1.0 * H, H), Request(vm("g", "1g.5gb"), 1.1 * H, H)]

    def call(dc: DataCenter) -> Work:
        return Work("consolidation", frozenset({0}), {}, modeled_s=0.5 * H)

    policy = Scripted({"a": at(0), "g": at(1)}, {1.0 * H: call})
    run(reqs, policy, deterministic=True)
    assert policy.finished_at == [1.5 * H]


def two_pms() -> list[PmSpec]:
    return [PmSpec(f"pm{j}", 80_000, 512_000, (A100, A100), DEFAULT_PM_MODEL) for j in range(2)]


def test_calls_of_one_check_run_side_by_side_on_disjoint_pms() -> None:
    # x on pm0 and y on pm1 each move to GPU 0 by a call started at the 2-h check: one takes 60 s,
    # the other 600 s. While both run both PMs are locked; after the short one ends its PM takes
    # arrivals again (z at 2 h + 120 s on pm0) while the long one still holds pm1.
    reqs = [
        Request(vm("x", "7g.40gb"), 1.0 * H, 10 * H),
        Request(vm("y", "7g.40gb"), 1.0 * H, 10 * H),
        Request(vm("z", "1g.5gb"), 2 * H + 120, 10 * H),
    ]
    short = lambda dc: Work("consolidation", frozenset({0}), {"x": at(0)}, modeled_s=60.0)  # noqa: E731
    long = lambda dc: Work(  # noqa: E731
        "consolidation", frozenset({1}), {"y": Placement(1, (GiSlot(0, 0),))}, modeled_s=600.0
    )
    policy = Scripted({"x": at(1), "y": Placement(1, (GiSlot(1, 0),)), "z": at(1, 0)}, {2 * H: [short, long]})
    sim = Simulation(two_pms(), reqs, policy, H, 4 * H, deterministic=True, debug_check=True)
    res = sim.run()
    assert [locked for t, locked in policy.asked if t == 2 * H] == [frozenset(), {0}, {0, 1}]
    assert policy.finished_at == [2 * H + 60, 2 * H + 600]
    assert sim.dc.placement["x"] == at(0) and sim.dc.placement["y"] == Placement(1, (GiSlot(0, 0),))
    assert sim.dc.placement["z"] == at(1, 0)
    assert res.calls == 2 and res.metrics["migrations_per_hour"] == pytest.approx(2 / 4)
    # No check while a call of the 2-h check runs: the next `work` comes after both ended.
    assert not [t for t, _ in policy.asked if 2 * H < t < 2 * H + 600]


def test_a_second_call_on_a_locked_pm_is_an_error() -> None:
    first = lambda dc: Work("consolidation", frozenset({0}), {}, modeled_s=60.0)  # noqa: E731
    again = lambda dc: Work("consolidation", frozenset({0, 1}), {}, modeled_s=60.0)  # noqa: E731
    policy = Scripted({}, {2 * H: [first, again]})
    with pytest.raises(SimulationError, match=r"locked PMs \[0\]"):
        Simulation(two_pms(), [], policy, H, 4 * H, deterministic=True).run()


def test_metrics_stay_finite_with_no_requests() -> None:
    _, res = run([], Scripted({}))
    assert res.metrics["active_pms"] == 0 and res.metrics["energy_mwh"] == 0
    assert res.metrics["acceptance"] is None and res.metrics["packing_density"] is None
    assert all(v is None or math.isfinite(v) for v in res.metrics.values())


def test_a_policy_that_asks_again_without_work_is_stopped() -> None:
    class Eager(Scripted):
        def next_check(self, now: float) -> float | None:
            return now  # would loop forever at one instant

    with pytest.raises(SimulationError, match="another check"):
        run([Request(vm("a", "1g.5gb"), 1.0 * H, H)], Eager({"a": at(0)}))


def test_migration_between_pms_copies_ram_and_gi_memory() -> None:
    # Two PMs; b (7g.40gb: 28 cores, 112 GB RAM) moves from pm0 to pm1 at 2 h: 112 + 40 = 152 GB.
    pms = [*one_pm(), PmSpec("pm1", 80_000, 512_000, (A100, A100), DEFAULT_PM_MODEL)]
    reqs = [Request(vm("b", "7g.40gb"), 1.5 * H, 10 * H)]

    def move(dc: DataCenter) -> Work:
        return Work("consolidation", frozenset({0, 1}), {"b": Placement(1, (GiSlot(0, 0),))}, modeled_s=60.0)

    policy = Scripted({"b": at(0)}, {2 * H: move})
    sim = Simulation(pms, reqs, policy, 1 * H, 4 * H, deterministic=True, debug_check=True)
    m = sim.run().metrics
    move_s = 152e9 * 8 / 12.5e9 + 2.0  # the copy over both links, one GI created and one destroyed
    assert m["migrations_per_hour"] == pytest.approx(1 / 4)
    assert m["migrated_gb_per_hour"] == pytest.approx(152 / 4)
    # One PM from 1.5 h on, two while the move runs: pm1 is on from its start (the move holds it).
    assert m["active_pms"] == pytest.approx((3.5 * H + move_s) / (4 * H))
    assert m["switch_ons_per_hour"] == pytest.approx(2 / 4)  # pm0 at 1.5 h, pm1 at 2 h + 60 s
    assert m["link_busy_share"] == pytest.approx(2 * move_s / (2 * 4 * H))  # both PMs' links
