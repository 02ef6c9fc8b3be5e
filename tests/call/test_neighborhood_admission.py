"""Algorithm 1's neighborhoods. The admission neighborhood
(`call/admission_neighborhood.select_admission`), which reads each pending VM's PMs lazily and stops
once the bounds refuse more, is the neighborhood of the algorithm read literally: every PM that fits
sorted, then walked whole. The consolidation neighborhood's source test, remembered per PM, answers
as the test made afresh."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.call.admission_neighborhood import select_admission
from origamig.call.consolidation_neighborhood import _worth_emptying, source_worth_emptying
from origamig.call.fit_counts import fits_counts
from origamig.call.neighborhood import Neighborhood
from origamig.call.neighborhood_bounds import Bound, Bounds
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import NO_GPU_CLASS, Weights
from tests.profiles import examples
from tests.strategies import datacenters, random_states, vm_specs


def literal(dc: DataCenter, queue: list[str], bounds: Bounds, locked: frozenset[int]) -> Neighborhood:
    """AdmissionCall(Q) as Algorithm 1 writes it (and as the code read before it was made lazy)."""
    pms: list[int] = []
    vms = 0

    def add(j: int, force: bool = False, extra: int = 0) -> bool:
        nonlocal vms
        if j in pms:
            return True
        if len(pms) >= bounds.pm_limit and not force:
            return False
        load = dc.vm_count(j) + extra
        if not force and vms + load > bounds.n_max:
            return False
        pms.append(j)
        vms += load
        return True

    def take(j: int, force: bool) -> bool:
        nonlocal vms
        if j in pms:
            if not force and vms + 1 > bounds.n_max:
                return False
            vms += 1
            return True
        return add(j, force, 1)

    free = [j for j in range(len(dc.pms)) if j not in locked]
    pending, rejected, classes = [], [], set()
    for n, v in enumerate(queue):
        vm = dc.pending[v]
        pool = [j for j in free if not vm.gis or set(vm.gpu_classes) & set(dc.pms[j].gpu_classes)]
        fit = sorted(
            (j for j in pool if dc.is_active(j) and fits_counts(dc, vm, j)), key=lambda j: (dc.vm_count(j), j)
        )
        if not fit:
            fit = [j for j in pool if fits_counts(dc, vm, j, empty=True)]
            fit.sort(key=lambda j: (not dc.is_active(j), -dc.free_memory_slices(j), j))
            if not fit:
                if not any(fits_counts(dc, vm, j, empty=True) for j in locked):
                    rejected.append(v)  # a VM only a locked PM could take waits for it
                continue
        if take(fit[0], not pending and n == len(rejected)):
            pending.append(v)
            classes.update(vm.gpu_classes)
        for j in fit[1:]:
            if len(pms) >= bounds.pm_limit:
                break
            add(j)
        if len(pms) >= bounds.pm_limit:
            break
    if not pending:
        return Neighborhood((), (), tuple(rejected), "admission")
    oldest = dc.pending[pending[0]]
    spare = next(
        (j for j in free if not dc.is_active(j) and j not in pms and fits_counts(dc, oldest, j, True)), None
    )
    limit = bounds.pm_limit - (1 if spare is not None else 0)
    fill = [
        j
        for j in free
        if dc.is_active(j) and j not in pms and (classes & dc.pms[j].gpu_classes or NO_GPU_CLASS in classes)
    ]
    for j in sorted(fill, key=lambda j: (-dc.free_memory_slices(j), -dc.free_cpu_m(j), j)):
        if len(pms) >= limit:
            break
        add(j)
    if spare is not None and len(pms) < bounds.pm_limit:
        add(spare)
    return Neighborhood(tuple(pms), tuple(pending), tuple(rejected), "admission")


@settings(max_examples=examples(200), deadline=None)
@given(
    st.one_of(datacenters(max_pms=8, max_vms=24, pending=True), random_states(max_pms=8, max_vms=24)),
    st.data(),
)
def test_the_lazy_neighborhood_is_algorithm_1s(dc: DataCenter, data: st.DataObject) -> None:
    for i in range(data.draw(st.integers(0, 4))):
        dc.add_pending(data.draw(vm_specs(vm_id=f"p{i}", max_gis=1)))
    queue = list(dc.pending)
    bound = data.draw(st.sampled_from(list(Bound)))
    bounds = Bounds(
        m_max=data.draw(st.integers(1, 6)),
        n_max=data.draw(st.integers(1, 12)),
        bound=bound,
        pm_cap=data.draw(st.integers(1, 8)),
    )
    locked = frozenset(data.draw(st.lists(st.integers(0, len(dc.pms) - 1), max_size=2)))
    assert select_admission(dc, queue, bounds, locked) == literal(dc, queue, bounds, locked)


@settings(max_examples=examples(100), deadline=None)
@given(random_states(max_pms=6, max_vms=16), st.data())
def test_a_remembered_source_test_is_the_test_made_afresh(dc: DataCenter, data: st.DataObject) -> None:
    """Line 18's source test is remembered with each PM's state and keyed by the weights it reads:
    after changes, copies and other weights, it answers as the test made afresh."""
    states = [dc]
    for _ in range(data.draw(st.integers(1, 10))):
        state = data.draw(st.sampled_from(states))
        weights = Weights(
            pm=data.draw(st.sampled_from([10.0, 50.0])),
            migration=data.draw(st.sampled_from([1.0, 10.0, 40.0])),
        )
        for j in range(len(state.pms)):
            assert source_worth_emptying(state, j, weights) == _worth_emptying(state, j, weights)
        if state.vms and data.draw(st.booleans()):
            state.remove(data.draw(st.sampled_from(sorted(state.vms))))
        else:
            states.append(state.copy())
