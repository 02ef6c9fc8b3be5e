"""Restriction (paper §5.3, §5.5): the region model equals the full model with the outside fixed."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.bilp import (
    Limits,
    build_model,
    compile_model,
    fixed_constant,
    restrict,
    solve_region,
)
from origamig.bilp.backends.base import get_backend
from origamig.bilp.model import BilpModel
from origamig.bilp.restrict import Region
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Weights
from origamig.judge.objective import evaluate
from tests.bilp_instances import fragmented
from tests.profiles import examples

EXACT = Limits(time_limit_s=60, threads=1)


def fix_outside(model: BilpModel, region: Region) -> None:
    """Fix every variable of a *full* model (built on all PMs) that lies outside `region`.

    A variable lies outside when it belongs to a PM outside M̂ or to a VM outside N̂; it is fixed at
    its start value (the current placement). After this, the full model's optimum equals the region
    model's optimum plus `fixed_constant`. This is the reference the tests compare the restriction
    with; production calls build the region model directly (`bilp.restrict`).
    """
    inside = set(region.pms)
    m = model.pyomo
    for (i, j), var in m.x.items():
        if i not in region.vms or j not in inside:
            var.fix()
    for (i, _, j, _), var in m.y.items():
        if i not in region.vms or j not in inside:
            var.fix()
    for comp in (m.q, m.gamma, m.phi):
        for key, var in comp.items():
            if (key[0] if isinstance(key, tuple) else key) not in inside:
                var.fix()
    for comp in (m.mig, m.omega, m.stay):
        for key, var in comp.items():
            if (key[0] if isinstance(key, tuple) else key) not in region.vms:
                var.fix()


@settings(max_examples=examples(20), deadline=None)
@given(seed=st.integers(0, 10**6), n_pms=st.integers(2, 5), data=st.data())
def test_restricted_equals_full_with_outside_fixed(seed: int, n_pms: int, data) -> None:
    rng = random.Random(seed)
    dc = fragmented(rng, n_pms, 4 * n_pms, 3, cpu=40, ram_gb=256)
    hood = data.draw(st.lists(st.integers(0, n_pms - 1), min_size=1, max_size=n_pms, unique=True))
    pend = data.draw(st.lists(st.sampled_from(list(dc.pending)), unique=True))
    w = Weights()
    sol = solve_region(dc, hood, pend, w, limits=EXACT)
    full = build_model(restrict(dc, range(n_pms), list(dc.pending)), w)
    fix_outside(full, restrict(dc, hood, pend))
    compiled = compile_model(full)
    res = get_backend("highs").solve(compiled, compiled.hint, EXACT)
    const = fixed_constant(dc, restrict(dc, hood, pend), w).value
    assert sol.result.proved_optimal and res.proved_optimal
    assert np.isclose(res.objective, sol.result.objective + const)
    # and the constant is what the referee says of the whole data center at the restricted optimum
    placed = {v: pl for v, pl in dc.placement.items() if v not in sol.target} | sol.target
    whole = evaluate(dc.pms, {**dc.vms, **dc.pending}, placed, dc.placement, w).value
    assert np.isclose(whole, sol.result.objective + const)


class _CountingDc(DataCenter):
    """A DataCenter that records which PMs `restrict` reads."""

    read: list[int]

    def vms_on(self, j: int) -> list[str]:
        self.read.append(j)
        return super().vms_on(j)


def test_restrict_reads_only_the_neighborhood() -> None:
    dc = fragmented(random.Random(2), 12, 50, 2)
    counting = _CountingDc(dc.pms)
    for v, pl in dc.placement.items():
        counting.place(dc.vms[v], pl)
    for vm in dc.pending.values():
        counting.add_pending(vm)
    counting.read = []
    region = restrict(counting, [3, 7], [next(iter(dc.pending))])
    assert sorted(counting.read) == [3, 7]
    assert set(region.previous) == set(dc.vms_on(3)) | set(dc.vms_on(7))


def test_solve_does_not_mutate_the_state() -> None:
    dc = fragmented(random.Random(4), 4, 16, 3)
    before = (dict(dc.placement), dict(dc.pending), [dc.occupancy(j, k) for j in range(4) for k in range(2)])
    solve_region(dc, [0, 2], list(dc.pending), Weights(), limits=EXACT)
    assert before == (
        dict(dc.placement),
        dict(dc.pending),
        [dc.occupancy(j, k) for j in range(4) for k in range(2)],
    )
