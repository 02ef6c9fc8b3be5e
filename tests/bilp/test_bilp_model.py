"""The configuration-form BILP against brute force and against the paper's literal Eq. (4)–(16)."""

from __future__ import annotations

import itertools
import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.bilp import Limits, build_model, compile_model, decode, restrict, solve_region
from origamig.bilp.backends.base import get_backend
from origamig.bilp.configurations import enumerate_configurations, usable_configurations
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.mig import geometry
from origamig.cluster.records import MILLI, GiSlot, Placement, PmSpec, VmSpec, Weights
from origamig.judge.check import check_placement
from origamig.judge.objective import evaluate
from tests.bilp_instances import A30, A100, fragmented
from tests.bilp_literal import build_literal, literal_placement
from tests.profiles import examples

# docs/model.md#configuration-space / paper §3: configurations of one A100 40GB, the empty one included
A100_CONFIGURATIONS = 723
EXACT = Limits(time_limit_s=60, threads=1)


def _all_placements(dc: DataCenter, region, vm_ids):
    """Every feasible placement of `vm_ids` on the region's PMs (pending VMs may stay out)."""
    vms = region.vms

    def options(vm: VmSpec):
        for j in region.pms:
            pm = dc.pms[j]
            per_gi = [
                [
                    GiSlot(k, z)
                    for k, g in enumerate(pm.gpus)
                    if g.gpu_class == p.gpu_class and g.has_profile(p.name)
                    for z in g.profile(p.name).starts
                ]
                for p in vm.gis
            ]
            for slots in itertools.product(*per_gi):
                yield Placement(j, tuple(slots))

    choices = [list(options(vms[v])) + ([None] if v not in region.previous else []) for v in vm_ids]
    for combo in itertools.product(*choices):
        target = {v: pl for v, pl in zip(vm_ids, combo, strict=True) if pl is not None}
        if not check_placement(dc.pms, vms, target):
            yield target


def _tiny(seed: int) -> DataCenter:
    """Two PMs (one A30 each; or an A30 + an A100), 3 running VMs with ≤ 2 GIs (the first of every
    third instance has none), one pending VM, CPU tight enough to bind."""
    rng = random.Random(seed)
    models = [(A30,), (A30,)] if seed % 2 else [(A30,), (A100,)]
    pms = [PmSpec(f"pm{j}", rng.choice([8, 12, 24]) * MILLI, 96 * MILLI, models[j]) for j in range(2)]
    dc = DataCenter(pms)
    n = 0
    while len(dc.vms) < 3 and n < 60:
        n += 1
        j = rng.randrange(2)
        model = pms[j].gpus[0]
        gis = tuple(
            rng.choice(model.profiles) for _ in range(0 if n == 1 and seed % 3 == 0 else rng.randint(1, 2))
        )
        vm = VmSpec(f"vm{n}", 4 * MILLI, 16 * MILLI, gis)
        occ = dc.occupancy(j, 0)
        slots = []
        for p in gis:
            z = geometry(model).default_start(occ, p)
            if z is None:
                break
            occ |= p.mask(z)
            slots.append(GiSlot(0, z))
        if len(slots) == len(gis) and dc.fits_resources(vm, j):
            dc.place(vm, Placement(j, tuple(slots)))
    model = rng.choice([A30, A100])
    dc.add_pending(
        VmSpec(
            "new", 4 * MILLI, 16 * MILLI, tuple(rng.choice(model.profiles) for _ in range(rng.randint(1, 2)))
        )
    )
    return dc


def test_a100_configuration_count() -> None:
    assert len(enumerate_configurations(A100)) == A100_CONFIGURATIONS


def test_current_configuration_survives_pruning() -> None:
    # A GPU holding 1g.5gb@0 and 3g.20gb@4: the current configuration keeps every previous slot,
    # so no configuration with the same counts can dominate it.
    confs = enumerate_configurations(A100)
    prev = frozenset({(0, 0), (3, 4)})
    usable = usable_configurations(A100, (2, 2, 2, 2, 1, 1), prev, Weights())
    assert any(frozenset(confs[c].slots) == prev for c in usable)


def test_brute_force_optimum_equals_model_optimum() -> None:
    for seed in range(12):
        dc = _tiny(seed)
        w = Weights(migration=(10.0, 0.0, 40.0)[seed % 3], free_start=(1.0, 3.0)[seed % 2])
        region = restrict(dc, [0, 1], ["new"])
        ids = list(region.vms)
        best = max(
            evaluate(dc.pms, region.vms, t, dc.placement, w, region.pms, ids).value
            for t in _all_placements(dc, region, ids)
        )
        sol = solve_region(dc, [0, 1], ["new"], w, limits=EXACT)
        assert sol.result.proved_optimal
        assert sol.result.objective == best, seed
        assert evaluate(dc.pms, region.vms, sol.target, dc.placement, w, region.pms, ids).value == best


def _solve_literal(region, w):
    lit = build_literal(region, w)
    compiled = compile_model(lit)
    res = get_backend("highs").solve(compiled, compiled.hint, EXACT)
    values = {id(v): x for v, x in zip(compiled.columns, res.x, strict=True)}
    return lit, res, values


def test_literal_form_sum_f_is_cf_of_active_gpus_at_the_optimum() -> None:
    w = Weights()
    for seed in range(4):
        dc = _tiny(seed)
        region = restrict(dc, [0, 1], ["new"])
        if any(not vm.gis for vm in region.vms.values()):
            continue  # the literal form charges a GI-less VM's PM change once (see bilp_literal)
        lit, res, values = _solve_literal(region, w)
        target = literal_placement(lit, region, values)
        f_sum = sum(values.get(id(v), v.value or 0) for v in lit.pyomo.f.values())
        occ: dict[tuple[int, int], int] = {}
        for v, pl in target.items():
            for p, s in zip(region.vms[v].gis, pl.gis, strict=True):
                occ[(pl.pm, s.gpu)] = occ.get((pl.pm, s.gpu), 0) | p.mask(s.start)
        cf = sum(geometry(dc.pms[j].gpus[k]).cf(mask) for (j, k), mask in occ.items())
        assert round(f_sum) == cf
        assert (
            res.objective
            == evaluate(dc.pms, region.vms, target, dc.placement, w, region.pms, list(region.vms)).value
        )


@settings(max_examples=examples(25), deadline=None)
@given(seed=st.integers(0, 10**6), n_pms=st.integers(1, 3), pending=st.integers(0, 3))
def test_configuration_form_optimum_equals_literal_form(seed: int, n_pms: int, pending: int) -> None:
    rng = random.Random(seed)
    dc = fragmented(
        rng, n_pms, 3 * n_pms, pending, models=(A100,) if seed % 2 else (A30, A30), cpu=24, ram_gb=96
    )
    pend = list(dc.pending)
    region = restrict(dc, range(n_pms), pend)
    w = Weights(migration=rng.choice([0.0, 3.0, 10.0]), pm=rng.choice([10.0, 50.0]))
    _, lit_res, _ = _solve_literal(region, w)
    sol = solve_region(dc, range(n_pms), pend, w, limits=EXACT)
    assert lit_res.proved_optimal and sol.result.proved_optimal
    assert np.isclose(sol.result.objective, lit_res.objective)


def test_decoded_start_equals_current_placement() -> None:
    dc = fragmented(random.Random(3), 4, 16, 3)
    region = restrict(dc, range(4), list(dc.pending))
    model = build_model(region, Weights())
    compiled = compile_model(model)
    assert decode(model, compiled, compiled.hint) == dc.placement
    assert (
        compiled.objective_of(compiled.hint)
        == evaluate(
            dc.pms, region.vms, dc.placement, dc.placement, Weights(), region.pms, list(region.vms)
        ).value
    )
