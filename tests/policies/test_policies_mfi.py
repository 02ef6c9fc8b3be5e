"""MFI (`policies/mfi.py`): the fragmentation score and the least-increase choice, by hand.

frag(F) = Σ_p [g_p ≤ free slices] · g_p · (starts of p not all free). A100 profiles (g, starts):
1g.5gb (1, 0–6), 1g.10gb (2, 0,2,4,6), 2g.10gb (2, 0,2,4), 3g.20gb (4, 0,4), 4g.20gb (4, 0), 7g.40gb (8, 0).
"""

from __future__ import annotations

from origamig.cluster.mig import geometry
from origamig.cluster.records import GiSlot, Placement
from origamig.policies.base import Placed, make_policy
from origamig.policies.mfi import fragmentation, fragmentation_increase, least_increase
from tests.builders import at, datacenter, model, pm, profile, vm


def test_fragmentation_of_hand_made_configurations():
    geo = geometry(model())
    assert fragmentation(geo, 0) == 0  # every start free
    # slice 0 used, 7 free: 1g.5gb 1·1 + 1g.10gb 2·1 + 2g.10gb 2·1 + 3g.20gb 4·1 + 4g.20gb 4·1 = 13
    # (7g.40gb needs 8 > 7 free slices: not counted)
    assert fragmentation(geo, 0b1) == 13
    # slices 0,2,3 used (5 free): 1g.5gb 3 + 1g.10gb 2·2 + 2g.10gb 2·2 + 3g.20gb 4·1 + 4g.20gb 4·1 = 19
    assert fragmentation(geo, 0b1101) == 19


def test_least_increase_start_differs_from_the_default_placement():
    geo = geometry(model())
    p = profile("1g.10gb")
    # With slice 0 used (frag 13), a 1g.10gb may start at 2, 4 or 6:
    #   at 2 → used {0,2,3}: frag 19 (above), increase 6
    #   at 4 → used {0,4,5}: 1g.5gb 3 + 1g.10gb 4 + 2g.10gb 4 + 3g.20gb 8 + 4g.20gb 4 = 23, increase 10
    #   at 6 → used {0,6,7}: 1g.5gb 2 + 1g.10gb 4 + 2g.10gb 2 + 3g.20gb 8 + 4g.20gb 4 = 20, increase 7
    assert [fragmentation_increase(geo, 0b1, p, z) for z in (2, 4, 6)] == [6, 10, 7]
    assert least_increase(geo, 0b1, p) == (6, 2)
    assert geo.default_start(0b1, p) == 6  # the driver maximizes CF instead (CF 9 at 6, 8 at 2)
    # On an empty A100: 1g.10gb at 0 or 2 → +14, at 4 → +10, at 6 → +7 (used {6,7}: 1g.5gb 1 +
    # 1g.10gb 2 + 3g.20gb 4 = 7).
    assert least_increase(geo, 0, p) == (7, 6)


def test_mfi_picks_the_gpu_and_pm_of_least_increase():
    s = vm("s", ["1g.5gb"])
    dc = datacenter([pm("pm0"), pm("pm1")], [(s, at(1, (1, 0)))])
    new = vm("new", ["1g.10gb"])
    # PM0: both GPUs empty → best +7 (GPU 0, start 6). PM1: GPU 0 empty (+7), GPU 1 holds slice 0 (+6 at
    # start 2) → PM1 total 6 < 7: PM1, GPU 1, start 2. FF would take PM0 GPU 0 start 6.
    mfi = make_policy("mfi")
    assert mfi.arrive(dc, new, 0.0, frozenset()) == Placed(Placement(1, (GiSlot(1, 2),)))
    assert make_policy("ff").arrive(dc, new, 0.0, frozenset()) == Placed(Placement(0, (GiSlot(0, 6),)))
    assert mfi.counters()["admitted"] == 1


def test_mfi_sums_the_increases_of_a_vms_gis_and_breaks_ties_by_lowest_pm():
    dc = datacenter([pm("pm0"), pm("pm1")])
    two = vm("two", ["1g.10gb", "4g.20gb"])
    # Same total on both empty PMs → PM0. Largest first: 4g.20gb at its only start 0 on GPU 0 (+20 on an
    # empty GPU: used 0–3 → 1g.5gb 4·1 + 1g.10gb 2·2 + 2g.10gb 2·2 + 3g.20gb 4·1 + 4g.20gb 4·1 = 20;
    # GPU 1 likewise +20: tie → GPU 0). Then 1g.10gb: on GPU 0 (frag 20, slices 4–7 free) at 4 → used
    # 0–5: 1g.5gb 6 + 1g.10gb 2·3 + 2g.10gb 2·3 (larger profiles need > 2 free) = 18, increase −2;
    # at 6 → used 0–3,6,7: 1g.5gb 5 + 1g.10gb 6 + 2g.10gb 4 = 15, increase −5; on empty GPU 1: +7.
    # So 1g.10gb → GPU 0 start 6.
    hit = make_policy("mfi").arrive(dc, two, 0.0, frozenset())
    assert hit == Placed(Placement(0, (GiSlot(0, 6), GiSlot(0, 0))))


def test_mfi_has_no_periodic_work():
    mfi = make_policy("mfi")
    assert mfi.next_check(0.0) is None and mfi.work(datacenter([pm("pm0")]), 0.0) is None
