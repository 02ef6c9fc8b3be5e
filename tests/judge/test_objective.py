"""Eq. (5) (`objective.evaluate`) on tiny hand-made states; expected values derived in the comments."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import GiSlot, Placement, VmSpec, Weights
from origamig.errors import PlacementError
from origamig.judge.objective import ChangeRegion, evaluate, evaluate_change, evaluate_dc, evaluate_state
from tests.builders import A30, A100, at, datacenter, pm, vm
from tests.profiles import examples
from tests.strategies import datacenters

W = Weights()  # paper §6.1: a=100, b=50, e=20, w=1, δ=10


def test_one_small_gi_on_one_a100() -> None:
    # a 1g.5gb at slice 0 leaves free {1..7}: 1g.5gb 1-6 (6) + 1g.10gb 2,4,6 (3) + 2g.10gb 2,4 (2)
    # + 3g.20gb 4 (1) = CF 12. Value = 100 (accepted) − 50 (PM) − 20 (one active GPU) + 12 = 42.
    pms = [pm("p0", (A100, A100))]
    vms = {"a": vm("a", ["1g.5gb"])}
    now = {"a": at(0, (0, 0))}
    obj = evaluate(pms, vms, now, now, W)
    assert (obj.acceptance, obj.consolidation, obj.migration, obj.free_starts) == (100, 70, 0, 12)
    assert obj.value == 42
    assert obj.as_dict()["value"] == 42


def test_migration_terms() -> None:
    pms = [pm("p0", (A100, A100)), pm("p1", (A100,))]
    vms = {"a": vm("a", ["1g.5gb"])}
    before = {"a": at(0, (0, 0))}
    # Same PM, other GPU: m = 0, ω = 1 → 10. Same GPU, other start: also ω = 1 → 10.
    assert evaluate(pms, vms, {"a": at(0, (1, 0))}, before, W).migration == 10
    assert evaluate(pms, vms, {"a": at(0, (0, 6))}, before, W).migration == 10
    # Other PM: m = 1 and ω = 1 → 2δ = 20. Per-VM penalty 3 → 6.
    assert evaluate(pms, vms, {"a": at(1, (0, 0))}, before, W).migration == 20
    cheap = {"a": replace(vm("a", ["1g.5gb"]), migration_penalty=3)}
    assert evaluate(pms, cheap, {"a": at(1, (0, 0))}, before, W).migration == 6


def test_a_migration_penalty_per_gb_follows_what_a_move_copies() -> None:
    # δ_i = 0.1 per GB a move between PMs copies: a 1g.5gb VM (4 cores, 16 GB RAM, 5 GB of GI
    # memory) → 2.1; a 7g.40gb (112 GB RAM + 40 GB) → 15.2; inside a PM ω = 1 costs δ_i, between PMs
    # m + ω = 2δ_i. A per-VM penalty still wins.
    per_gb = replace(W, migration_per_gb=0.1)
    small, big = vm("a", ["1g.5gb"]), vm("b", ["7g.40gb"])
    assert per_gb.delta(small) == pytest.approx(2.1) and per_gb.delta(big) == pytest.approx(15.2)
    assert per_gb.delta(replace(small, migration_penalty=3)) == 3
    assert replace(per_gb, vm_weights=False).delta(big) == W.migration  # the tiered weights' own
    pms = [pm("p0", (A100, A100)), pm("p1", (A100,))]
    vms = {"a": small, "b": big}
    before = {"a": at(0, (0, 0)), "b": at(0, (1, 0))}
    after = {"a": at(0, (0, 6)), "b": at(1, (0, 0))}
    assert evaluate(pms, vms, after, before, per_gb).migration == pytest.approx(2.1 + 2 * 15.2)


def test_pending_vms_count_only_when_admitted() -> None:
    # Pending b (not in `previous`) admitted on the idle GPU 1: +100 acceptance, no migration term,
    # GPU 1 now active with a 4g.20gb at 0: free {4..7}: 1g.5gb 4,5,6 (3) + 1g.10gb 4,6 (2)
    # + 2g.10gb 4 (1) + 3g.20gb 4 (1) = 7. GPU 0 as before (CF 12).
    pms = [pm("p0", (A100, A100))]
    vms = {"a": vm("a", ["1g.5gb"]), "b": vm("b", ["4g.20gb"])}
    before = {"a": at(0, (0, 0))}
    rejected = evaluate(pms, vms, before, before, W)
    assert rejected.value == 42  # b is not placed: contributes nothing
    admitted = evaluate(pms, vms, {**before, "b": at(0, (1, 0))}, before, W)
    # 200 − (50 + 20 + 20) − 0 + (12 + 7) = 129
    assert admitted.value == 129


def test_empty_gpus_and_empty_pms_cost_nothing() -> None:
    # A VM without GIs makes its PM active (−50) but no GPU active; the idle PM p1 costs nothing.
    pms = [pm("p0", (A30,)), pm("p1", (A100,))]
    vms = {"c": vm("c", [])}
    now = {"c": at(0)}
    obj = evaluate(pms, vms, now, now, W)
    assert (obj.acceptance, obj.consolidation, obj.free_starts) == (100, 50, 0)


def test_a30_free_starts_and_profile_weights() -> None:
    # A30 with 2g.12gb at 0 leaves {2,3}: 1g.6gb 2,3 (2) + 2g.12gb 2 (1) + 4g (0) = CF 3.
    # With w(1g.6gb) = 5: 5·2 + 1·1 = 11.
    pms = [pm("p0", (A30,))]
    vms = {"a": vm("a", ["2g.12gb"], gpu=A30)}
    now = {"a": at(0, (0, 0))}
    assert evaluate(pms, vms, now, now, W).free_starts == 3
    weighted = Weights(free_start_by_profile={"1g.6gb": 5})
    assert evaluate(pms, vms, now, now, weighted).free_starts == 11


def test_region_restricts_the_terms() -> None:
    # Region = PM 1 and VM b only: acceptance 100 (b), PM 1 active (50) + its GPU (20); b's 7g.40gb
    # fills the A100 → CF 0. VM a on PM 0 is outside: neither accepted nor charged.
    pms = [pm("p0", (A100,)), pm("p1", (A100,))]
    vms = {"a": vm("a", ["1g.5gb"]), "b": vm("b", ["7g.40gb"])}
    now = {"a": at(0, (0, 0)), "b": at(1, (0, 0))}
    obj = evaluate(pms, vms, now, now, W, region_pms=[1], region_vms=["b"])
    assert (obj.acceptance, obj.consolidation, obj.free_starts, obj.value) == (100, 70, 0, 30)


def test_evaluate_dc_matches_evaluate_and_does_not_mutate() -> None:
    dc = datacenter(
        [pm("p0", (A100, A100))],
        [(vm("a", ["1g.5gb"]), at(0, (0, 0)))],
        pending=[vm("b", ["4g.20gb"])],
    )
    before = dict(dc.placement)
    # b is pending and unplaced: same as the one-GI state, 42.
    assert evaluate_dc(dc, before, W).value == 42
    assert dc.placement == before and list(dc.pending) == ["b"]


@settings(max_examples=examples(80), deadline=None)
@given(datacenters(max_pms=4, max_vms=8, pending=True), st.booleans(), st.floats(0, 5))
def test_a_state_read_from_its_counters_is_worth_what_its_vms_say(
    dc: DataCenter, vm_weights: bool, free_start: float
) -> None:
    """`evaluate_state` (the GPUs' occupancy and the PMs' activity as the state keeps them) equals, to
    the last bit, Eq. (5) rebuilt from every VM's GIs — so `solve` may read the cluster's value so."""
    w = Weights(free_start=free_start, vm_weights=vm_weights)
    assert evaluate_state(dc, w) == evaluate_dc(dc, dc.placement, w)


@settings(max_examples=examples(60), deadline=None)
@given(datacenters(max_pms=4, max_vms=8, pending=True), st.data())
def test_a_change_judged_on_its_region_equals_the_whole_cluster(dc: DataCenter, data: st.DataObject) -> None:
    """Eq. (5) after a change, from the objective before plus the change over the servers it touches
    (`evaluate_change`), equals Eq. (5) over the whole cluster; and the region's values of two subsets
    of the change differ as the whole cluster's do."""
    w = Weights(migration=data.draw(st.sampled_from([0.0, 10.0])), free_start=1.0)
    scratch = dc.copy()
    changed: dict[str, Placement] = {}

    def somewhere(vm: VmSpec) -> Placement | None:
        """A valid place for `vm` beside the others in `scratch`, on a randomly drawn PM and slots."""
        for _ in range(6):
            j = data.draw(st.integers(0, len(dc.pms) - 1))
            gpus = len(dc.pms[j].gpus)
            if not gpus and vm.gis:
                continue
            slots = tuple(
                GiSlot(data.draw(st.integers(0, gpus - 1)), data.draw(st.sampled_from(prof.starts)))
                for prof in vm.gis
            )
            try:
                scratch.place(vm, Placement(j, slots))
            except PlacementError:
                continue
            return Placement(j, slots)
        return None

    for v in data.draw(st.lists(st.sampled_from(sorted(dc.vms) or ["-"]), max_size=3, unique=True)):
        if v in scratch.vms:
            vm = scratch.vms[v]
            scratch.remove(v)
            where = somewhere(vm)
            if where is None:
                scratch.place(vm, dc.placement[v])
            else:
                changed[v] = where
    for v in sorted(dc.pending):
        if data.draw(st.booleans()) and (where := somewhere(dc.pending[v])) is not None:
            changed[v] = where
    vms = {**dc.vms, **dc.pending}
    before = evaluate(dc.pms, vms, dc.placement, dc.placement, w)
    whole = evaluate(dc.pms, vms, {**dc.placement, **changed}, dc.placement, w)
    assert evaluate_change(dc, before, changed, w).value == pytest.approx(whole.value)
    part = {v: pl for n, (v, pl) in enumerate(changed.items()) if n % 2 == 0}
    region = ChangeRegion.around(dc, changed)
    whole_part = evaluate(dc.pms, vms, {**dc.placement, **part}, dc.placement, w)
    assert region.evaluate(changed, w).value - region.evaluate(part, w).value == pytest.approx(
        whole.value - whole_part.value
    )
