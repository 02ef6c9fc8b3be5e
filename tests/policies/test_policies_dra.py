"""DRA (`policies/dra.py`): Kubernetes' node scores and the DRA allocator's device order, by hand.

A100-40GB profiles (memory slices, starts): 1g.5gb (1, 0–6), 1g.10gb (2, 0,2,4,6), 2g.10gb (2, 0,2,4),
3g.20gb (4, 0,4), 4g.20gb (4, 0), 7g.40gb (8, 0). PMs: 80 cores, 512 GB, two A100s unless said.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import GiSlot, Placement, VmSpec
from origamig.errors import UserError
from origamig.judge.check import check_placement
from origamig.policies.arrival_rule import class_gpus, profile_on
from origamig.policies.base import Placed, Rejection, make_policy
from origamig.policies.dra import backtracking_fit, kube_node_score, publication_order_fit
from tests.builders import at, datacenter, pm, vm
from tests.profiles import examples
from tests.strategies import random_states, vm_specs


def test_a_device_goes_to_the_lowest_free_start_not_the_default_placement() -> None:
    dc = datacenter([pm("pm0", gpus=["A100-40GB"])])
    one = vm("one", ["1g.10gb"])
    # FF's default placement keeps the most placements free: an empty A100's 1g.10gb goes to start 6.
    assert make_policy("ff").arrive(dc, one, 0.0, frozenset()) == Placed(at(0, (0, 6)))
    # The DRA allocator takes the first device in publication order: the lowest start, 0.
    assert make_policy("dra").arrive(dc, one, 0.0, frozenset()) == Placed(at(0, (0, 0)))


def test_requests_are_allocated_in_their_order_not_largest_first() -> None:
    dc = datacenter([pm("pm0", gpus=["A100-40GB", "A100-40GB"])])
    both = vm("both", ["1g.5gb", "4g.20gb"])
    # In request order: 1g.5gb takes GPU 0 start 0; 4g.20gb may start only at 0, taken on GPU 0, so it
    # goes to GPU 1. Largest first (FF) puts both on GPU 0 (4g.20gb at 0, 1g.5gb beside it).
    assert make_policy("dra").arrive(dc, both, 0.0, frozenset()) == Placed(at(0, (0, 0), (1, 0)))
    ff = make_policy("ff").arrive(dc, both, 0.0, frozenset())
    assert isinstance(ff, Placed) and {s.gpu for s in ff.placement.gis} == {0}


def test_kube_scores_by_hand() -> None:
    busy = vm("busy", ["3g.20gb"], cpu=40, ram_gb=128)  # half the cores, a quarter of the memory
    dc = datacenter([pm("pm0"), pm("pm1")], [(busy, at(0, (0, 0)))])
    new = vm("new", ["1g.5gb"], cpu=8, ram_gb=128)
    # pm0 with the VM: CPU 48/80 requested, memory 256/512.
    #   LeastAllocated: ⌊100·32/80⌋ = 40 and ⌊100·256/512⌋ = 50 → ⌊90/2⌋ = 45
    #   Balanced: fractions 0.6 and 0.5 → std 0.05 → ⌊100·0.95⌋ = 95.          Total 140.
    # pm1 with the VM: CPU 8/80, memory 128/512.
    #   LeastAllocated: ⌊100·72/80⌋ = 90 and ⌊100·384/512⌋ = 75 → ⌊165/2⌋ = 82
    #   Balanced: fractions 0.1 and 0.25 → std 0.075 → ⌊92.5⌋ = 92.           Total 174.
    assert kube_node_score(dc, 0, new) == 140
    assert kube_node_score(dc, 1, new) == 174


def test_kube_spreads_where_first_fit_packs() -> None:
    busy = vm("busy", ["3g.20gb"], cpu=40, ram_gb=128)
    dc = datacenter([pm("pm0"), pm("pm1")], [(busy, at(0, (0, 0)))])
    new = vm("new", ["1g.5gb"], cpu=8, ram_gb=128)
    # kube-scheduler's default scores prefer the emptier pm1 (174 against 140, above); `nodes=first`
    # keeps data-center order and takes pm0, where the lowest free start is slice 4 of GPU 0.
    assert make_policy("dra").arrive(dc, new, 0.0, frozenset()) == Placed(at(1, (0, 0)))
    assert make_policy("dra", nodes="first").arrive(dc, new, 0.0, frozenset()) == Placed(at(0, (0, 4)))


def test_equal_scores_go_to_the_lowest_pm_and_locked_pms_are_passed_over() -> None:
    dc = datacenter([pm("pm0"), pm("pm1"), pm("pm2")])
    new = vm("new", ["2g.10gb"])
    dra = make_policy("dra")
    assert dra.arrive(dc, new, 0.0, frozenset()) == Placed(at(0, (0, 0)))
    assert dra.arrive(dc, new, 0.0, frozenset({0})) == Placed(Placement(1, (GiSlot(0, 0),)))


def test_a_vm_that_fits_nowhere_is_rejected_and_counted() -> None:
    full = vm("full", ["7g.40gb"])
    dc = datacenter([pm("pm0", gpus=["A100-40GB"])], [(full, at(0, (0, 0)))])
    dra = make_policy("dra")
    assert isinstance(dra.arrive(dc, vm("new", ["1g.5gb"]), 0.0, frozenset()), Rejection)
    assert dra.counters()["rejected"] == 1 and dra.counters()["migrations"] == 0


def test_an_unknown_node_order_is_a_user_error() -> None:
    with pytest.raises(UserError, match="nodes"):
        make_policy("dra", nodes="random")


def test_backtracking_admits_where_the_greedy_order_rejects_the_node() -> None:
    # GPU 0 empty, GPU 1 holds a 1g.5gb at start 0. The claim asks for a 1g.5gb, then a 7g.40gb.
    held = vm("held", ["1g.5gb"])
    dc = datacenter([pm("pm0")], [(held, at(0, (1, 0)))])
    claim = vm("claim", ["1g.5gb", "7g.40gb"])
    # Greedy: the 1g.5gb takes the first device, GPU 0 start 0; the 7g.40gb then finds no free GPU
    # (GPU 0 now holds the 1g.5gb, GPU 1 the other VM's): the node is rejected.
    assert publication_order_fit(dc, 0, claim) is None
    assert isinstance(make_policy("dra", backtrack=False).arrive(dc, claim, 0.0, frozenset()), Rejection)
    # Backtracking: every start of GPU 0 leaves the 7g.40gb nowhere, so the 1g.5gb moves on to GPU 1's
    # first free device (start 1) and the 7g.40gb takes GPU 0 whole.
    assert backtracking_fit(dc, 0, claim) == at(0, (1, 1), (0, 0))
    assert make_policy("dra").arrive(dc, claim, 0.0, frozenset()) == Placed(at(0, (1, 1), (0, 0)))
    assert make_policy("dra", backtrack=True).arrive(dc, claim, 0.0, frozenset()) == Placed(
        at(0, (1, 1), (0, 0))
    )


def test_backtrack_must_be_a_boolean() -> None:
    with pytest.raises(UserError, match="backtrack: 'yes' must be true or false"):
        make_policy("dra", backtrack="yes")


def _every_assignment(dc: DataCenter, j: int, vm_: VmSpec) -> list[Placement]:
    """Every assignment of the VM's GIs to free (GPU, start) devices of PM j, in depth-first order of
    publication (GPU, then start), by brute force."""
    gpus = class_gpus(dc, j, vm_.gpu_class)
    devices = []
    for prof in vm_.gis:
        devices.append(
            [
                (k, z, p.mask(z))
                for k in gpus
                if (p := profile_on(dc.gpu_model(j, k), prof)) is not None
                for z in sorted(p.starts)
            ]
        )
    found = []
    for combo in itertools.product(*devices):
        occ = {k: dc.occupancy(j, k) for k in gpus}
        ok = True
        for k, _, mask in combo:
            if occ[k] & mask:
                ok = False
                break
            occ[k] |= mask
        if ok:
            found.append(Placement(j, tuple(GiSlot(k, z) for k, z, _ in combo)))
    return found


@settings(max_examples=examples(200), deadline=None)
@given(dc=random_states(), new=vm_specs(vm_id="new", max_gis=4), nodes=st.sampled_from(["kube", "first"]))
def test_backtracking_admits_whenever_greedy_does_and_places_validly(dc, new, nodes):
    for j in range(len(dc.pms)):
        if not new.gis or not class_gpus(dc, j, new.gpu_class):
            continue
        greedy, deep = publication_order_fit(dc, j, new), backtracking_fit(dc, j, new)
        every = _every_assignment(dc, j, new)
        # The first complete assignment in depth-first publication order, None when there is none;
        # where the greedy order places the VM it is that very placement.
        assert deep == (every[0] if every else None)
        assert greedy is None or deep == greedy
    greedy_answer = make_policy("dra", nodes=nodes, backtrack=False).arrive(dc, new, 0.0, frozenset())
    answer = make_policy("dra", nodes=nodes).arrive(dc, new, 0.0, frozenset())
    assert isinstance(answer, Placed) or not isinstance(greedy_answer, Placed)
    if isinstance(answer, Placed):
        after = {**dc.placement, new.id: answer.placement}
        assert check_placement(dc.pms, {**dc.vms, new.id: new}, after) == []
