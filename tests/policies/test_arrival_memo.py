"""Arrival rules remember each PM's answer until the PM changes (`DataCenter.remembered`): on random
streams of arrivals, departures and copies, the remembered answer is the one computed afresh."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.cluster.catalog import default_catalog
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import GiSlot, Placement, PmSpec, VmSpec, cores_to_m, gb_to_mb
from origamig.policies.arrival_rule import (
    candidate_pms,
    choose_pm,
    first_fit,
    gi_order,
    no_fit,
    variants_on,
)
from origamig.policies.base import Rejection
from origamig.policies.fgd import FgdFit, Workload
from origamig.policies.mfi import mfi_fit_on_pm
from origamig.policies.tc.rule import tc_fit_on_pm
from tests.profiles import examples
from tests.strategies import arrival_stream, datacenters, vm_specs


def afresh(dc: DataCenter, vm: VmSpec, fit: Any) -> Placement | Rejection:
    """`choose_pm` with every PM's answer computed now."""
    if not vm.gis:
        return first_fit(dc, vm)
    best = None
    for j in candidate_pms(dc, vm, frozenset()):
        for variant in variants_on(dc, j, vm):
            hit = fit(dc, j, variant, gi_order(variant))
            if hit is not None and (best is None or hit[0] < best[0]):
                best = (hit[0], j, hit[1])
    return best[2] if best is not None else no_fit(dc, vm, frozenset())


@settings(max_examples=examples(80), deadline=None)
@given(datacenters(max_pms=4, max_vms=6), st.data(), st.sampled_from(["tc", "mfi", "fgd"]))
def test_remembered_answers_equal_fresh_ones(dc: DataCenter, data: st.DataObject, rule: str) -> None:
    shapes = data.draw(st.lists(vm_specs(), min_size=1, max_size=3))  # shapes arrive again and again
    # the same GIs with other cores and memory: an answer that reads them must not be reused
    shapes += [replace(v, cpu_m=2 * v.cpu_m, ram_mb=2 * v.ram_mb) for v in shapes]
    workload = Workload.of(Counter((v.gis, v.cpu_m, v.ram_mb) for v in shapes if v.gis))
    fit: Any = {"tc": tc_fit_on_pm, "mfi": mfi_fit_on_pm, "fgd": FgdFit(workload)}[rule]

    def choose(state: DataCenter, vm: VmSpec) -> Placement | Rejection:
        remembered = choose_pm(state, vm, frozenset(), fit)
        assert remembered == afresh(state, vm, fit)
        return remembered

    arrival_stream(data, dc, shapes, data.draw(st.integers(1, 14)), choose)


def test_an_answer_that_reads_the_vms_cores_is_not_reused_for_other_cores() -> None:
    """FGD scores a PM by what is left after the VM: the same GIs with more cores strand PM 0's GPU
    (4 cores left, a typical VM needs 8) and go to PM 1, even after the smaller VM's answers are kept."""
    a100 = default_catalog().gpu("A100-40GB")
    one = (a100.profile("1g.5gb"),)
    pms = [PmSpec(f"p{j}", cores_to_m(cores), gb_to_mb(256), (a100,)) for j, cores in enumerate((16, 80))]
    fit = FgdFit(Workload.of(Counter({(one, cores_to_m(8), gb_to_mb(16)): 1})))
    small, large = (VmSpec(v, cores_to_m(c), gb_to_mb(16), one) for v, c in (("a", 4), ("b", 12)))
    dc = DataCenter(pms)
    assert choose_pm(dc, small, frozenset(), fit) == Placement(0, (GiSlot(0, 0),))
    assert choose_pm(dc, large, frozenset(), fit) == Placement(1, (GiSlot(0, 0),))
