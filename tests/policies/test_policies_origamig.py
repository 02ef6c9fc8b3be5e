"""OrigaMIG: hand-made scenarios per rule (paper §5, docs/policies.md) and its three guarantees (§5.5)."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from origamig.bilp import Limits, solve_region
from origamig.call.admission_neighborhood import select_admission
from origamig.call.consolidation_neighborhood import (
    Consolidation,
    select_consolidation,
    source_worth_emptying,
)
from origamig.call.decision import Decision, Status, parking_cost, referee
from origamig.call.fit_counts import fits_counts
from origamig.call.neighborhood_bounds import Bounds
from origamig.cluster.catalog import default_catalog
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import GiSlot, Placement, PmSpec, VmSpec, Weights, cores_to_m, gb_to_mb
from origamig.errors import UserError
from origamig.judge.check import check
from origamig.judge.objective import evaluate
from origamig.plan.steps import MoveRecord, Plan, PlanCost
from origamig.policies.arrival_rule import first_fit
from origamig.policies.base import Deferred, Placed, Rejection, make_policy
from origamig.policies.optimizer.call_work import run_call
from tests.profiles import examples

CAT = default_catalog()
A100 = CAT.gpu("A100-40GB")
A30 = CAT.gpu("A30-24GB")
LIMITS = Limits(time_limit_s=20.0, threads=1)


def pm(name: str, gpus=(A100,), cpu: float = 80, ram: float = 512) -> PmSpec:
    return PmSpec(name, cores_to_m(cpu), gb_to_mb(ram), tuple(gpus))


def vm(name: str, *profiles: str, model=A100, cpu: float | None = None, ram: float | None = None) -> VmSpec:
    profs = tuple(model.profile(p) for p in profiles)
    slices = sum(p.compute_slices for p in profs)
    return VmSpec(
        name,
        cores_to_m(4 * slices if cpu is None else cpu),
        gb_to_mb(16 * slices if ram is None else ram),
        profs,
    )


def put(dc: DataCenter, v: VmSpec, j: int, *slots: tuple[int, int]) -> None:
    dc.place(v, Placement(j, tuple(GiSlot(g, z) for g, z in slots)))


def apply_work(dc: DataCenter, work) -> None:
    """What the simulator does with a Work: apply the target, drop rejected pending VMs."""
    if work.applied:
        dc.apply_placement(work.target)
    for v in work.rejected:
        dc.pending.pop(v, None)


def fig1c_state() -> DataCenter:
    """Paper Fig. 1(c): 3g.20gb at 0 and 1g.5gb at 4, 5, 6 leave slice 7, where no 1g.5gb may start.

    pm1 is a small PM (16 cores): it can take the 12-core 3g.20gb VM for a while (parking) but
    not the 40-core pending VM. So first fit rejects the pending VM everywhere.
    """
    dc = DataCenter([pm("pm0"), pm("pm1", cpu=16, ram=128)])
    put(dc, vm("a", "3g.20gb"), 0, (0, 0))
    for name, z in (("b", 4), ("c", 5), ("d", 6)):
        put(dc, vm(name, "1g.5gb"), 0, (0, z))
    return dc


def test_first_fit_rejects_the_fig1c_request_but_origamig_defers_it():
    dc = fig1c_state()
    new = vm("e", "1g.5gb", cpu=40, ram=16)
    assert isinstance(first_fit(dc, new, frozenset()), Rejection)
    policy = make_policy("origamig", solver="highs", threads=1)
    assert isinstance(policy.arrive(dc, new, 0.0, frozenset()), Deferred)


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
def test_admission_call_rearranges_fig1c_and_admits(solver):
    dc = fig1c_state()
    new = vm("e", "1g.5gb", cpu=40, ram=16)
    dc.add_pending(new)
    policy = make_policy("origamig", solver=solver, threads=1, time_limit_s=20)
    work = policy.work(dc, 10.0)
    assert work is not None and work.kind == "admission"
    assert work.applied and work.admitted == ("e",)
    # The rearrangement needs the 3g.20gb VM parked (a cycle with the three 1g.5gb): one parking move.
    assert work.plan.cost.parking_intra + work.plan.cost.parking_inter == 1
    apply_work(dc, work)
    assert check(dc) == []
    assert "e" in dc.placement and not dc.pending
    # Everything ends on pm0, compacted: the 3g.20gb at start 4, four 1g.5gb at 0..3.
    assert dc.occupancy(0, 0) == 0b1111_1111
    assert not dc.is_active(1)


def consolidation_state(extra_on_second: bool = False) -> DataCenter:
    """Two A100 PMs, each with one small VM: emptying one saves b + e = 70 for two moves' 2δ = 20."""
    dc = DataCenter([pm("pm0"), pm("pm1")])
    put(dc, vm("a", "1g.5gb"), 0, (0, 0))
    put(dc, vm("b", "1g.5gb"), 1, (0, 0))
    if extra_on_second:
        put(dc, vm("c", "2g.10gb"), 1, (0, 2))
    return dc


def test_consolidation_empties_a_pm_when_worth_it():
    dc = consolidation_state()
    assert dc.gamma("100") == 1  # two active GPUs for 2 slices of placed GIs
    policy = make_policy("origamig", solver="highs", threads=1)
    work = policy.work(dc, 10.0)
    assert work is not None and work.kind == "consolidation" and work.applied
    apply_work(dc, work)
    assert check(dc) == [] and dc.active_pms == 1


def test_consolidation_not_done_when_migrations_cost_more_than_the_pm():
    # δ = 40: moving a VM between PMs costs 2δ = 80 > b + e = 70, so no call empties a PM.
    dc = consolidation_state()
    before = dict(dc.placement)
    policy = make_policy("origamig", solver="highs", threads=1, delta=40)
    work = policy.work(dc, 10.0)
    if work is not None:
        assert not work.applied
        apply_work(dc, work)
        policy.finished(dc, work, 10.0)
    assert dc.placement == before
    # ... and the class is now silenced until Γ grows or a VM leaves: the next check makes no call.
    assert policy.work(dc, 20.0) is None


def test_source_filter_and_neighborhood_bounds():
    dc = consolidation_state(extra_on_second=True)
    nb = select_consolidation(dc, "100", Weights(), Bounds(m_max=16, n_max=64))
    # Sources fewest VMs first: pm0 (1 VM) is the source, pm1 the receiver.
    assert nb.pms[0] == 0 and set(nb.pms) == {0, 1}
    # δ = 40: no source is worth emptying. Algorithm 1 as written still fills M̂ with the receivers;
    # the earlier reading makes no call.
    costly = Weights(migration=40)
    assert set(select_consolidation(dc, "100", costly, Bounds(), reading=Consolidation.FILL).pms) == {0, 1}
    assert select_consolidation(dc, "100", costly, Bounds(), reading=Consolidation.SOURCES).pms == ()


def busy_a30_state(pms: int = 2) -> DataCenter:
    """A30 PMs, each with two 2g.12gb GIs on different GPUs (at 2 on GPU 0, at 0 on GPU 1) and three
    VMs without GIs. Emptying a PM is not worth it (b + 2e = 90 < 5 · 2δ + CF 6), but moving the GI
    of GPU 1 to start 0 of GPU 0 switches GPU 1 off: +e 20 − δ 10 − CF lost (3 + 3) = +4."""
    dc = DataCenter([pm(f"pm{j}", gpus=(A30, A30)) for j in range(pms)])
    for j in range(pms):
        put(dc, vm(f"x{j}", "2g.12gb", model=A30), j, (1, 0))
        put(dc, vm(f"y{j}", "2g.12gb", model=A30), j, (0, 2))
        for n in range(3):
            put(dc, VmSpec(f"c{j}{n}", cores_to_m(4), gb_to_mb(16), ()), j)
    return dc


def test_consolidation_call_runs_without_a_source_worth_emptying_and_switches_off_gpus():
    dc = busy_a30_state()
    assert not any(source_worth_emptying(dc, j, Weights()) for j in range(2))
    assert dc.gamma("30") == 2
    bounds = Bounds(m_max=16, n_max=64)
    assert select_consolidation(dc, "30", Weights(), bounds, reading=Consolidation.SOURCES).pms == ()
    nb = select_consolidation(dc, "30", Weights(), bounds, reading=Consolidation.FILL)
    assert set(nb.pms) == {0, 1}  # every receiver, up to M_max
    work = make_policy("origamig", solver="highs", threads=1).work(dc, 10.0)
    assert work is not None and work.kind == "consolidation" and work.applied
    # Only moves inside a PM: on each PM one of its two GI VMs joins the other's GPU (either way).
    assert len(work.target) == 2
    for v, pl in work.target.items():
        before = dc.placement[v]
        assert v[0] in "xy" and pl.pm == before.pm and pl.gis[0].gpu != before.gis[0].gpu
    assert work.plan.cost.migrations_inter == 0 and work.plan.cost.migrations_intra == 2
    apply_work(dc, work)
    assert check(dc) == [] and dc.active_pms == 2
    assert [sum(dc.gpu_active(j, k) for k in range(2)) for j in range(2)] == [1, 1]
    # The earlier reading makes no call here.
    assert (
        make_policy("origamig", solver="highs", threads=1, consolidation=Consolidation.SOURCES).work(
            busy_a30_state(), 10.0
        )
        is None
    )


def test_consolidation_neighborhood_is_bounded_by_m_max():
    dc = busy_a30_state(pms=5)
    nb = select_consolidation(dc, "30", Weights(), Bounds(m_max=3, n_max=64))
    assert len(nb.pms) == 3
    nb = select_consolidation(dc, "30", Weights(), Bounds(m_max=16, n_max=12))
    assert len(nb.pms) == 2 and nb.vm_count(dc) <= 12


def test_admission_neighborhood_takes_first_pm_of_oldest_even_over_n_max():
    dc = fig1c_state()
    dc.add_pending(vm("e", "1g.5gb", cpu=40, ram=16))
    nb = select_admission(dc, ["e"], Bounds(m_max=16, n_max=1))
    # The only PM that fits e by counts is pm0 (4 VMs > N_max = 1): it is taken anyway.
    assert nb.pms[0] == 0 and nb.pending == ("e",)
    assert fits_counts(dc, dc.pending["e"], 0)


def test_admission_rejects_vm_that_fits_no_pm_even_empty():
    dc = fig1c_state()
    dc.add_pending(vm("huge", "7g.40gb", cpu=200))
    nb = select_admission(dc, ["huge"], Bounds())
    assert nb.rejected == ("huge",) and nb.pms == ()


# --- the three guarantees of §5.5, on random small states ---------------------------------------


def random_state(seed: int, n_pms: int = 3, n_vms: int = 6, n_pending: int = 2) -> DataCenter:
    """First-fit-filled A100 PMs, a third of the VMs departed, a few pending VMs."""
    rng = random.Random(seed)
    dc = DataCenter([pm(f"pm{j}", gpus=(A100, A100)) for j in range(n_pms)])
    names = [p.name for p in A100.profiles]
    placed = []
    for n in range(n_vms):
        v = vm(f"v{n}", *rng.sample(names, rng.choice([1, 2])) if rng.random() < 0.3 else [rng.choice(names)])
        fit = first_fit(dc, v, frozenset())
        if not isinstance(fit, Rejection):
            dc.place(v, fit)
            placed.append(v.id)
    for v in rng.sample(placed, len(placed) // 3):
        dc.remove(v)
    for n in range(n_pending):
        dc.add_pending(vm(f"p{n}", rng.choice(names)))
    return dc


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000))
def test_call_never_lowers_eq5_and_proved_optimal_equals_opt_on_the_neighborhood(seed):
    dc = random_state(seed)
    before_placement = dict(dc.placement)
    queue = list(dc.pending)
    nb = select_admission(dc, queue, Bounds())
    if not nb.pms:
        return
    work = run_call(dc, nb, Weights(), "highs", LIMITS)
    region_vms = [v for j in nb.pms for v in dc.vms_on(j)] + list(nb.pending)
    vms = {**dc.vms, **dc.pending}
    value_before = evaluate(dc.pms, vms, dc.placement, before_placement, Weights(), nb.pms, region_vms).value
    new = {**dc.placement, **work.target}
    value_after = evaluate(dc.pms, vms, new, before_placement, Weights(), nb.pms, region_vms).value
    assert value_after >= value_before - 1e-9  # guarantee 1: a call never lowers Eq. (5)
    if (
        work.applied
        and work.call.proved_optimal
        and work.plan.cost.parking_intra == 0
        and (work.plan.cost.parking_inter == 0)
    ):
        # Guarantee 2: the applied placement is optimal for the restricted problem — compare with
        # an independent OPT solve of the same neighborhood by the other backend.
        opt = solve_region(dc, nb.pms, nb.pending, Weights(), solver="cpsat", limits=LIMITS)
        if opt.result.proved_optimal:
            opt_value = evaluate(
                dc.pms, vms, {**dc.placement, **opt.target}, before_placement, Weights(), nb.pms, region_vms
            ).value
            assert value_after == pytest.approx(opt_value, abs=1e-6)
    apply_work(dc, work)
    assert check(dc) == []
    assert set(before_placement) <= set(dc.placement)  # running VMs are never evicted


@settings(max_examples=examples(5), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000))
def test_without_arrivals_or_departures_calls_stop_changing_the_state(seed):
    dc = random_state(seed, n_pending=0)
    policy = make_policy("origamig", solver="highs", threads=1, time_limit_s=20)
    now = 0.0
    changes = 0
    for _ in range(40):  # each applied call strictly raises Eq. (5), which takes finitely many values
        now += 10.0
        work = policy.work(dc, now)
        if work is None:
            break
        apply_work(dc, work)
        policy.finished(dc, work, now)
        changes += work.applied
        assert check(dc) == []
    else:
        pytest.fail("calls did not stop")
    assert policy.work(dc, now + 10.0) is None
    assert changes <= 40


def test_parking_costs_delta_inside_a_pm_and_two_delta_between_pms():
    dc = consolidation_state()
    moves = (
        MoveRecord("a", "pm0", "pm1", True, 1, 1.0),  # parking between PMs: 2δ
        MoveRecord("a", "pm1", "pm1", True, 0, 0.0),  # parking inside a PM: δ
        MoveRecord("a", "pm1", "pm0", False, 1, 1.0),  # the move to the target: free here
    )
    assert parking_cost(Plan((), PlanCost(), moves=moves), dc.vms, Weights()) == 30.0
    assert parking_cost(Plan((), PlanCost(), moves=moves), dc.vms, Weights(migration=4)) == 12.0


def test_decision_subtracts_parking_cost():
    dc = consolidation_state()
    nb = select_consolidation(dc, "100", Weights(), Bounds())
    target = {"a": Placement(1, (GiSlot(0, 1),))}
    before, after = referee(dc, nb.pms, nb.pending, target, Weights())
    sol = solve_region(dc, nb.pms, nb.pending, Weights(), limits=LIMITS)
    d = Decision(Status.UNCHANGED, sol, target, None, before, after, parking_cost=20.0)
    assert d.gain == pytest.approx(after.value - 20.0 - before.value)
    assert after.migration - before.migration == 20.0  # a moves to another PM: δ (m_i + ω_i)


def test_arrival_ff_places_like_first_fit():
    dc = consolidation_state()
    policy = make_policy("origamig", arrival="ff")
    new = vm("n", "2g.10gb")
    decision = policy.arrive(dc, new, 0.0, frozenset())
    assert isinstance(decision, Placed)
    assert decision.placement == first_fit(dc, new, frozenset())
    assert isinstance(policy.arrive(dc, new, 0.0, frozenset({0, 1})), Deferred)  # locked PMs


def test_arrivals_go_by_tc_rule_by_default_and_still_defer_what_fits_nowhere():
    # pm0 holds one small GI, pm1 a larger one: first fit takes pm0, TC's rule the fuller GPU on pm1.
    dc = DataCenter([pm("pm0"), pm("pm1")])
    put(dc, vm("small", "1g.5gb"), 0, (0, 6))
    put(dc, vm("large", "4g.20gb"), 1, (0, 0))
    policy = make_policy("origamig")  # arrival="tc", the default
    new = vm("n", "2g.10gb")
    decision = policy.arrive(dc, new, 0.0, frozenset())
    assert decision == make_policy("tc").arrive(dc, new, 0.0, frozenset())
    assert decision == make_policy("origamig", arrival="tc").arrive(dc, new, 0.0, frozenset())
    assert isinstance(decision, Placed) and decision.placement.pm == 1
    assert first_fit(dc, new, frozenset()).pm == 0
    paper = make_policy("origamig", arrival="ff").arrive(dc, new, 0.0, frozenset())
    assert isinstance(paper, Placed) and paper.placement.pm == 0
    assert isinstance(policy.arrive(dc, new, 0.0, frozenset({0, 1})), Deferred)  # locked: waits
    with pytest.raises(UserError, match="arrival: 'bf' is not one of ff, tc"):
        make_policy("origamig", arrival="bf")


def test_a30_class_consolidation_is_separate():
    dc = DataCenter([pm("a0", gpus=(A30, A30)), pm("a1", gpus=(A30, A30)), pm("b0")])
    put(dc, vm("x", "1g.6gb", model=A30), 0, (0, 0))
    put(dc, vm("y", "1g.6gb", model=A30), 1, (0, 0))
    put(dc, vm("z", "1g.5gb"), 2, (0, 0))
    assert dc.gamma("30") == 1 and dc.gamma("100") == 0
    nb = select_consolidation(dc, "30", Weights(), Bounds())
    assert set(nb.pms) == {0, 1}


def stuck_a100_state(pms: int = 4) -> DataCenter:
    """A100 PMs with a 4g.20gb VM on each GPU: a 4g.20gb may only start at slice 0, so no GI can move
    anywhere and no call can change anything (Γ_100 = pms). pm0 is worth emptying (the only source);
    the others also hold two VMs without GIs, which makes emptying them cost more than it saves."""
    dc = DataCenter([pm(f"pm{j}", gpus=(A100, A100)) for j in range(pms)])
    for j in range(pms):
        for k in range(2):
            put(dc, vm(f"v{j}{k}", "4g.20gb"), j, (k, 0))
        if j:
            for n in range(2):
                put(dc, VmSpec(f"c{j}{n}", cores_to_m(4), gb_to_mb(16), ()), j)
    return dc


def _calls(policy, dc: DataCenter, checks: int) -> list[frozenset[int] | None]:
    seen: list[frozenset[int] | None] = []
    for n in range(checks):
        work = policy.work(dc, 10.0 * (n + 1))
        seen.append(None if work is None else work.pms)
        if work is not None:
            assert not work.applied
            policy.finished(dc, work, 10.0 * (n + 1))
    return seen


def test_rotating_consolidation_visits_every_receiver_before_silencing_the_class():
    dc = stuck_a100_state()
    plain = _calls(make_policy("origamig", solver="highs", threads=1, m_max=2), dc, 3)
    assert plain[0] is not None and plain[1:] == [None, None]  # silenced after one unchanged call
    rotating = _calls(make_policy("origamig", solver="highs", threads=1, m_max=2, rotate=True), dc, 5)
    # One source (M_max/2 = 1) with a new receiver each time, then nothing new: silenced.
    assert rotating[3:] == [None, None]
    hoods = rotating[:3]
    assert all(h is not None and len(h) == 2 for h in hoods)
    assert all(0 in h for h in hoods) and set().union(*hoods) == {0, 1, 2, 3}
    # A departure starts the rotation over.
    policy = make_policy("origamig", solver="highs", threads=1, m_max=2, rotate=True)
    _calls(policy, dc, 4)
    dc.remove("v30")
    policy.depart(dc, "v30", 50.0)
    assert policy.work(dc, 60.0) is not None


def test_spill_lets_sources_not_kept_in_s_receive():
    dc = consolidation_state()  # two PMs, one small VM each: both are sources
    bounds = Bounds(m_max=2, n_max=64)  # at most M_max/2 = 1 source is kept
    assert select_consolidation(dc, "100", Weights(), bounds).pms == (0,)  # R holds non-sources only
    assert select_consolidation(dc, "100", Weights(), bounds, spill=True).pms == (0, 1)
    work = make_policy("origamig", solver="highs", threads=1, m_max=2, spill=True).work(dc, 10.0)
    assert work is not None and work.applied
    apply_work(dc, work)
    assert check(dc) == [] and dc.active_pms == 1


def test_a_call_proved_to_change_nothing_is_not_solved_again_on_the_same_state(monkeypatch):
    """δ = 40 makes every move cost more than it saves, so each call proves "no change". A departure
    outside the neighborhood re-enables the class on the same neighborhood in the same state: that call
    reuses the stored outcome instead of solving; a departure inside it makes a new state, solved."""
    from origamig.policies.optimizer import call_work

    solves: list[int] = []
    real_decide = call_work.decide
    monkeypatch.setattr(call_work, "decide", lambda *a, **k: solves.append(1) or real_decide(*a, **k))

    def state() -> DataCenter:
        dc = DataCenter([pm(f"pm{j}") for j in range(4)])
        for j in range(4):
            put(dc, vm(f"v{j}", "1g.5gb"), j, (0, j))
        put(dc, vm("w", "2g.10gb"), 3, (0, 4))  # pm3 has the fewest free slices: not a receiver
        return dc

    outcomes = {}
    for reuse in (True, False):
        solves.clear()
        dc = state()
        policy = make_policy("origamig", solver="highs", threads=1, delta=40, m_max=2, reuse_unchanged=reuse)
        first = policy.work(dc, 10.0)
        assert first is not None and first.pms == {0, 1} and not first.applied
        assert first.call.outcome == "no_change" and first.call.proved_optimal
        policy.finished(dc, first, 10.0)
        assert policy.work(dc, 20.0) is None  # silenced
        dc.remove("w")
        policy.depart(dc, "w", 25.0)  # outside the neighborhood: re-enables the class
        second = policy.work(dc, 30.0)
        assert second is not None and second.pms == first.pms
        assert (second.call, second.modeled_s, second.applied) == (first.call, first.modeled_s, False)
        policy.finished(dc, second, 30.0)
        dc.remove("v0")
        policy.depart(dc, "v0", 35.0)  # inside it: another state
        third = policy.work(dc, 40.0)
        assert third is not None and third.pms != first.pms
        counters = policy.counters()
        outcomes[reuse] = (len(solves), counters.get("calls_reused", 0), counters["calls"])
    assert outcomes == {True: (2, 1, 3), False: (3, 0, 3)}


def one_vm_beside_a_full_gpu() -> DataCenter:
    """pm0: one 1g.5gb (worth emptying); pm1: a GPU full of seven 1g.5gb (not worth emptying) and a
    free GPU. Alone, pm0 can change nothing; with pm1 as receiver its VM moves and pm0 switches off."""
    dc = DataCenter([pm("pm0"), pm("pm1", gpus=(A100, A100))])
    put(dc, vm("a", "1g.5gb"), 0, (0, 0))
    for z in range(7):
        put(dc, vm(f"f{z}", "1g.5gb"), 1, (0, z))
    return dc


def test_growing_neighborhood_retries_an_unchanged_call_on_more_pms_before_silencing():
    plain = make_policy("origamig", solver="highs", threads=1, m_max=1, n_max=8)
    dc = one_vm_beside_a_full_gpu()
    first = plain.work(dc, 10.0)
    assert first is not None and first.pms == frozenset({0}) and not first.applied
    assert first.call.proved_optimal
    plain.finished(dc, first, 10.0)
    assert plain.work(dc, 20.0) is None  # silenced
    growing = make_policy("origamig", solver="highs", threads=1, m_max=1, n_max=8, grow_to=2)
    dc = one_vm_beside_a_full_gpu()
    first = growing.work(dc, 10.0)
    assert first is not None and first.pms == frozenset({0}) and not first.applied
    growing.finished(dc, first, 10.0)
    second = growing.work(dc, 20.0)
    assert second is not None and second.pms == frozenset({0, 1}) and second.applied
    apply_work(dc, second)
    growing.finished(dc, second, 20.0)
    assert check(dc) == [] and dc.active_pms == 1
    assert growing.counters()["neighborhoods_grown"] == 1


def test_growing_neighborhood_doubles_up_to_its_cap_then_silences_and_starts_small_again():
    dc = stuck_a100_state(pms=4)  # no call can change anything
    policy = make_policy("origamig", solver="highs", threads=1, m_max=1, n_max=8, grow_to=4)
    hoods = _calls(policy, dc, 5)
    assert [None if h is None else len(h) for h in hoods] == [1, 2, 4, None, None]
    dc.remove("v30")
    policy.depart(dc, "v30", 60.0)  # wakes the class: its first call is small again
    work = policy.work(dc, 70.0)
    assert work is not None and len(work.pms) == 1


def test_growing_neighborhood_halves_after_a_call_stopped_by_its_budget(monkeypatch):
    from origamig.policies.optimizer import policy as module

    dc = stuck_a100_state(pms=4)
    policy = make_policy("origamig", solver="highs", threads=1, m_max=1, n_max=8, grow_to=4)
    assert [len(h) for h in _calls(policy, dc, 2)] == [1, 2]
    real = module.run_call

    def unproved(*args, **kwargs):
        work = real(*args, **kwargs)
        return replace(work, call=replace(work.call, proved_optimal=False))

    monkeypatch.setattr(module, "run_call", unproved)
    work = policy.work(dc, 30.0)  # the 4-PM call stops at its budget
    assert work is not None and len(work.pms) == 4
    policy.finished(dc, work, 30.0)
    assert policy.work(dc, 40.0) is None  # silenced as any unchanged call
    dc.remove("v30")
    policy.depart(dc, "v30", 50.0)
    work = policy.work(dc, 60.0)
    assert work is not None and len(work.pms) == 2  # half of 4, not back to 1
    with pytest.raises(UserError, match="grow_to: 8 must be an integer ≥ m_max or null"):
        make_policy("origamig", m_max=16, grow_to=8)


def _side_by_side(policy, dc: DataCenter, now: float) -> list:
    """The calls one check starts, as the simulator asks for them: again and again, with the PMs of
    the calls started so far locked, until the policy returns None."""
    works, locked = [], frozenset()
    while (work := policy.work(dc, now, locked)) is not None:
        assert not work.pms & locked
        works.append(work)
        locked |= work.pms
    return works


@pytest.mark.parametrize("solve_workers", [1, 2])  # 2: chosen in turn, solved together in processes
def test_calls_side_by_side_cover_a_class_on_disjoint_pms_and_silence_it_together(solve_workers: int):
    dc = stuck_a100_state(pms=4)  # no call can change anything
    single = make_policy("origamig", solver="highs", threads=1, m_max=2)
    assert [len(w.pms) for w in _side_by_side(single, dc, 10.0)] == [2]  # one call per check
    policy = make_policy(
        "origamig", solver="highs", threads=1, m_max=2, calls_per_step=4, solve_workers=solve_workers
    )
    first, second = _side_by_side(policy, dc, 10.0)  # the class has 4 PMs: two calls of 2, then none
    assert first.pms | second.pms == frozenset(range(4)) and not first.pms & second.pms
    assert policy.counters()["calls_side_by_side"] == 1
    policy.finished(dc, first, 10.5)
    assert "100" not in policy.triggers.disabled  # the class's other call still runs
    policy.finished(dc, second, 11.0)
    assert "100" in policy.triggers.disabled  # both changed nothing: silenced
    assert _side_by_side(policy, dc, 20.0) == []


def test_a_class_stays_awake_when_one_of_its_side_by_side_calls_changed_something():
    dc = stuck_a100_state(pms=4)
    policy = make_policy("origamig", solver="highs", threads=1, m_max=2, calls_per_step=2)
    first, second = _side_by_side(policy, dc, 10.0)
    policy.finished(dc, replace(first, applied=True), 10.5)  # as if the first call had moved a VM
    policy.finished(dc, second, 11.0)
    assert "100" not in policy.triggers.disabled
    assert len(_side_by_side(policy, dc, 20.0)) == 2


@pytest.mark.parametrize("solve_workers", [1, 2])
def test_one_admission_call_per_check_then_consolidation_beside_it(solve_workers: int):
    dc = stuck_a100_state(pms=4)
    dc.add_pending(vm("p", "7g.40gb"))  # fits no PM as they are: an admission call
    policy = make_policy(
        "origamig", solver="highs", threads=1, m_max=2, calls_per_step=3, solve_workers=solve_workers
    )
    admission, consolidation = _side_by_side(policy, dc, 10.0)  # the third is never an admission call
    assert admission.kind == "admission" and consolidation.kind == "consolidation"
    assert admission.pms | consolidation.pms == frozenset(range(4))  # M_max = 2 each, disjoint
    single = make_policy("origamig", solver="highs", threads=1, m_max=2)
    assert [w.kind for w in _side_by_side(single, dc, 10.0)] == ["admission"]  # the paper's: Q first, alone


def test_calls_per_step_is_checked():
    with pytest.raises(UserError, match="calls_per_step: 0 must be a positive integer"):
        make_policy("origamig", calls_per_step=0)
    with pytest.raises(UserError, match="solve_workers: 0 must be a positive integer"):
        make_policy("origamig", solve_workers=0)
    with pytest.raises(UserError, match="calls_per_step: 2 cannot be combined with grow_to or rotate"):
        make_policy("origamig", calls_per_step=2, rotate=True)


def test_call_time_scale_multiplies_each_call_s_modeled_time_and_nothing_else():
    # The same call on the same state, deterministic (100 B&B nodes): the scaled one lasts 7 times
    # as long and decides the same.
    outcomes = []
    for scale in (1.0, 7.0):
        dc = consolidation_state()
        policy = make_policy(
            "origamig", solver="highs", threads=1, deterministic=True, work_limit=100, call_time_scale=scale
        )
        work = policy.work(dc, 10.0)
        assert work is not None and work.applied
        outcomes.append(work)
    plain, scaled = outcomes
    assert plain.modeled_s > 0 and scaled.modeled_s == pytest.approx(7 * plain.modeled_s)
    assert (scaled.target, scaled.call) == (plain.target, plain.call)
    for bad in ({"call_time_scale": 0}, {"call_time_scale": 2.0, "deterministic": False}):
        with pytest.raises(UserError, match="call_time_scale"):
            make_policy("origamig", **bad)
