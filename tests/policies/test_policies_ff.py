"""FF and the shared first-fit arrival rule (`policies/arrival_rule.py`): hand-made scenarios.

CF values below are derived by hand from the A100 table of docs/model.md#domain (starts: 1g.5gb 0–6, 1g.10gb
0,2,4,6, 2g.10gb 0,2,4, 3g.20gb 0,4, 4g.20gb 0, 7g.40gb 0): CF = Σ_p (permissible starts whose slices are
free).
"""

from __future__ import annotations

from origamig.cluster.records import GiSlot, Placement
from origamig.policies.arrival_rule import first_fit, gi_order
from origamig.policies.base import Placed, Rejection, make_policy
from tests.builders import A30, at, datacenter, pm, vm


def _scenario():
    """PM0 lacks CPU; PM1's GPUs are full; PM2 has a 1g.5gb at slice 6 on GPU 0; PM3 is empty."""
    hog = vm("hog", cpu=78)  # no GIs; leaves 2 of 80 cores on PM0
    full0, full1 = vm("f0", ["7g.40gb"], cpu=1), vm("f1", ["7g.40gb"], cpu=1)
    small = vm("s", ["1g.5gb"])
    return datacenter(
        [pm("pm0"), pm("pm1"), pm("pm2"), pm("pm3")],
        [(hog, at(0)), (full0, at(1, (0, 0))), (full1, at(1, (1, 0))), (small, at(2, (0, 6)))],
    )


def test_ff_takes_the_first_pm_that_fits_at_the_cf_max_start():
    dc = _scenario()
    new = vm("new", ["1g.10gb"])  # 4 cores: PM0 has only 2 free; PM1 has no free slice
    # On PM2 GPU 0 (slice 6 used) a 1g.10gb may start at 0, 2 or 4:
    #   at 0 → used {0,1,6}: 1g.5gb 2,3,4,5 (4) + 1g.10gb 2,4 (2) + 2g.10gb 2,4 (2) = CF 8
    #   at 2 → used {2,3,6}: 1g.5gb 0,1,4,5 (4) + 1g.10gb 0,4 (2) + 2g.10gb 0,4 (2) = CF 8
    #   at 4 → used {4,5,6}: 1g.5gb 0–3 (4) + 1g.10gb 0,2 (2) + 2g.10gb 0,2 (2) + 3g 0 + 4g 0 = CF 10
    # so the default placement picks start 4 (not the lowest free start 0); PM3 is never reached.
    decision = make_policy("ff").arrive(dc, new, 0.0, frozenset())
    assert decision == Placed(Placement(2, (GiSlot(0, 4),)))


def test_locked_pm_is_skipped_and_an_empty_gpu_gets_start_6():
    dc = _scenario()
    new = vm("new", ["1g.10gb"])
    # PM2 locked → PM3 GPU 0, empty: 1g.10gb at 6 leaves slices 0–5: 1g.5gb 0–5 (6) + 1g.10gb 0,2,4 (3)
    # + 2g.10gb 0,2,4 (3) + 3g 0 (1) + 4g 0 (1) = 14, the maximum (at 0: 11, at 2: 11, at 4: 12).
    assert first_fit(dc, new, frozenset({2})) == Placement(3, (GiSlot(0, 6),))


def test_gis_go_largest_first():
    dc = datacenter([pm("pm0")])
    two = vm("two", ["1g.5gb", "3g.20gb"])
    assert gi_order(two) == (1, 0)
    # 3g.20gb first on an empty A100: at 4 leaves 0–3 (1g.5gb 0–3, 1g.10gb 0,2, 2g.10gb 0,2, 3g 0, 4g 0:
    # CF 10) against 7 at 0. Then 1g.5gb on slices 0–3 free: every start leaves CF 5, lowest start 0.
    # (Smallest first would put 1g.5gb at 6 and the 3g.20gb at 0.)
    assert first_fit(dc, two) == Placement(0, (GiSlot(0, 0), GiSlot(0, 4)))


def test_second_gi_spills_to_the_next_gpu_of_the_same_pm():
    dc = datacenter([pm("pm0")])
    two = vm("two", ["4g.20gb", "4g.20gb"])
    # The first 4g.20gb takes GPU 0 at its only start 0; the second cannot start at 0 there → GPU 1.
    assert first_fit(dc, two) == Placement(0, (GiSlot(0, 0), GiSlot(1, 0)))


def test_gis_only_on_gpus_of_their_class():
    dc = datacenter([pm("a100"), pm("a30", gpus=[A30])])
    small = vm("x", ["1g.6gb"], gpu=A30)
    # 1g.6gb on an empty A30 (starts 0–3, 2g.12gb 0,2): at 0 leaves 1–3: 1g 1,2,3 (3) + 2g 2 (1) = 4;
    # at 3 leaves 0–2: 3 + 2g 0 = 4; at 1 or 2: 3 + 0 = 3. Tie 0/3 → lowest start 0; PM0 has no A30.
    assert first_fit(dc, small) == Placement(1, (GiSlot(0, 0),))


def test_vm_without_gis_takes_the_first_pm_with_cpu_and_ram():
    dc = datacenter([pm("gpu0", cpu=8), pm("nogpu", gpus=[])])
    assert first_fit(dc, vm("plain", cpu=4)) == Placement(0, ())
    assert first_fit(dc, vm("big", cpu=16)) == Placement(1, ())


def test_rejection_names_reason_needed_and_free():
    dc = _scenario()
    huge = vm("huge", ["7g.40gb"])  # 28 cores: PM0 lacks CPU, PM1 is full, PM2 has a GI on GPU 0 ...
    ff = make_policy("ff")
    assert isinstance(ff.arrive(dc, huge, 0.0, frozenset()), Placed)  # ... but PM2's GPU 1 is empty
    rej = ff.arrive(dc, huge, 0.0, frozenset({2, 3}))
    assert isinstance(rej, Rejection)
    assert rej.reason == "no PM with enough free CPU and RAM has free slices for every GI"
    assert rej.needed["cpu"] == 28 and rej.needed["gis"] == ["7g.40gb"]
    # Unlocked: PM0 (2 cores free, 8 slices free) and PM1 (78 cores, no slice free).
    assert rej.free["max_cpu"] == 78 and rej.free["max_free_slices_on_a_gpu"] == 8
    rej_cpu = ff.arrive(dc, vm("fat", ["1g.5gb"], cpu=200), 0.0, frozenset())
    assert isinstance(rej_cpu, Rejection) and rej_cpu.reason == "no PM has enough free CPU and RAM"
    rej_class = first_fit(datacenter([pm("a100")]), vm("a30vm", ["1g.6gb"], gpu=A30))
    assert isinstance(rej_class, Rejection) and rej_class.reason == "no PM has a GPU of class 30"
    assert ff.counters()["admitted"] == 1 and ff.counters()["rejected"] == 2


def test_ff_never_mutates_the_state_and_has_no_periodic_work():
    dc = _scenario()
    before = dict(dc.placement), [dc.occupancy(j, k) for j in range(4) for k in range(2)]
    ff = make_policy("ff")
    ff.arrive(dc, vm("new", ["1g.10gb"]), 0.0, frozenset())
    assert (dict(dc.placement), [dc.occupancy(j, k) for j in range(4) for k in range(2)]) == before
    assert ff.next_check(0.0) is None and ff.work(dc, 0.0) is None
