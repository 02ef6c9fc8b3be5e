"""GRMU (`policies/grmu/`): baskets and their limits, the defragmentation of one GPU, the inter-GPU
moves that make room, periodic consolidation — by hand — and its invariants over random streams.

A100-40GB profiles (memory slices, starts): 1g.5gb (1, 0–6), 1g.10gb (2, 0,2,4,6), 2g.10gb (2, 0,2,4),
3g.20gb (4, 0,4), 4g.20gb (4, 0), 7g.40gb (8, 0). Large (≥ half the GPU's 8 slices): 3g.20gb,
4g.20gb, 7g.40gb. PMs: 80 cores, 512 GB, two A100s unless said.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.mig import geometry
from origamig.cluster.records import VmSpec
from origamig.errors import UserError
from origamig.judge.check import check, check_counters
from origamig.judge.replay import replay_plan
from origamig.policies.base import Deferred, Placed, Rejection, Work, make_policy
from origamig.policies.grmu import Grmu
from origamig.policies.grmu.baskets import LARGE, SMALL, Baskets
from origamig.policies.grmu.defrag import repack
from origamig.sim.scenario import SimConfig
from origamig.study.runner import RunSpec, run_one
from tests.builders import at, datacenter, model, pm, vm
from tests.profiles import examples
from tests.strategies import gpu_models, random_states, vm_specs

NOW = 0.0
H = 3600.0


def _run_call(dc: DataCenter, policy: Grmu, now: float = NOW) -> Work:
    """Ask for a call (there must be one) and carry it out (`_carry_out`)."""
    work = policy.work(dc, now)
    assert work is not None
    return _carry_out(dc, policy, work, now)


def _carry_out(dc: DataCenter, policy: Grmu, work: Work, now: float) -> Work:
    """Check a call's plan with the independent replay, apply it as the runtime does, tell the policy."""
    if work.plan is not None:
        replay = replay_plan(dc.pms, dc.vms, dc.placement, dc.pending, work.plan.steps, target=work.target)
        assert replay.ok, replay.reason
    for v in work.rejected:
        dc.drop_pending(v)
    dc.apply_placement(work.target)
    assert check(dc) == [] and check_counters(dc) == []
    policy.finished(dc, work, now + work.modeled_s)
    return work


# --- baskets ----------------------------------------------------------------------------------
def test_a_large_vm_is_refused_when_its_basket_is_at_its_limit_though_a_gpu_is_idle() -> None:
    big = vm("big", ["7g.40gb"])
    dc = datacenter([pm("pm0")], [(big, at(0, (0, 0)))])
    new = vm("new", ["3g.20gb"])
    # First fit takes the idle GPU 1.
    assert make_policy("ff").arrive(dc, new, NOW, frozenset()) == Placed(at(0, (1, 4)))
    # With large_quota 0.5 the large basket may hold ⌈0.5 · 2⌉ = 1 GPU, and GPU 0 is it: GPU 1 may
    # not join it, and neither repacking GPU 0 nor moving `big` elsewhere makes room.
    grmu = Grmu(large_quota=0.5)
    refused = grmu.arrive(dc, new, NOW, frozenset())
    assert isinstance(refused, Rejection)
    assert "capacity limit" in refused.reason and refused.free["large_basket_gpus"] == "1/1"
    # The idle GPU still takes a small GI: the small basket has room.
    assert grmu.arrive(dc, vm("small", ["1g.5gb"]), NOW, frozenset()) == Placed(at(0, (1, 6)))
    assert grmu.counters()["rejected_by_limit"] == 1 and grmu.counters()["admitted"] == 1
    # A limit of both GPUs lets the large basket grow.
    assert Grmu(large_quota=1.0).arrive(dc, new, NOW, frozenset()) == Placed(at(0, (1, 4)))


def test_a_gi_goes_only_to_a_gpu_of_its_basket() -> None:
    large, small = vm("large", ["4g.20gb"]), vm("small", ["1g.5gb"])
    dc = datacenter([pm("pm0")], [(large, at(0, (0, 0))), (small, at(0, (1, 6)))])
    new = vm("new", ["1g.5gb"])
    # GPU 0 (large basket) has slices 4–7 free and first fit takes them; GRMU keeps the small GI
    # with the small one, on GPU 1 (default start beside slice 6: 4).
    assert make_policy("ff").arrive(dc, new, NOW, frozenset()) == Placed(at(0, (0, 6)))
    assert Grmu().arrive(dc, new, NOW, frozenset()) == Placed(at(0, (1, 4)))
    # And a large GI does not join the small GPU, though its slices 0–3 are free: it opens nothing
    # better than GPU 0's 3g.20gb start 4.
    assert Grmu().arrive(dc, vm("mid", ["3g.20gb"]), NOW, frozenset()) == Placed(at(0, (0, 4)))


def test_a_placement_that_opens_no_gpu_beats_the_first_pm() -> None:
    large, small = vm("large", ["4g.20gb"]), vm("small", ["1g.5gb"])
    dc = datacenter([pm("pm0"), pm("pm1")], [(large, at(0, (0, 0))), (small, at(1, (0, 6)))])
    new = vm("new", ["1g.5gb"])
    # pm0 could only take it on its idle GPU 1 (its GPU 0 is large); pm1's small GPU has room.
    assert Grmu().arrive(dc, new, NOW, frozenset()) == Placed(at(1, (0, 4)))
    # With pm1 locked, pm0's idle GPU joins the small basket.
    assert Grmu().arrive(dc, new, NOW, frozenset({1})) == Placed(at(0, (1, 6)))


def test_basket_limits_round_up_over_the_gpus_of_the_class() -> None:
    dc = datacenter([pm("pm0"), pm("pm1", gpus=["A100-40GB", "A30-24GB"])])
    rule = Baskets(large_quota=0.4, small_quota=1.0)
    assert rule.limits(dc, "100") == (2, 3)  # ⌈0.4 · 3⌉ A100s
    assert rule.limits(dc, "30") == (1, 1)
    a30 = model("A30-24GB")
    assert rule.of_gi(a30.profile("2g.12gb"), a30.memory_slices) == LARGE  # 2 of 4 slices
    assert rule.of_gi(a30.profile("1g.6gb"), a30.memory_slices) == SMALL


# --- intra-GPU defragmentation ------------------------------------------------------------------
def _four_singles() -> DataCenter:
    """One A100 with a 1g.5gb at slices 0, 2, 4 and 6: four slices free, no two of them adjacent."""
    singles = [(vm(f"c{z}", ["1g.5gb"]), at(0, (0, z))) for z in (0, 2, 4, 6)]
    return datacenter([pm("pm0", gpus=["A100-40GB"])], singles)


def test_defragmenting_one_gpu_admits_a_vm_that_fit_nowhere() -> None:
    dc = _four_singles()
    new = vm("new", ["2g.10gb"])
    assert isinstance(make_policy("ff").arrive(dc, new, NOW, frozenset()), Rejection)
    grmu = Grmu()
    decision = grmu.arrive(dc, new, NOW, frozenset())
    assert isinstance(decision, Deferred)
    dc.add_pending(new)
    assert grmu.next_check(NOW) == NOW  # the repack is asked for at once
    before = dict(dc.placement)
    work = _run_call(dc, grmu)
    assert work.kind == "admission" and work.admitted == ("new",) and work.rejected == ()
    moved = {v: pl for v, pl in work.target.items() if v in before}
    assert len(moved) == 1  # one 1g.5gb shifted frees two adjacent slices
    ((v, pl),) = moved.items()
    assert pl.pm == 0 and pl.gis[0].gpu == 0 and pl.gis[0].start != before[v].gis[0].start
    assert work.plan is not None and (work.plan.cost.migrations_intra, work.plan.cost.migrations_inter) == (
        1,
        0,
    )
    assert dc.placement["new"].pm == 0 and not dc.pending
    counts = grmu.counters()
    assert counts["deferred_defrag"] == 1 and counts["admitted"] == 1
    assert counts["migrations"] == counts["migrations_admission"] == 1
    assert grmu.next_check(NOW) == 900.0  # nothing waits: the first periodic consolidation is next
    assert Grmu(consolidate=False).next_check(NOW) is None  # arrival stages only: no periodic work


def test_a_check_starts_one_call_even_when_the_call_holds_no_pm() -> None:
    dc = _four_singles()
    new = vm("new", ["2g.10gb"])
    grmu = Grmu(consolidate=False)
    assert isinstance(grmu.arrive(dc, new, NOW, frozenset()), Deferred)
    dc.add_pending(new)
    for z in (1, 3, 5):  # the GPU fills up meanwhile: one free slice is left, no repack can help
        dc.place(vm(f"late{z}", ["1g.5gb"]), at(0, (0, z)))
    # The call can only reject the VM, so it holds no PM; the runtime asks again with the PMs of the
    # calls started so far locked — none (`runtime.collect_calls`) — and must get no second call.
    work = grmu.work(dc, NOW)
    assert work is not None and work.rejected == ("new",) and work.pms == frozenset()
    assert grmu.work(dc, NOW, work.pms) is None
    grmu.finished(dc, work, NOW)
    assert grmu.counters()["rejected"] == 1 and grmu.next_check(NOW) is None


def test_repack_moves_the_fewest_gis_in_an_order_that_needs_no_parking() -> None:
    geo = geometry(model())
    one, two, ten = (model().profile(n) for n in ("1g.5gb", "2g.10gb", "1g.10gb"))
    singles = tuple((one, z) for z in (0, 2, 4, 6))
    # A 2g.10gb and a 1g.10gb fill the four free slices 1, 3, 5, 7 only as two aligned pairs: moving one
    # single leaves at most one pair, so two singles move (no 1g.5gb may start at 7).
    packed = repack(geo, 0, singles, (two, ten))
    assert packed is not None
    starts, new = packed
    assert sum(a != b for a, (_, b) in zip(starts, singles, strict=True)) == 2
    masks = [one.mask(z) for z in starts] + [p.mask(z) for p, z in zip((two, ten), new, strict=True)]
    assert sum(bin(m).count("1") for m in masks) == bin(_union(masks)).count("1") == 8
    assert _runs_in_turn(singles, starts)
    # A pinned single at 6 stays (the 1g.10gb loses start 6): slice 7 cannot be used, so no repack.
    assert repack(geo, one.mask(6), singles[:3], (two, ten)) is None
    # 1g.10gb at 0 and 2, 2g.10gb at 4, 1g.5gb at 6: only slice 7 is free, and no 1g.5gb starts there.
    # A packing with one more 1g.5gb exists (a 1g.10gb to 6, the single to where it was, the new one
    # beside it), but it trades two GIs' places: without a parking place it cannot run.
    gis = ((ten, 0), (ten, 2), (two, 4), (one, 6))
    items = [p for p, _ in gis] + [one]
    assert any(
        sum(p.memory_slices for p in items)
        == bin(_union([p.mask(z) for p, z in zip(items, zs, strict=True)])).count("1")
        for zs in itertools.product(*(p.starts for p in items))
    )
    assert repack(geo, 0, gis, (one,)) is None


def _runs_in_turn(movable: tuple, starts: tuple[int, ...]) -> bool:
    """Some order of the moves lands each GI on slices free at its turn (its own old ones counted
    as used): brute force over the orders."""
    moving = [n for n, ((_, old), z) in enumerate(zip(movable, starts, strict=True)) if z != old]
    for order in itertools.permutations(moving):
        at = [z for _, z in movable]
        for n in order:
            p = movable[n][0]
            used = _union([q.mask(z) for (q, _), z in zip(movable, at, strict=True)])
            if used & p.mask(starts[n]):
                break
            at[n] = starts[n]
        else:
            return True
    return not moving


def _union(masks: list[int]) -> int:
    out = 0
    for m in masks:
        out |= m
    return out


@settings(max_examples=examples(60), deadline=None)
@given(data=st.data())
def test_repack_moves_no_more_gis_than_any_packing_that_runs_in_turn(data: st.DataObject) -> None:
    m = data.draw(gpu_models())
    geo = geometry(m)
    movable: list[tuple] = []
    occ = 0
    for _ in range(data.draw(st.integers(0, 4))):
        p = data.draw(st.sampled_from(m.profiles))
        z = data.draw(st.sampled_from(p.starts))
        if not occ & p.mask(z):
            movable.append((p, z))
            occ |= p.mask(z)
    new = tuple(data.draw(st.lists(st.sampled_from(m.profiles), min_size=1, max_size=2)))
    got = repack(geo, 0, tuple(movable), new)
    # Every packing of all the GIs whose moves run in turn, by brute force: the fewest GIs moved.
    items = [p for p, _ in movable] + list(new)
    best = None
    for starts in itertools.product(*(p.starts for p in items)):
        masks = [p.mask(z) for p, z in zip(items, starts, strict=True)]
        if sum(bin(x).count("1") for x in masks) != bin(_union(masks)).count("1"):
            continue
        if _runs_in_turn(tuple(movable), starts[: len(movable)]):
            moves = sum(z != old for z, (_, old) in zip(starts, movable, strict=False))
            best = moves if best is None else min(best, moves)
    if best is None:
        assert got is None
        return
    assert got is not None
    starts, new_starts = got
    masks = [p.mask(z) for (p, _), z in zip(movable, starts, strict=True)]
    masks += [p.mask(z) for p, z in zip(new, new_starts, strict=True)]
    assert all(z in p.starts for p, z in zip(items, (*starts, *new_starts), strict=True))
    assert sum(bin(x).count("1") for x in masks) == bin(_union(masks)).count("1")  # no overlap
    assert _runs_in_turn(tuple(movable), starts)
    assert sum(z != old for z, (_, old) in zip(starts, movable, strict=True)) == best


# --- inter-GPU moves ------------------------------------------------------------------------------
def _two_singles() -> DataCenter:
    """One PM whose two A100s each hold a 1g.5gb at slice 6."""
    s0, s1 = vm("s0", ["1g.5gb"]), vm("s1", ["1g.5gb"])
    return datacenter([pm("pm0")], [(s0, at(0, (0, 6))), (s1, at(0, (1, 6)))])


def test_moving_the_vms_of_one_gpu_to_another_admits_a_whole_gpu_vm() -> None:
    dc = _two_singles()
    big = vm("big", ["7g.40gb"])
    # No GPU is idle and no repack of one GPU makes room for 8 slices.
    assert isinstance(make_policy("ff").arrive(dc, big, NOW, frozenset()), Rejection)
    grmu = Grmu()
    assert isinstance(grmu.arrive(dc, big, NOW, frozenset()), Deferred)
    dc.add_pending(big)
    work = _run_call(dc, grmu)
    # s0 joins s1 on GPU 1 (same basket, same PM: nothing copied over the network); GPU 0 is big's.
    assert work.target == {"s0": at(0, (1, 4)), "big": at(0, (0, 0))}
    assert dc.gis_on(0, 0) == {0: ("big", 0)}
    assert work.plan is not None and work.plan.cost.migrations == 1 and work.plan.cost.bytes_copied == 0
    assert grmu.counters()["deferred_migrate"] == 1 and grmu.counters()["migrations"] == 1
    # Without the inter-GPU stage the VM is refused.
    assert isinstance(Grmu(make_room=False).arrive(_two_singles(), big, NOW, frozenset()), Rejection)


def test_periodic_consolidation_empties_a_gpu_and_a_pm_within_the_baskets() -> None:
    large, a, b = vm("large", ["4g.20gb"]), vm("a", ["2g.10gb"]), vm("b", ["1g.5gb"])
    dc = datacenter(
        [pm("pm0"), pm("pm1"), pm("pm2")],
        [(large, at(0, (0, 0))), (a, at(1, (0, 0))), (b, at(2, (0, 6)))],
    )
    grmu = Grmu(period_s=600)  # consolidation is on by default
    assert grmu.next_check(NOW) == 600 and grmu.work(dc, NOW) is None
    # Least used first: pm2 GPU 0 (b, 1 slice). b cannot open pm2's idle GPU 1, nor join the large
    # GPU of pm0 (slices 4–7 free: where first fit would put it); it joins a on pm1's small GPU.
    work = _run_call(dc, grmu, 600)
    assert work.kind == "consolidation" and set(work.target) == {"b"}
    assert work.target["b"].pm == 1 and work.target["b"].gis[0].gpu == 0
    # pm1's GPU received, so it is not vacated; large finds no other GPU of its basket.
    assert not dc.is_active(2) and dc.active_pms == 2
    counts = grmu.counters()
    assert counts["migrations_consolidation"] == counts["migrations"] == 1
    assert counts["vacated_gpus"] == 1 and counts["consolidations_with_moves"] == 1
    assert grmu.next_check(600) == 1200


def test_options_are_validated_naming_the_option_and_value() -> None:
    for bad, word in (
        ({"large_quota": 0}, "large_quota: 0"),
        ({"small_quota": 1.5}, "small_quota: 1.5"),
        ({"large_share": True}, "large_share: True"),
        ({"period_s": -1}, "period_s: -1"),
        ({"defrag": "yes"}, "defrag: 'yes'"),
        ({"consolidate": 1}, "consolidate: 1"),
    ):
        with pytest.raises(UserError, match=word):
            Grmu(**bad)


# --- invariants over random streams ---------------------------------------------------------------
def fragmented_states() -> st.SearchStrategy[DataCenter]:
    """A valid state whose VMs sit at *random* feasible starts (fragmented GPUs, mixed ones too)."""
    return random_states(max_pms=4, max_vms=10)


def _mixed(dc: DataCenter, rule: Baskets) -> set[tuple[int, int]]:
    """GPUs that hold a large and a small GI."""
    out = set()
    for j in range(len(dc.pms)):
        for k in range(dc.gpu_count(j)):
            slices = dc.gpu_geometry(j, k).slices
            kinds = {rule.of_gi(dc.vms[v].gis[n], slices) for v, n in dc.gis_on(j, k).values()}
            if len(kinds) > 1:
                out.add((j, k))
    return out


@st.composite
def crowded_states(draw: st.DrawFn) -> DataCenter:
    """1–3 roomy PMs of one or two A100s, every GPU holding one-GI VMs at random starts."""
    a100 = model()
    pms = [pm(f"p{j}", gpus=["A100-40GB"] * draw(st.integers(1, 2))) for j in range(draw(st.integers(1, 3)))]
    dc = DataCenter(pms)
    n = 0
    for j, spec in enumerate(pms):
        for k in range(len(spec.gpus)):
            for _ in range(draw(st.integers(1, 5))):
                p = draw(st.sampled_from(a100.profiles[:4]))  # up to 3g.20gb: several fit on a GPU
                free = geometry(a100).free_starts(dc.occupancy(j, k), p)
                if free:
                    n += 1
                    dc.place(vm(f"c{n}", [p.name]), at(j, (k, draw(st.sampled_from(free)))))
    return dc


a100_vms = st.lists(st.sampled_from([p.name for p in model().profiles]), min_size=1, max_size=2).map(
    lambda names: vm("new", names)
)
events = st.lists(
    st.one_of(
        st.tuples(st.just("arrive"), st.one_of(vm_specs(), a100_vms), st.sets(st.integers(0, 3), max_size=2)),
        st.tuples(st.just("arrive"), a100_vms, st.just(frozenset())),
        st.tuples(st.just("depart"), st.integers(0, 1000)),
        st.tuples(st.just("tick")),
    ),
    min_size=3,
    max_size=25,
)
OPTIONS = [
    {},
    {"consolidate": False},
    {"period_s": 60},
    {"large_quota": 0.5, "period_s": 60},
    {"small_quota": 0.5, "consolidate": False},
]


@settings(max_examples=examples(150), deadline=None)
@given(dc=st.one_of(fragmented_states(), crowded_states()), stream=events, options=st.sampled_from(OPTIONS))
def test_every_event_leaves_a_valid_state_within_the_baskets(dc, stream, options) -> None:
    grmu = Grmu(**options)
    rule = grmu.baskets
    mixed = _mixed(dc, rule)
    classes = sorted(dc.class_pms)
    now, arrivals, migrations, parking = 0.0, 0, 0, 0

    def run_calls() -> None:
        nonlocal migrations, parking
        while (when := grmu.next_check(now)) is not None and when <= now:
            running = set(dc.placement)
            work = grmu.work(dc, now)
            if work is None:
                assert not dc.pending  # pending VMs always get a call
                break
            _carry_out(dc, grmu, work, now)
            assert running <= set(dc.placement)  # no running VM is evicted
            if work.plan is not None:
                migrations += work.plan.cost.migrations
                parking += work.plan.cost.parking
            if work.kind == "consolidation":
                break

    for ev in stream:
        running = set(dc.placement)
        held = {h: rule.held(dc, h) for h in classes}
        departed = None
        if ev[0] == "arrive":
            arrivals += 1
            spec = ev[1]
            new = VmSpec(f"a{arrivals}", spec.cpu_m, spec.ram_mb, spec.gis)
            locked = frozenset(j for j in ev[2] if j < len(dc.pms))
            decision = grmu.arrive(dc, new, now, locked)
            if isinstance(decision, Placed):
                assert decision.placement.pm not in locked
                dc.place(new, decision.placement)
            elif isinstance(decision, Deferred):
                dc.add_pending(new)
                run_calls()
            else:
                assert decision.reason
        elif ev[0] == "depart" and dc.placement:
            departed = sorted(dc.placement)[ev[1] % len(dc.placement)]
            dc.remove(departed)
            grmu.depart(dc, departed, now)
        elif ev[0] == "tick" and (when := grmu.next_check(now)) is not None:
            now = max(now, when)
            run_calls()
        assert check(dc) == [] and check_counters(dc) == []
        assert running - {departed} <= set(dc.placement)
        assert _mixed(dc, rule) <= mixed  # GRMU never puts a large and a small GI on one GPU
        for h in classes if departed is None else ():  # a basket over its limit never grows by a
            now_held, limits = rule.held(dc, h), rule.limits(dc, h)  # decision (a departure may relabel
            for b in (LARGE, SMALL):  # a mixed GPU of the initial state)
                assert now_held[b] <= max(limits[b], held[h][b])
    counts = grmu.counters()
    assert not dc.pending and counts["admitted"] + counts["rejected"] == arrivals
    assert counts["migrations"] == migrations and counts["parking_moves"] == parking


@settings(max_examples=examples(100), deadline=None)
@given(dc=crowded_states(), new=a100_vms)
def test_a_deferred_vm_is_admitted_by_moves_of_one_gpu(dc: DataCenter, new: VmSpec) -> None:
    grmu = Grmu()
    if not isinstance(grmu.arrive(dc, new, NOW, frozenset()), Deferred):
        return
    dc.add_pending(new)
    before = dict(dc.placement)
    work = _run_call(dc, grmu)
    assert work.admitted == ("new",) and dc.placement["new"] == work.target["new"]
    moved = {v: pl for v, pl in work.target.items() if v in before}
    assert moved  # a deferred VM needed moves
    counts = grmu.counters()
    if counts["deferred_defrag"]:  # GIs shift on one GPU of the new VM's PM
        gpus = {(before[v].pm, s.gpu) for v in moved for s in before[v].gis}
        assert len(gpus) == 1 and all(pl.pm == before[v].pm for v, pl in moved.items())
        assert all(pl.gis[0].gpu == before[v].gis[0].gpu for v, pl in moved.items())
    else:  # the VMs of one GPU leave it, and the new VM takes it
        assert counts["deferred_migrate"] == 1
        sources = set.intersection(*({(before[v].pm, s.gpu) for s in before[v].gis} for v in moved))
        assert any(set(dc.gis_on(*g).values()) <= {("new", n) for n in range(len(new.gis))} for g in sources)


@pytest.mark.parametrize("options", [(), (("consolidate", False),)])
def test_a_short_simulation_stays_valid_and_counts_its_migrations(options) -> None:
    # "grmu" is registered by the import of `Grmu` above. 8 PMs at load 1.2 for 10 h, every state
    # checked by the engine (`debug_check`), measured from t = 0 so that the run's migration metric
    # covers every call.
    config = SimConfig(
        load=1.2,
        pms=8,
        warmup_s=0,
        measure_s=10 * H,
        deterministic=True,
        debug_check=True,
        policy_options=options,
    )
    result = run_one(RunSpec(config, "grmu", 3))
    counts = result.counters
    assert counts["admitted"] > 30 and counts["rejected"] > 0
    assert counts["admitted"] + counts["rejected"] <= result.requests
    live = counts["migrations"] + counts["parking_moves"]
    assert live == round(result.metrics["migrations_per_hour"] * 10)
    if not options:  # the default: periodic consolidation
        assert counts["migrations_consolidation"] > 0 and counts["vacated_gpus"] > 0
    else:
        assert counts["consolidations"] == 0 and counts["migrations"] == counts["migrations_admission"] > 0


def test_a_repack_keeps_off_the_slices_a_move_under_way_holds() -> None:
    # GPU 0 of pm0 runs a 3g.20gb at start 4; a move under way holds slices 0-3 for an incoming
    # 4g.20gb. A new 4g.20gb fits nowhere: the repack stage must not take the held slices as free.
    from origamig.cluster.records import Placement

    dc = datacenter([pm("pm0", gpus=("A100-40GB",))], [(vm("a", ["3g.20gb"]), at(0, (0, 4)))])
    dc.hold("move", vm("x", ["4g.20gb"]), at(0, (0, 0)))
    decision = Grmu().arrive(dc, vm("n", ["4g.20gb"]), 0.0, frozenset())
    if isinstance(decision, Placed):
        assert dc.fits(vm("n", ["4g.20gb"]), decision.placement)
    assert not (isinstance(decision, Placed) and decision.placement == Placement(0, at(0, (0, 0)).gis))
