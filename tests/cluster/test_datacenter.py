"""DataCenter: random place/remove/move sequences keep counters and constraints right.

The constraints are judged by `origamig.judge.check`."""

from __future__ import annotations

import math
import pickle
from dataclasses import replace as dataclass_replace
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import NO_GPU_CLASS, GiSlot, Placement, VmSpec
from origamig.errors import PlacementError
from origamig.judge.check import check, check_counters
from tests.builders import A30, A100, at, datacenter, pm, vm
from tests.profiles import examples
from tests.strategies import datacenters, first_fit_placement, vm_specs


def brute_gamma(dc: DataCenter, h: str) -> int:
    """Γ_h from the placement records alone (paper Eq. 17; Eq. 18 for PMs without GPUs)."""
    if h == NO_GPU_CLASS:
        bare = [j for j, p in enumerate(dc.pms) if not p.gpus]
        on = {pl.pm for pl in dc.placement.values() if pl.pm in bare}
        cpu = sum(dc.vms[v].cpu_m for v, pl in dc.placement.items() if pl.pm in bare)
        ram = sum(dc.vms[v].ram_mb for v, pl in dc.placement.items() if pl.pm in bare)
        cmax = max(dc.pms[j].cpu_m for j in bare)
        rmax = max(dc.pms[j].ram_mb for j in bare)
        return len(on) - max(math.ceil(cpu / cmax), math.ceil(ram / rmax))
    used: dict[tuple[int, int], int] = {}
    slices = 0
    for v, pl in dc.placement.items():
        for prof, slot in zip(dc.vms[v].gis, pl.gis, strict=True):
            if dc.pms[pl.pm].gpus[slot.gpu].gpu_class == h:
                used[(pl.pm, slot.gpu)] = used.get((pl.pm, slot.gpu), 0) + prof.memory_slices
                slices += prof.memory_slices
    size = next(g.memory_slices for p in dc.pms for g in p.gpus if g.gpu_class == h)
    return len(used) - math.ceil(slices / size)


def state(dc: DataCenter) -> tuple[Any, ...]:
    """Everything observable about a data center, to compare before/after a failed mutation."""
    per_pm = [
        (
            dc.free_cpu_m(j),
            dc.free_ram_mb(j),
            dc.vms_on(j),
            [(dc.occupancy(j, k), dc.used_compute(j, k), dc.gis_on(j, k)) for k in range(dc.gpu_count(j))],
        )
        for j in range(len(dc.pms))
    ]
    return (
        dict(dc.placement),
        list(dc.pending),
        per_pm,
        dc.active_pms,
        dict(dc.active_gpus),
        dict(dc.placed_slices),
        [dc.gamma(h) for h in dc.classes],
    )


def assert_consistent(dc: DataCenter) -> None:
    assert check(dc) == []
    assert check_counters(dc) == []
    for h in dc.classes:
        assert dc.gamma(h) == brute_gamma(dc, h), h
    assert dc.active_pms == len({pl.pm for pl in dc.placement.values()})


@st.composite
def random_placements(draw: st.DrawFn, dc: DataCenter, spec: VmSpec) -> Placement:
    """Either the first-fit placement (when there is one) or arbitrary, mostly invalid, slots."""
    if draw(st.booleans()):
        found = first_fit_placement(dc, spec)
        if found is not None:
            return found
    j = draw(st.integers(0, len(dc.pms) - 1))
    slots = tuple(GiSlot(draw(st.integers(0, 2)), draw(st.integers(0, 8))) for _ in spec.gis)
    return Placement(j, slots)


def attempt(dc: DataCenter, action: Any) -> None:
    """Run a mutation; if it raises PlacementError the state must be unchanged."""
    before = state(dc)
    try:
        action()
    except PlacementError:
        assert state(dc) == before
        event("rejected")
    else:
        event("applied")


@settings(max_examples=examples(120), deadline=None)
@given(datacenters(max_pms=4, max_vms=8, pending=True), st.data())
def test_random_mutations_keep_counters_and_constraints(dc: DataCenter, data: st.DataObject) -> None:
    assert_consistent(dc)
    for step in range(data.draw(st.integers(1, 12))):
        op = data.draw(st.sampled_from(["place", "remove", "move"]))
        running = sorted(dc.vms)
        if op == "place" or not running:
            spec = data.draw(vm_specs(vm_id=f"new{step}"))
            placement = data.draw(random_placements(dc, spec))
            attempt(dc, lambda s=spec, p=placement: dc.place(s, p))
        elif op == "remove":
            dc.remove(data.draw(st.sampled_from(running)))
        else:
            vm_id = data.draw(st.sampled_from(running))
            placement = data.draw(random_placements(dc, dc.vms[vm_id]))
            attempt(dc, lambda v=vm_id, p=placement: dc.move(v, p))
        assert_consistent(dc)


@settings(max_examples=examples(50), deadline=None)
@given(datacenters(max_vms=6), st.data())
def test_copy_is_independent(dc: DataCenter, data: st.DataObject) -> None:
    before = state(dc)
    twin = dc.copy()
    assert state(twin) == before
    for vm_id in sorted(twin.vms):
        twin.remove(vm_id)
    spec = data.draw(vm_specs(vm_id="extra"))
    placement = first_fit_placement(twin, spec)
    if placement is not None:
        twin.place(spec, placement)
    assert state(dc) == before
    assert_consistent(dc)
    assert_consistent(twin)


@settings(max_examples=examples(80), deadline=None)
@given(datacenters(max_pms=4, max_vms=8, pending=True), st.data())
def test_copies_that_share_records_never_see_each_others_changes(dc: DataCenter, data: st.DataObject) -> None:
    """States copied from one another (copies of copies, the original changed after a copy) share
    their PMs' records until one changes a PM: a change to one state is seen by no other, and each
    stays consistent."""
    states = [dc]
    seen = [state(dc)]
    for step in range(data.draw(st.integers(1, 16))):
        n = data.draw(st.integers(0, len(states) - 1))
        target = states[n]
        op = data.draw(st.sampled_from(["copy", "place", "remove", "move", "reorder"]))
        running = sorted(target.vms)
        if op == "copy":
            states.append(target.copy())
            seen.append(state(target))
        elif op == "remove" and running:
            target.remove(data.draw(st.sampled_from(running)))
        elif op == "move" and running:
            vm_id = data.draw(st.sampled_from(running))
            placement = data.draw(random_placements(target, target.vms[vm_id]))
            attempt(target, lambda t=target, v=vm_id, p=placement: t.move(v, p))
        elif op == "reorder" and running:
            target.reorder_as_applied([data.draw(st.sampled_from(running))], [])
        else:
            spec = data.draw(vm_specs(vm_id=f"new{step}"))
            placement = data.draw(random_placements(target, spec))
            attempt(target, lambda t=target, s=spec, p=placement: t.place(s, p))
        seen[n] = state(target)
        for other, expected in zip(states, seen, strict=True):
            assert state(other) == expected
    for each in states:
        assert_consistent(each)


def test_invalid_placements_raise_and_change_nothing() -> None:
    dc = datacenter(
        [pm("pm0", (A100, A30), cpu=16, ram_gb=64), pm("pm1", ())],
        [(vm("a", ["3g.20gb"]), at(0, (0, 4))), (vm("c", ["1g.6gb"], gpu=A30, cpu=2), at(0, (1, 3)))],
    )
    cases = [
        (vm("b", ["1g.5gb"]), at(0, (0, 4))),  # overlaps a's 3g.20gb on slices 4-7
        (vm("b", ["1g.10gb"]), at(0, (0, 1))),  # 1 is not a permitted start of 1g.10gb
        (vm("b", ["1g.5gb"]), at(0, (1, 0))),  # GPU 1 is an A30: wrong class
        (vm("b", ["1g.5gb"]), at(0, (2, 0))),  # no GPU 2
        (vm("b", ["1g.5gb"]), at(1, (0, 0))),  # pm1 has no GPU
        (vm("b", ["1g.5gb"]), at(2, (0, 0))),  # no PM 2
        (vm("b", ["1g.5gb", "1g.5gb"]), at(0, (0, 0))),  # one slot for two GIs
        (vm("b", ["1g.5gb", "1g.5gb"]), at(0, (0, 0), (0, 0))),  # its two GIs overlap each other
        (vm("b", ["4g.20gb"]), at(0, (0, 0))),  # 16 cores needed, 2 free (a uses 12, c 2)
        (vm("a", ["1g.5gb"]), at(0, (0, 0))),  # a is already running
    ]
    for spec, placement in cases:
        before = state(dc)
        with pytest.raises(PlacementError):
            dc.place(spec, placement)
        assert state(dc) == before, spec
    before = state(dc)
    with pytest.raises(PlacementError):
        dc.move("a", at(0, (1, 0)))  # 3g.20gb on the A30
    assert state(dc) == before
    assert dc.vms_on(0) == ["a", "c"]  # a failed move keeps the order
    assert_consistent(dc)


def test_gamma_by_hand() -> None:
    # Two PMs with 2 A100s each; three 1g.5gb VMs spread over 3 GPUs: 3 active GPUs, 3 slices of 8
    # placed → Γ = 3 − ⌈3/8⌉ = 2. A bare PM with one 4-core VM of 80 cores: Γ_0 = 1 − 1 = 0.
    dc = datacenter(
        [pm("p0"), pm("p1"), pm("p2", ())],
        [
            (vm("a", ["1g.5gb"]), at(0, (0, 0))),
            (vm("b", ["1g.5gb"]), at(0, (1, 0))),
            (vm("c", ["1g.5gb"]), at(1, (0, 0))),
            (vm("d", []), at(2)),
        ],
    )
    assert dc.gamma("100") == 2
    assert dc.gamma(NO_GPU_CLASS) == 0
    dc.move("b", at(0, (0, 1)))  # consolidate onto GPU 0 of p0: 2 active GPUs → Γ = 1
    assert dc.gamma("100") == 1
    assert_consistent(dc)


def exact(dc: DataCenter) -> tuple[Any, ...]:
    """`state`, and the order of the running VMs (a state sent elsewhere keeps it)."""
    return (*state(dc), list(dc.vms.items()), list(dc.placement.items()), list(dc.pending.items()))


@settings(max_examples=examples(80), deadline=None)
@given(datacenters(max_pms=4, max_vms=8, pending=True), st.data())
def test_changes_on_the_journaled_pms_bring_a_copy_sent_elsewhere_up_to_date(
    dc: DataCenter, data: st.DataObject
) -> None:
    """A copy pickled to elsewhere (the service's optimizer worker), then brought up to date again and
    again by the changes on the PMs the journal names since: the same state, orders included; a
    scratch copy of it changed afterwards (the worker's check) leaves it as it was."""
    remote = pickle.loads(pickle.dumps(dc.copy()))
    read = len(dc.journal())
    for round_ in range(data.draw(st.integers(1, 4))):
        for step in range(data.draw(st.integers(0, 6))):
            op = data.draw(st.sampled_from(["place", "remove", "move", "reorder", "queue", "unqueue"]))
            running = sorted(dc.vms)
            if op == "remove" and running:
                dc.remove(data.draw(st.sampled_from(running)))
            elif op == "move" and running:
                vm_id = data.draw(st.sampled_from(running))
                placement = data.draw(random_placements(dc, dc.vms[vm_id]))
                attempt(dc, lambda v=vm_id, p=placement: dc.move(v, p))
            elif op == "reorder" and running:
                dc.reorder_as_applied([data.draw(st.sampled_from(running))], [])
            elif op == "queue":
                dc.add_pending(data.draw(vm_specs(vm_id=f"q{round_}.{step}")))
            elif op == "unqueue" and dc.pending:
                dc.drop_pending(data.draw(st.sampled_from(sorted(dc.pending))))
            else:
                spec = data.draw(vm_specs(vm_id=f"new{round_}.{step}"))
                placement = data.draw(random_placements(dc, spec))
                attempt(dc, lambda s=spec, p=placement: dc.place(s, p))
        changes = dc.copy().changes_on(dc.journal()[read:])
        read = len(dc.journal())
        remote.apply_changes(pickle.loads(pickle.dumps(changes)))
        assert exact(remote) == exact(dc)
        assert_consistent(remote)
        sent = exact(remote)
        scratch = remote.copy()
        for vm_id in sorted(scratch.vms)[:2]:
            scratch.remove(vm_id)
        assert exact(remote) == sent


# --- a PM added to a running state ----------------------------------------------------------------
def _state(dc: DataCenter) -> tuple[Any, ...]:
    """Everything a state answers, for comparing two states built different ways."""
    classes = dc.classes
    return (
        dc.pms,
        dc.index,
        {h: list(v) for h, v in dc.class_pms.items()},
        classes,
        [dc.gamma(h) for h in classes],
        dict(dc.placement),
        list(dc.pending),
        dc.active_pms,
        dc.no_gpu_pms,
        [(dc.free_cpu_m(j), dc.free_ram_mb(j), dc.free_memory_slices(j)) for j in range(len(dc.pms))],
    )


@settings(max_examples=examples(100), deadline=None)
@given(
    datacenters(max_pms=4, max_vms=10, pending=True),
    st.lists(st.tuples(st.sampled_from((A100, A30)), st.integers(0, 2)), min_size=1, max_size=3),
    st.lists(vm_specs(), max_size=6),
)
def test_a_pm_added_to_a_state_is_as_if_the_state_had_been_built_with_it(
    dc: DataCenter, added: list[tuple[str, int]], later: list[VmSpec]
) -> None:
    # Added PMs (some without GPUs, some of a new class) go last; the state then answers as one built
    # with them from the start, before and after more VMs are placed; a copy made before keeps its PMs.
    before = dc.copy()
    new = [pm(f"new{n}", [g] * k, cpu=8 * (n + 1)) for n, (g, k) in enumerate(added)]
    built = DataCenter([*dc.pms, *new])
    for v, pl in dc.placement.items():
        built.place(dc.vms[v], pl)
    for v in dc.pending.values():
        built.add_pending(v)
    journal = dc.journal()
    for n, spec in enumerate(new):
        assert dc.add_pm(spec) == len(before.pms) + n
    assert dc.journal() is not journal  # readers over PMs look at every PM again
    assert _state(dc) == _state(built)
    assert len(before.pms) == len(before.index) == len(dc.pms) - len(new)
    assert not check(before) and not check_counters(before)
    for n, spec in enumerate(later):
        spec = VmSpec(f"later{n}", spec.cpu_m, spec.ram_mb, spec.gis)
        where = first_fit_placement(dc, spec)
        if where is not None:
            dc.place(spec, where)
            built.place(spec, where)
    assert _state(dc) == _state(built)
    assert not check(dc) and not check_counters(dc)


def test_a_pm_with_a_known_id_or_another_geometry_of_a_class_is_refused() -> None:
    dc = datacenter([pm("pm0")], [])
    with pytest.raises(PlacementError, match="already known"):
        dc.add_pm(pm("pm0"))
    odd = pm("odd")
    other = dataclass_replace(odd.gpus[0], memory_slices=7)
    with pytest.raises(PlacementError, match="different slice counts"):
        dc.add_pm(dataclass_replace(odd, gpus=(other,)))
    assert len(dc.pms) == 1 and "odd" not in dc.index
