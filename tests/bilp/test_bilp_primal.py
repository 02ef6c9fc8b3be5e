"""The fast primal answer (`bilp.primal.repair`) and its hand-over to the solver (`compile.start_of`).

Properties, on random fragmented states with pending and pinned VMs: the repair's placement passes
the independent checker, keeps every running VM placed, moves no pinned VM, keeps the GIs of a VM
that stays on its PM when the platform cannot move GIs inside a PM, and is worth what it says, more
than the start; as the solver's start its column vector meets every row of the model and is worth
the same; a solve given it returns at least as much. Hand-made cases show each kind of move."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.bilp import Limits, build_model, compile_model, restrict, solve_region
from origamig.bilp.compile import decode, start_of
from origamig.bilp.primal import repair
from origamig.bilp.restrict import Region
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, Weights
from origamig.judge.check import check_placement
from origamig.judge.objective import evaluate
from tests.builders import at, pm, vm
from tests.profiles import examples
from tests.strategies import random_states, vm_specs

WEIGHTS = Weights()
ONE_NODE = Limits(deterministic=True, work_limit=1, threads=1)


@st.composite
def states(draw: st.DrawFn) -> DataCenter:
    """A random fragmented state, some of its VMs pinned, a few VMs pending, GI moves inside a PM
    allowed or not."""
    dc = draw(random_states(max_pms=4, max_vms=10))
    out = DataCenter(dc.pms, intra_pm_moves=draw(st.booleans()))
    for v in dc.vms:
        spec = dc.vms[v]
        out.place(replace(spec, migratable=not draw(st.booleans()) or draw(st.booleans())), dc.placement[v])
    for n in range(draw(st.integers(0, 3))):
        out.add_pending(draw(vm_specs(vm_id=f"p{n}")))
    return out


def value(dc: DataCenter, placement: Mapping[str, Placement], region: Region) -> float:
    return evaluate(dc.pms, region.vms, placement, region.previous, WEIGHTS, region.pms, region.vms).value


@settings(max_examples=examples(150), deadline=None)
@given(states())
def test_the_repair_is_valid_and_better_than_the_start(dc: DataCenter) -> None:
    region = restrict(dc, range(len(dc.pms)), list(dc.pending))
    found = repair(dc.pms, region, WEIGHTS)
    if found is None:
        return
    target = found.target
    assert check_placement(dc.pms, region.vms, target) == []
    assert set(region.previous) <= set(target)  # no running VM is dropped
    assert set(target) <= set(region.vms)
    for v, before in region.previous.items():
        spec = region.vms[v]
        if not spec.migratable or (not dc.intra_pm_moves and target[v].pm == before.pm):
            assert target[v] == before, v
    assert found.start == value(dc, region.previous, region)
    assert found.value == value(dc, target, region) > found.start


@settings(max_examples=examples(100), deadline=None)
@given(states())
def test_the_repair_as_start_meets_every_row_and_keeps_its_worth(dc: DataCenter) -> None:
    region = restrict(dc, range(len(dc.pms)), list(dc.pending))
    found = repair(dc.pms, region, WEIGHTS)
    if found is None:
        return
    model = build_model(region, WEIGHTS)
    compiled = compile_model(model)
    x = start_of(model, compiled, found.target)
    assert x is not None
    assert compiled.holds(x)
    assert compiled.objective_of(x) >= found.value - 1e-6  # a kept configuration is worth as much
    assert value(dc, decode(model, compiled, x), region) == compiled.objective_of(x)
    solved = solve_region(dc, region.pms, region.pending, WEIGHTS, limits=ONE_NODE, primal=True)
    assert solved.result.objective is not None and solved.result.objective >= found.value - 1e-6


def test_the_current_placement_is_its_own_start_vector() -> None:
    dc = DataCenter([pm("a"), pm("b")])
    dc.place(vm("u", ("3g.20gb",)), at(0, (0, 0)))
    dc.place(vm("w", ("1g.5gb",)), at(1, (1, 6)))
    region = restrict(dc, [0, 1], [])
    model = build_model(region, WEIGHTS)
    compiled = compile_model(model)
    x = start_of(model, compiled, region.previous)
    assert x is not None and list(x) == list(compiled.hint)


def test_a_lone_vm_leaves_its_server_for_a_busy_one() -> None:
    dc = DataCenter([pm("a"), pm("b")])
    dc.place(vm("big", ("4g.20gb",)), at(0, (0, 0)))
    dc.place(vm("small", ("1g.5gb",)), at(1, (0, 0)))
    found = repair(dc.pms, restrict(dc, [0, 1], []), WEIGHTS)
    assert found is not None
    assert found.target["small"].pm == 0 and found.target["big"] == dc.placement["big"]


def test_a_pending_vm_gets_room_by_laying_a_gpu_out_again() -> None:
    # One A100 with 1g GIs at slices 0 and 4: no free start for a 4g GI (starts 0 only) until the
    # GI at slice 0 moves next to the other one.
    dc = DataCenter([pm("a", gpus=("A100-40GB",))])
    dc.place(vm("x", ("1g.5gb",)), at(0, (0, 0)))
    dc.place(vm("y", ("1g.5gb",)), at(0, (0, 4)))
    dc.add_pending(vm("new", ("4g.20gb",)))
    assert dc.placement["x"].gis[0].start == 0
    found = repair(dc.pms, restrict(dc, [0], ["new"]), WEIGHTS)
    assert found is not None and "new" in found.target
    assert found.target["new"].gis[0].start == 0
    assert {found.target["x"].gis[0].start, found.target["y"].gis[0].start} <= {4, 5, 6}


def test_a_pinned_vm_blocks_the_move_that_needs_it() -> None:
    dc = DataCenter([pm("a", gpus=("A100-40GB",))])
    dc.place(replace(vm("x", ("1g.5gb",)), migratable=False), at(0, (0, 0)))
    dc.place(vm("y", ("1g.5gb",)), at(0, (0, 4)))
    dc.add_pending(vm("new", ("4g.20gb",)))
    assert repair(dc.pms, restrict(dc, [0], ["new"]), WEIGHTS) is None


def test_a_gpu_is_emptied_when_free_starts_weigh_little() -> None:
    # An active GPU costs e = 20 and a GI move inside the PM δ = 10; under the paper's w = 1 the free
    # starts a lone GI's GPU offers outweigh the rest, under w = 0.25 they do not.
    dc = DataCenter([pm("a")])
    dc.place(vm("x", ("3g.20gb",)), at(0, (0, 0)))
    dc.place(vm("y", ("2g.10gb",)), at(0, (1, 0)))
    region = restrict(dc, [0], [])
    assert repair(dc.pms, region, WEIGHTS) is None
    found = repair(dc.pms, region, replace(WEIGHTS, free_start=0.25))
    assert found is not None
    assert found.target["x"].gis[0].gpu == found.target["y"].gis[0].gpu  # one GPU left active
