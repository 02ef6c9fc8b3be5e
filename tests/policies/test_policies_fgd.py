"""FGD (`policies/fgd.py`): the fragmentation measure, the steepest-descent rule and the descheduler,
by hand.

A100-40GB profiles (memory slices, starts): 1g.5gb (1, 0–6), 3g.20gb (4, 0,4), 4g.20gb (4, 0),
7g.40gb (8, 0). VMs take 4 cores / 16 GB per compute slice (a 4g.20gb VM: 16 cores, 64 GB).
"""

from __future__ import annotations

import pytest

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.mig import geometry
from origamig.cluster.records import VmSpec
from origamig.errors import UserError
from origamig.judge.check import check
from origamig.policies.base import Placed, make_policy
from origamig.policies.fgd import FragmentationGradientDescent, TypicalVm, fragmentation, stranded_slices
from tests.builders import A100, at, datacenter, model, pm, profile, vm

GEO = geometry(model(A100))
BIG = vm("big", ["4g.20gb"])  # the workload's common shape in these tests
SMALL = vm("small", ["1g.5gb"])


def mask(*slices: int) -> int:
    return sum(1 << s for s in slices)


def taught(policy: FragmentationGradientDescent, dc: DataCenter, shapes: list[VmSpec]) -> None:
    """Let `policy` observe arrivals of `shapes` (decisions are not applied: `dc` is unchanged)."""
    for n, shape in enumerate(shapes):
        policy.arrive(dc, VmSpec(f"seen{n}", shape.cpu_m, shape.ram_mb, shape.gis), 0.0, frozenset())


def test_stranded_slices_are_the_free_ones_no_window_of_the_shape_covers() -> None:
    four = (profile("4g.20gb"),)
    # A 1g.5gb at slice 6: 4g.20gb may start at 0 only, so free slices 4, 5 and 7 are of no use to it.
    assert stranded_slices(GEO, mask(6), four) == 3
    # At slice 0 it blocks 4g.20gb's only window: every free slice is stranded for it.
    assert stranded_slices(GEO, mask(0), four) == 7
    # 3g.20gb may also start at 4: with slice 6 taken its window 0–3 remains, 4, 5 and 7 are stranded.
    assert stranded_slices(GEO, mask(6), (profile("3g.20gb"),)) == 3
    # 1g.5gb covers slices 0–6 but never 7.
    assert stranded_slices(GEO, 0, (profile("1g.5gb"),)) == 1


def test_fragmentation_weighs_each_shape_and_counts_all_free_slices_when_cpu_is_short() -> None:
    big = TypicalVm((profile("4g.20gb"),), BIG.cpu_m, BIG.ram_mb, 0.75)
    small = TypicalVm((profile("1g.5gb"),), SMALL.cpu_m, SMALL.ram_mb, 0.25)
    occ = [mask(6)]
    # 0.75 · 3 stranded for the big shape + 0.25 · 1 (slice 7) for the small one
    assert fragmentation([GEO], occ, 80_000, 512_000, (big, small)) == pytest.approx(2.5)
    # 10 free cores: the big shape cannot come at all, so all 7 free slices are its fragment
    assert fragmentation([GEO], occ, 10_000, 512_000, (big, small)) == pytest.approx(0.75 * 7 + 0.25 * 1)


def test_a_gi_goes_to_the_start_that_keeps_the_workload_s_windows() -> None:
    dc = datacenter([pm("pm0", gpus=[A100])])
    fgd = make_policy("fgd")
    taught(fgd, dc, [BIG] * 7)
    # Starts 4, 5, 6 each keep 4g.20gb's window 0–3 and strand 3 slices; the lowest wins. FF keeps the
    # most placements free (6); the DRA allocator takes the lowest start, 0, which closes the window.
    assert fgd.arrive(dc, SMALL, 0.0, frozenset()) == Placed(at(0, (0, 4)))
    assert make_policy("ff").arrive(dc, SMALL, 0.0, frozenset()) == Placed(at(0, (0, 6)))
    assert make_policy("dra").arrive(dc, SMALL, 0.0, frozenset()) == Placed(at(0, (0, 0)))


def test_a_vm_goes_to_the_pm_whose_fragmentation_grows_least_not_the_first() -> None:
    # pm0 has 18 cores: after a 4-core VM it could no longer take a 16-core 4g.20gb VM, so all of its
    # GPU would become fragment for the workload. pm1 keeps room for one.
    dc = datacenter([pm("pm0", gpus=[A100], cpu=18), pm("pm1", gpus=[A100])])
    fgd = make_policy("fgd")
    taught(fgd, dc, [BIG] * 7)
    assert make_policy("ff").arrive(dc, SMALL, 0.0, frozenset()) == Placed(at(0, (0, 6)))
    assert fgd.arrive(dc, SMALL, 0.0, frozenset()) == Placed(at(1, (0, 4)))


def test_the_descheduler_moves_the_vm_whose_leaving_frees_the_most_fragment() -> None:
    blocker = vm("blocker", ["1g.5gb"])
    fine = vm("fine", ["1g.5gb"])
    dc = datacenter(
        [pm("pm0", gpus=[A100]), pm("pm1", gpus=[A100])],
        [(blocker, at(0, (0, 0))), (fine, at(1, (0, 6)))],
    )
    fgd = make_policy("fgd", ratio=1.0)
    taught(fgd, dc, [BIG] * 7)
    assert fgd.next_check(0.0) == 900.0
    work = fgd.work(dc, 900.0)
    assert work is not None and work.kind == "deschedule"
    # The blocker closes 4g.20gb's window on pm0 (7 slices of fragment); placed again by the rule it
    # goes to start 4 of the same GPU. The VM at slice 6 strands nothing a move would free: it stays.
    assert dict(work.target) == {"blocker": at(0, (0, 4))}
    dc.apply_placement(work.target)
    assert check(dc) == []
    assert geometry(model(A100)).fits(dc.occupancy(0, 0), profile("4g.20gb"))
    fgd.finished(dc, work, 900.0 + work.modeled_s)
    assert fgd.counters()["migrations"] == 1 and fgd.counters()["descheduled"] == 1


def test_the_descheduler_moves_at_most_its_share_of_the_running_vms() -> None:
    vms = [vm(f"b{j}", ["1g.5gb"]) for j in range(4)]
    dc = datacenter(
        [pm(f"pm{j}", gpus=[A100]) for j in range(4)], [(v, at(j, (0, 0))) for j, v in enumerate(vms)]
    )
    fgd = make_policy("fgd", ratio=0.5)
    taught(fgd, dc, [BIG] * 7)
    work = fgd.work(dc, 900.0)
    assert work is not None and len(work.target) == 2  # ⌈0.5 · 4⌉ of four equally fragmenting VMs
    assert make_policy("fgd", deschedule=False).next_check(0.0) is None


@pytest.mark.parametrize(
    ("options", "named"),
    [({"period_s": 0}, "period_s"), ({"ratio": 1.5}, "ratio"), ({"deschedule": "yes"}, "deschedule")],
)
def test_bad_options_are_named(options: dict[str, object], named: str) -> None:
    with pytest.raises(UserError, match=named):
        make_policy("fgd", **options)
