"""The hybrids that tell which part of a policy wins (docs/policies.md#hybrids): OrigaMIG's calls
with FGD's arrival rule (`origamig -o arrival=fgd`), and FGD's descheduler with TC's arrival rule
(`fgd -o arrival=tc`). Each uses both of its parts.

A100-40GB profiles (memory slices, starts): 1g.5gb (1, 0–6), 4g.20gb (4, 0). VMs take 4 cores / 16 GB
per compute slice.
"""

from __future__ import annotations

import pytest

import origamig
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import VmSpec
from origamig.errors import UserError
from origamig.judge.check import check
from origamig.policies.base import Deferred, Placed, Policy, make_policy
from tests.builders import A100, at, datacenter, pm, vm

BIG = vm("big", ["4g.20gb"])  # the workload's common shape here
SMALL = vm("small", ["1g.5gb"])


def taught(policy: Policy, dc: DataCenter, shapes: list[VmSpec]) -> None:
    """Let `policy` observe arrivals of `shapes` (decisions are not applied: `dc` is unchanged)."""
    for n, shape in enumerate(shapes):
        policy.arrive(dc, VmSpec(f"seen{n}", shape.cpu_m, shape.ram_mb, shape.gis), 0.0, frozenset())


def test_origamig_with_fgd_arrivals_places_by_fgd_s_rule() -> None:
    # pm0 has 18 cores: after a 4-core VM it could no longer host a 16-core 4g.20gb VM. FGD's rule sends
    # the 1g.5gb to pm1 at start 4 (4g.20gb's window 0–3 kept); TC's rule, OrigaMIG's default, to pm0
    # at the default placement's start 6.
    dc = datacenter([pm("pm0", gpus=[A100], cpu=18), pm("pm1", gpus=[A100])])
    hybrid, shipped = make_policy("origamig", arrival="fgd"), make_policy("origamig")
    taught(hybrid, dc, [BIG] * 7)
    taught(shipped, dc, [BIG] * 7)
    assert hybrid.arrive(dc, SMALL, 0.0, frozenset()) == Placed(at(1, (0, 4)))
    assert shipped.arrive(dc, SMALL, 0.0, frozenset()) == Placed(at(0, (0, 6)))
    fgd = make_policy("fgd")
    taught(fgd, dc, [BIG] * 7)
    assert fgd.arrive(dc, SMALL, 0.0, frozenset()) == Placed(at(1, (0, 4)))


def test_origamig_with_fgd_arrivals_defers_what_fits_nowhere_and_its_call_admits_it() -> None:
    # One A100 with 1g.5gb VMs at starts 1 and 5: no 4g.20gb window (starts 0 only) is free. FGD's rule
    # finds no place, so the VM waits; an admission call moves the VM at start 1 and admits it.
    a, b = vm("a", ["1g.5gb"]), vm("b", ["1g.5gb"])
    dc = datacenter([pm("pm0", gpus=[A100])], [(a, at(0, (0, 1))), (b, at(0, (0, 5)))])
    hybrid = make_policy("origamig", arrival="fgd", deterministic=True, work_limit=100)
    new = vm("new", ["4g.20gb"])
    assert isinstance(hybrid.arrive(dc, new, 0.0, frozenset()), Deferred)
    dc.add_pending(new)
    work = hybrid.work(dc, hybrid.next_check(0.0) or 10.0)
    assert work is not None and work.kind == "admission" and work.admitted == ("new",)
    assert work.plan is not None and work.plan.cost.migrations >= 1
    dc.apply_placement(work.target)  # starts the pending VM where the call puts it
    assert check(dc) == [] and dc.placement["new"].gis[0].start == 0


def test_fgd_with_tc_arrivals_places_by_tc_s_rule_and_deschedules_by_fgd() -> None:
    dc = datacenter([pm("pm0", gpus=[A100], cpu=18), pm("pm1", gpus=[A100])])
    hybrid = make_policy("fgd", arrival="tc", ratio=1.0)
    taught(hybrid, dc, [BIG] * 7)
    # TC's rule: both GPUs empty, equally full after the VM: the lowest PM, at the default start 6.
    assert hybrid.arrive(dc, SMALL, 0.0, frozenset()) == Placed(at(0, (0, 6)))
    assert make_policy("tc").arrive(dc, SMALL, 0.0, frozenset()) == Placed(at(0, (0, 6)))
    # FGD's descheduler, with the typical VMs read from the arrivals: a 1g.5gb at start 0 closes
    # 4g.20gb's only window on pm1; placed again by FGD's rule it goes to start 4 of the same GPU.
    blocker = vm("blocker", ["1g.5gb"])
    dc = datacenter([pm("pm0", gpus=[A100], cpu=18), pm("pm1", gpus=[A100])], [(blocker, at(1, (0, 0)))])
    work = hybrid.work(dc, 900.0)
    assert work is not None and work.kind == "deschedule"
    assert dict(work.target) == {"blocker": at(1, (0, 4))}
    dc.apply_placement(work.target)
    assert check(dc) == []


def test_fgd_s_arrival_rule_must_be_known() -> None:
    with pytest.raises(UserError, match="arrival: 'ff' is not one of fgd, tc"):
        make_policy("fgd", arrival="ff")


def test_each_hybrid_runs_and_moves_vms() -> None:
    # A short simulation of each: arrivals placed by one policy's rule, moves made by the other's part.
    setting = {"pms": 8, "warmup_h": 2, "measure_h": 4, "seed": 1}
    hybrid = origamig.run_policy("origamig", arrival="fgd", work_limit=100, **setting)
    shipped = origamig.run_policy("origamig", work_limit=100, **setting)
    assert hybrid.counters["calls"] > 0 and hybrid.metrics != shipped.metrics
    tc_fgd = origamig.run_policy("fgd", arrival="tc", ratio=0.1, period_s=600.0, **setting)
    fgd = origamig.run_policy("fgd", ratio=0.1, period_s=600.0, **setting)
    assert tc_fgd.counters["migrations"] > 0 and tc_fgd.metrics != fgd.metrics
