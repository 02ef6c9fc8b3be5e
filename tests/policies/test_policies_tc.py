"""TC (`policies/tc.py`, `policies/tc_compaction.py`): arrival rule and compaction, by hand.

Joint utilization of an A100 = (s_m + s_c) / 15 (8 memory + 7 compute slices). Sizes: 1g.5gb 1/1,
2g.10gb 2/2, 3g.20gb 4/3, 4g.20gb 4/4, 7g.40gb 8/7 (memory/compute slices).
CF-max starts used below (docs/model.md#domain starts): on an empty A100 a 3g.20gb goes to 4 (CF 10 vs 7 at 0)
and a 4g.20gb to 0 (its only start); with slices 0–1 used a 2g.10gb goes to 2 (CF 7 vs 6 at 4); with 0–3 used
a 1g.5gb goes to 6 (CF 4 vs 3 at 4 or 5); with 0–3 and 6 used a 1g.5gb goes to 4 (CF 1 at 4 and 5, lowest).
"""

from __future__ import annotations

import pytest

from origamig.cluster.records import GiSlot, Placement
from origamig.errors import UserError
from origamig.judge.check import check_placement
from origamig.policies.base import Placed, make_policy
from origamig.policies.tc.compaction import CompactionState, compact
from tests.builders import at, datacenter, pm, vm


def test_arrival_goes_to_the_fullest_gpu_at_the_default_start():
    s = vm("s", ["1g.5gb"])
    dc = datacenter([pm("pm0"), pm("pm1")], [(s, at(1, (1, 0)))])
    new = vm("new", ["1g.10gb"])
    # Empty GPUs reach (2+1)/15 = 3/15; PM1 GPU 1 (slice 0 used) reaches (1+2 + 1+1)/15 = 5/15 → PM1,
    # GPU 1; start by the default placement: 6 (CF 9; 8 at 2, 7 at 4). MFI would take start 2 there.
    assert make_policy("tc").arrive(dc, new, 0.0, frozenset()) == Placed(Placement(1, (GiSlot(1, 6),)))


def test_compaction_vacates_the_least_utilized_gpu():
    a, b = vm("a", ["4g.20gb"]), vm("b", ["1g.5gb"])
    dc = datacenter([pm("pm0"), pm("pm1")], [(a, at(0, (0, 0))), (b, at(1, (0, 6)))])
    # Active GPUs: PM1 GPU 0 (2/15) before PM0 GPU 0 (8/15). b fits on PM0 GPU 0 (the only other active
    # GPU) in slices free before the compaction: 1g.5gb with 0–3 used → start 6. PM0 GPU 0 received, so
    # it is not vacated; PM1 GPU 0 is vacated without a free GPU (no trial needed).
    result = compact(dc)
    assert result.moves == {"b": at(0, (0, 6))}
    assert result.vacated == ((1, 0),) and result.added == ()
    assert result.stats["trials"] == 0


def _cpu_bound_pair():
    """PM0 holds a full GPU (a: 7g.40gb, 2 cores) and an idle GPU; b and d (4g.20gb, 76 cores) fill
    PMs 1 and 2, so PM0 (78 cores free) can take one of them but not both."""
    a = vm("a", ["7g.40gb"], cpu=2)
    b, d = vm("b", ["4g.20gb"], cpu=76), vm("d", ["4g.20gb"], cpu=76)
    return datacenter(
        [pm("pm0"), pm("pm1"), pm("pm2")], [(a, at(0, (0, 0))), (b, at(1, (0, 0))), (d, at(2, (0, 0)))]
    )


@pytest.mark.parametrize("rule", ["literal", "default"])
def test_compaction_that_vacates_too_few_gpus_with_a_free_one_is_refused(rule):
    dc = _cpu_bound_pair()
    # Order: PM1 GPU 0 (b, 8/15), PM2 GPU 0 (d, 8/15), PM0 GPU 0 (a, 15/15). Nothing fits on another
    # active GPU (4g.20gb needs start 0; PM0 GPU 0 is full), so each needs a free GPU.
    # Trial at b: + PM0 GPU 1 (idle GPU of an active PM) → b there at 0 (78 ≥ 76 cores): 1 vacated.
    #   d then fits nowhere (PM0 GPU 1 start 0 taken; PM0 has 2 cores left) → literal: 1 < 2, refused.
    #   default: + PM2 GPU 1 (PM1 GPU 1 is on a PM the trial emptied) → d moves there inside PM2 (2
    #   vacated); a (7g.40gb) fits nowhere → 2 < 3, refused.
    # Trial at d: + PM0 GPU 1 → d there: 1 vacated; a fails → literal refused; default + PM1 GPU 1 → a
    #   there (PM1 has 4 cores free ≥ 2): 2 vacated, end of order → 2 < 3, refused.
    # Trial at a: + PM0 GPU 1 → a moves inside PM0: 1 vacated, end of order → refused.
    result = compact(dc, rule)
    assert result.moves == {}
    assert result.stats["trials"] == 3 and result.stats["trials_kept"] == 0
    assert result.stats["second_gpus"] == (2 if rule == "default" else 0)


def test_free_gpu_trial_is_kept_when_it_vacates_two():
    a = vm("a", ["7g.40gb"], cpu=2)
    b, d = vm("b", ["4g.20gb"], cpu=40), vm("d", ["4g.20gb"], cpu=40)
    e = vm("e", ["3g.20gb"], cpu=12)
    hogs = [vm(f"hog{n}", cpu=c) for n, c in ((1, 38), (2, 38), (3, 66))]  # no GIs: fill PMs 1–3's CPU
    dc = datacenter(
        [pm("pm0"), pm("pm1"), pm("pm2"), pm("pm3")],
        [(a, at(0, (0, 0))), (b, at(1, (0, 0))), (d, at(2, (0, 0))), (e, at(3, (0, 0)))]
        + [(h, at(n + 1)) for n, h in enumerate(hogs)],
    )
    # Order: PM3 GPU 0 (e, 7/15), PM1 GPU 0 (b, 8/15), PM2 GPU 0 (d, 8/15), PM0 GPU 0 (a, 15/15).
    # e fits on no active GPU (PMs 1, 2 have 2 cores free; PM0 GPU 0 is full) → trial + PM0 GPU 1:
    # e → PM0 GPU 1 start 4 (78 cores free), b → PM0 GPU 1 start 0 (66 ≥ 40; 8/15+ → 15/15), d fails:
    # 2 vacated with one free GPU → kept under both rules. The later trials (at d, at a) vacate
    # fewer than needed and are dropped.
    for rule in ("literal", "default"):
        result = compact(dc, rule)
        assert result.moves == {"b": at(0, (1, 0)), "e": at(0, (1, 4))}, rule
        assert result.vacated == ((1, 0), (3, 0)) and result.added == ((0, 1),), rule


def test_default_and_literal_readings_differ():
    a = vm("a", ["7g.40gb"])  # 28 cores
    b, d = vm("b", ["4g.20gb"]), vm("d", ["4g.20gb"])  # 16 cores each
    f, g = vm("f", ["3g.20gb"]), vm("g", ["1g.5gb"])  # 12 and 4 cores
    dc = datacenter(
        [
            pm("pm0", gpus=["A100-40GB"] * 3),
            pm("pm1", gpus=["A100-40GB"]),
            pm("pm2", gpus=["A100-40GB"]),
            pm("pm3", gpus=["A100-40GB"]),
        ],
        [(a, at(0, (0, 0))), (b, at(1, (0, 0))), (d, at(2, (0, 0))), (f, at(3, (0, 0))), (g, at(3, (0, 4)))],
    )
    # Order: X = PM1 GPU 0 (b, 8/15), Y = PM2 GPU 0 (d, 8/15), Z = PM3 GPU 0 (f, g: 9/15), W = PM0 GPU 0.
    # PM0 has 52 cores free: enough for b + d + f + g (48).
    # default: trial at X + F1 = PM0 GPU 1: b → F1 at 0; d fails (Z has 5–7 free, F1 start 0 taken),
    #   1 < 2 → + F2 = PM0 GPU 2: d → F2 at 0 (2 vacated); Z: f → F1 or F2 at 4 (both 15/15, lowest GPU
    #   F1), g → F2 (10/15; X is vacated) at 6 → 3 vacated; a fails → 3 ≥ 3, kept. No free GPU is left
    #   for a trial at W (PMs 1–3 are empty and have no other GPU; PM0's are all used).
    default = compact(dc, "default")
    assert default.moves == {"b": at(0, (1, 0)), "d": at(0, (2, 0)), "f": at(0, (1, 4)), "g": at(0, (2, 6))}
    assert default.vacated == ((1, 0), (2, 0), (3, 0)) and default.stats["second_gpus"] == 1
    # literal: trial at X + F1: b → F1, d fails → 1 < 2, dropped. Trial at Y + F1: d → F1 at 0; Z: f → F1
    #   at 4 (15/15), g → X (b's GPU, slices 4–7 free before: 10/15) at 6 → 2 vacated; a fails → kept.
    #   Trial at W + PM0 GPU 2: a moves inside PM0, 1 vacated, end of order → dropped.
    literal = compact(dc, "literal")
    assert literal.moves == {"d": at(0, (1, 0)), "f": at(0, (1, 4)), "g": at(1, (0, 6))}
    assert literal.vacated == ((2, 0), (3, 0)) and literal.stats["second_gpus"] == 0


def _receiver_scenario():
    b = vm("b", ["2g.10gb"])
    d, d2, v1, v2 = (vm(n, ["1g.5gb"]) for n in ("d", "d2", "v1", "v2"))
    return datacenter(
        [pm("pm0"), pm("pm1")],
        [
            (b, at(0, (0, 0))),
            (d, at(0, (1, 0))),
            (d2, at(0, (1, 1))),
            (v1, at(1, (0, 0))),
            (v2, at(1, (0, 1))),
        ],
    )


def test_a_vm_moves_once_and_a_receiving_gpu_is_not_vacated():
    dc = _receiver_scenario()
    # All three active GPUs are at 4/15; order by (pm, gpu): X = PM0 GPU 0 (b), Y = PM0 GPU 1 (d, d2),
    # V = PM1 GPU 0 (v1, v2).
    # X: b → Y or V, both 8/15 after; PM tie → PM0: Y, start 2 (slices 0–1 used). Y now received b, so
    # it is skipped — without that rule Y's d, d2 and b would all fit on V, moving b a second time.
    # V: v1 → Y (only receiver with room) at 6, v2 → Y at 4. Vacated: X and V.
    result = compact(dc)
    assert result.moves == {"b": at(0, (1, 2)), "v1": at(0, (1, 6)), "v2": at(0, (1, 4))}
    assert result.vacated == ((0, 0), (1, 0))
    # The two guards, one by one, on the compaction state:
    state = CompactionState(dc)
    assert state.vacate((0, 0))
    assert not state.may_vacate((0, 1))  # Y received b
    del state.receivers[(0, 1)]
    assert state.may_vacate((0, 1)) and not state.vacate((0, 1))  # b already moved: refused


def test_moves_use_only_resources_free_before_so_they_apply_at_once():
    dc = _receiver_scenario()
    result = compact(dc)
    final = {**dc.placement, **result.moves}
    holding = {v: [dc.placement[v]] for v in result.moves}  # every VM at both ends at the same time
    assert check_placement(dc.pms, dc.vms, final, holding=holding) == []


def test_policy_returns_compaction_work_through_the_executor():
    dc = _receiver_scenario()
    tc = make_policy("tc", period_s=600)
    assert tc.next_check(0.0) == 600.0
    work = tc.work(dc, 600.0)
    assert work is not None and work.kind == "compaction"
    assert dict(work.target) == compact(dc).moves and work.pms == frozenset({0, 1})
    assert work.plan.cost.migrations == 3 and work.plan.cost.parking == 0
    # v1 and v2 move between PMs: RAM 16 GB + GI 5 GB each = 42 GB; b moves inside PM0 (executor: 0 bytes).
    assert work.plan.cost.bytes_copied == 42 * 10**9
    assert tc.next_check(600.0) == 1200.0
    dc.apply_placement(work.target)
    tc.finished(dc, work, 600.0 + work.modeled_s)
    c = tc.counters()
    assert (c["compactions"], c["migrations"], c["bytes_moved"], c["vacated_gpus"]) == (1, 3, 42e9, 2)
    assert tc.work(dc, 1200.0) is None  # nothing left to vacate: V is gone, X empty, Y holds all


def test_tc_options_are_validated():
    with pytest.raises(UserError, match="tc_rule"):
        make_policy("tc", tc_rule="loose")
    with pytest.raises(UserError, match="period_s"):
        make_policy("tc", period_s=0)
