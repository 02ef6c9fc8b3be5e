"""The after-plan summary made from the PMs a plan changed (`summarize(..., since=...)`) is the
summary made afresh, on random states and random changes to a copy of them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.summary import summarize
from tests.profiles import examples
from tests.strategies import datacenters, first_fit_placement, random_states, vm_specs


@settings(max_examples=examples(100), deadline=None)
@given(st.one_of(datacenters(max_pms=6, max_vms=12), random_states(max_pms=6, max_vms=12)), st.data())
def test_the_summary_since_a_copy_is_the_summary_afresh(dc: DataCenter, data: st.DataObject) -> None:
    before = summarize(dc)
    end = dc.copy()
    for step in range(data.draw(st.integers(0, 6))):
        if end.vms and data.draw(st.booleans()):
            end.remove(data.draw(st.sampled_from(sorted(end.vms))))
        else:
            vm = data.draw(vm_specs(vm_id=f"new{step}"))
            placement = first_fit_placement(end, vm)
            if placement is not None:
                end.place(vm, placement)
    assert sorted(end.differing_pms(dc)) == sorted(set(end.journal()))
    assert summarize(end, since=(dc, before)) == summarize(end)
    assert summarize(dc) == before  # the state copied from is as it was
