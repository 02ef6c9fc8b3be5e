"""Properties of FF, MFI and TC over random states and request streams (hypothesis).

The test drives each policy the way the simulator does — arrivals, departures, and the periodic
`next_check`/`work`/`finished` cycle — applying every decision to a DataCenter itself, and checks
after every event with the independent checker that the state is valid, that no running VM was
evicted, that no arrival lands on a locked PM, and that TC's compactions apply at once and shrink
the active GPUs of a class.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, VmSpec
from origamig.judge.check import check, check_counters, check_placement
from origamig.policies.arrival_rule import gi_order
from origamig.policies.base import Deferred, Placed, Rejection, make_policy
from origamig.policies.tc.compaction import CompactionState, compact, compact_class
from origamig.policies.tc.rule import tc_place
from tests.profiles import examples
from tests.strategies import random_states, vm_specs

POLICIES = [
    ("ff", {}),
    ("mfi", {}),
    ("dra", {}),
    ("dra", {"nodes": "first"}),
    ("dra", {"backtrack": False}),
    ("fgd", {}),
    ("fgd", {"ratio": 1.0}),
    ("fgd", {"ratio": 1.0, "arrival": "tc"}),
    ("tc", {}),
    ("tc", {"tc_rule": "literal"}),
]


events = st.lists(
    st.one_of(
        st.tuples(st.just("arrive"), vm_specs(), st.sets(st.integers(0, 3), max_size=2)),
        st.tuples(st.just("depart"), st.integers(0, 1000)),
        st.tuples(st.just("tick")),
    ),
    max_size=25,
)


def _assert_valid(dc: DataCenter, running_before: set[str], departed: str | None) -> None:
    assert check(dc) == [] and check_counters(dc) == []
    assert running_before - {departed} <= set(dc.placement)  # no running VM is ever evicted


def _apply_work(dc: DataCenter, policy, now: float) -> None:
    work = policy.work(dc, now)
    if work is None:
        return
    assert set(work.target) <= set(dc.placement)  # baselines only move running VMs
    if work.kind == "compaction":
        final = {**dc.placement, **work.target}
        holding = {v: [dc.placement[v]] for v in work.target}
        assert check_placement(dc.pms, dc.vms, final, holding=holding) == []  # moves apply at once
        before = dict(dc.active_gpus)
        moved_classes = {dc.vms[v].gpu_class for v in work.target}
    dc.apply_placement(work.target)
    assert {v: dc.placement[v] for v in work.plan.final_placement} == dict(work.plan.final_placement)
    if work.kind == "compaction":
        for h in moved_classes:  # each kept group of moves vacates more GPUs than it adds
            assert dc.active_gpus[h] < before[h]
    policy.finished(dc, work, now + work.modeled_s)


@settings(max_examples=examples(150), deadline=None)
@given(dc=random_states(), stream=events, which=st.sampled_from(POLICIES))
def test_every_event_leaves_a_valid_state_and_evicts_nobody(dc, stream, which):
    name, options = which
    policy = make_policy(name, **options)
    now, seq = 0.0, 0
    for ev in stream:
        running = set(dc.placement)
        departed = None
        if ev[0] == "arrive":
            seq += 1
            spec = ev[1]
            vm = VmSpec(f"a{seq}", spec.cpu_m, spec.ram_mb, spec.gis)
            locked = frozenset(j for j in ev[2] if j < len(dc.pms))
            decision = policy.arrive(dc, vm, now, locked)
            assert not isinstance(decision, Deferred)  # baselines reject instead of queueing
            if isinstance(decision, Placed):
                assert decision.placement.pm not in locked
                dc.place(vm, decision.placement)  # raises if the decision breaks a constraint
            else:
                assert isinstance(decision, Rejection) and decision.reason
        elif ev[0] == "depart" and dc.placement:
            departed = sorted(dc.placement)[ev[1] % len(dc.placement)]
            dc.remove(departed)
            policy.depart(dc, departed, now)
        elif ev[0] == "tick":
            when = policy.next_check(now)
            if when is None:
                assert policy.work(dc, now) is None
            else:
                assert when >= now
                now = when
                _apply_work(dc, policy, now)
        _assert_valid(dc, running, departed)
    counts = policy.counters()
    arrivals = sum(1 for ev in stream if ev[0] == "arrive")
    assert counts["admitted"] + counts["rejected"] == arrivals


@settings(max_examples=examples(150), deadline=None)
@given(dc=random_states(max_pms=6, max_vms=20), rule=st.sampled_from(["default", "literal"]))
def test_compaction_moves_each_vm_once_into_resources_free_before(dc, rule):
    result = compact(dc, rule)
    # every move is a whole VM, leaves its old place, and lands only on slices free before
    for v, pl in result.moves.items():
        assert pl != dc.placement[v]
        for prof, slot in zip(dc.vms[v].gis, pl.gis, strict=True):
            assert not dc.occupancy(pl.pm, slot.gpu) & prof.mask(slot.start)
    # no GPU both receives and is vacated; vacated GPUs end empty
    receivers = {(pl.pm, s.gpu) for pl in result.moves.values() for s in pl.gis}
    assert not receivers & set(result.vacated)
    after = dc.copy()
    after.apply_placement(result.moves)
    assert all(not after.gpu_active(j, k) for j, k in result.vacated)
    assert check(after) == []
    assert result.moves == compact(dc, rule).moves  # deterministic


class _FullScan(CompactionState):
    """The compaction without its pruning: every PM of the class scored by `tc_place`, no precheck."""

    def may_place(self, vm: VmSpec, exclude: tuple[int, int]) -> bool:
        return True

    def place_by_rule(self, vm: VmSpec, exclude: tuple[int, int]) -> Placement | None:
        home = self.dc.placement[vm.id].pm
        best = None
        for j, gpus in self.class_layout[vm.gpu_class]:
            if not self.fits_pm(vm, j, home):
                continue
            views = [
                [g[1], geo, self.blocked[g], self.used_m[g], self.used_c[g]]
                for g, geo in gpus
                if g != exclude and self.can_receive(g)
            ]
            hit = tc_place(vm, gi_order(vm), j, views) if views else None
            if hit is not None and (best is None or hit[0] < best[0]):
                best = hit
        return None if best is None else best[1]


@settings(max_examples=examples(120), deadline=None)
@given(dc=random_states(max_pms=6, max_vms=24), rule=st.sampled_from(["default", "literal"]))
def test_compaction_pruning_changes_no_decision(dc, rule):
    # The bit-set pruning of place_by_rule and vacate's precheck only skip PMs/GPUs the rule would
    # reject: the compaction must decide exactly what a scan of every PM decides.
    oracle = _FullScan(dc)
    stats = {"trials": 0, "trials_kept": 0, "second_gpus": 0}
    for h in sorted(dc.active_gpus):
        compact_class(oracle, h, rule, stats)
    result = compact(dc, rule)
    assert result.moves == dict(sorted(oracle.moved.items()))
    assert result.vacated == tuple(sorted(oracle.vacated)) and result.added == tuple(sorted(oracle.added))
    assert {k: result.stats[k] for k in stats} == stats
