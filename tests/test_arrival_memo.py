"""Arrival rules remember each PM's answer until the PM changes (`DataCenter.remembered`): on random
streams of arrivals, departures and copies, the remembered answer is the one computed afresh."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, VmSpec
from origamig.policies.arrival_rule import (
    candidate_pms,
    choose_pm,
    first_fit,
    gi_order,
    no_fit,
    variants_on,
)
from origamig.policies.base import Rejection
from origamig.policies.mfi import mfi_fit_on_pm
from origamig.policies.tc.rule import tc_fit_on_pm
from tests.strategies import datacenters, vm_specs


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


@settings(max_examples=60, deadline=None)
@given(datacenters(max_pms=4, max_vms=6), st.data(), st.sampled_from([tc_fit_on_pm, mfi_fit_on_pm]))
def test_remembered_answers_equal_fresh_ones(dc: DataCenter, data: st.DataObject, fit: Any) -> None:
    states = [dc]
    shapes = data.draw(st.lists(vm_specs(), min_size=1, max_size=3))  # shapes arrive again and again
    for step in range(data.draw(st.integers(1, 14))):
        state = states[data.draw(st.integers(0, len(states) - 1))]
        op = data.draw(st.sampled_from(["arrive", "arrive", "depart", "copy"]))
        if op == "copy":
            states.append(state.copy())
        elif op == "depart" and state.vms:
            state.remove(data.draw(st.sampled_from(sorted(state.vms))))
        else:
            vm = replace(data.draw(st.sampled_from(shapes)), id=f"new{step}")
            remembered = choose_pm(state, vm, frozenset(), fit)
            assert remembered == afresh(state, vm, fit)
            if not isinstance(remembered, Rejection):
                state.place(vm, remembered)
