"""DRA (`policies/dra.py`): Kubernetes' node scores and the DRA allocator's device order, by hand.

A100-40GB profiles (memory slices, starts): 1g.5gb (1, 0–6), 1g.10gb (2, 0,2,4,6), 2g.10gb (2, 0,2,4),
3g.20gb (4, 0,4), 4g.20gb (4, 0), 7g.40gb (8, 0). PMs: 80 cores, 512 GB, two A100s unless said.
"""

from __future__ import annotations

import pytest

from origamig.cluster.records import GiSlot, Placement
from origamig.errors import UserError
from origamig.policies.base import Placed, Rejection, make_policy
from origamig.policies.dra import kube_node_score
from tests.builders import at, datacenter, pm, vm


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
