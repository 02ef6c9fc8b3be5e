"""The LP bound before the MIP (origamig/bilp/bound.py): always a valid bound, and a "no change" proof
only where the MIP, solved to optimality, finds nothing strictly better than the current placement."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.bilp import Limits, build_model, compile_model, no_change_proof, restrict, solve_region
from origamig.bilp.backends import highs
from origamig.bilp.backends.base import BOUND
from origamig.bilp.bound import lagrangian_bound, lagrangian_terms, lp_duals
from origamig.call.decision import Status, decide
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Weights
from origamig.judge.check import check_placement
from origamig.judge.objective import evaluate
from tests.bilp_instances import A30, A100, fragmented
from tests.profiles import examples

EXACT = Limits(time_limit_s=60, threads=1)
W = Weights()


def _instance(seed: int, n_pms: int, pending: int) -> DataCenter:
    rng = random.Random(seed)
    return fragmented(rng, n_pms, 5 * n_pms, pending, models=(A100, A100) if seed % 2 else (A30, A30))


def _settled(dc: DataCenter) -> DataCenter:
    """`dc` moved to the proved optimum of the whole data center (pending VMs it leaves out stay pending):
    a state the LP bound often proves optimal."""
    sol = solve_region(dc, range(len(dc.pms)), list(dc.pending), W, limits=EXACT, prove_first=False)
    assert sol.result.proved_optimal
    out = DataCenter(list(dc.pms))
    for v, pl in sol.target.items():
        out.place(dc.vms[v] if v in dc.vms else dc.pending[v], pl)
    for v, spec in dc.pending.items():
        if v not in sol.target:
            out.add_pending(spec)
    return out


def _compiled(dc: DataCenter):
    return compile_model(build_model(restrict(dc, range(len(dc.pms)), list(dc.pending)), W))


@settings(max_examples=examples(15), deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n_pms=st.integers(2, 3),
    pending=st.integers(0, 2),
    settle=st.booleans(),
)
def test_a_bound_proof_means_the_mip_finds_nothing_better(seed: int, n_pms: int, pending: int, settle: bool):
    dc = _instance(seed, n_pms, pending)
    if settle:
        dc = _settled(dc)
    pms = range(len(dc.pms))
    compiled = _compiled(dc)
    proof = no_change_proof(compiled, EXACT)
    mip = solve_region(dc, pms, list(dc.pending), W, limits=EXACT, prove_first=False)
    assert mip.result.proved_optimal
    # The bound holds: the MIP's optimum (Eq. 5 of a checked placement, scored by the referee) is below it.
    assert not check_placement(dc.pms, {**dc.vms, **dc.pending}, mip.target)
    region = restrict(dc, pms, list(dc.pending))
    optimum = evaluate(dc.pms, region.vms, mip.target, region.previous, W, region.pms, region.vms).value
    assert optimum <= proof.bound + 1e-6
    current = evaluate(dc.pms, region.vms, region.previous, region.previous, W, pms, region.vms)
    assert proof.start == current.value
    if proof.proved:
        assert optimum <= proof.start + 1e-6  # nothing strictly better exists: the decision is "unchanged"
        fast = solve_region(dc, pms, list(dc.pending), W, limits=EXACT)
        assert fast.result.termination == BOUND and fast.result.proved_optimal
        assert fast.target == region.previous and fast.admitted == ()
        assert fast.result.objective == proof.start == fast.result.bound


def test_settled_states_are_proved_by_the_bound_and_decided_unchanged() -> None:
    proved = 0
    for seed in range(8):
        dc = _settled(_instance(seed, 3, seed % 2))
        pms = tuple(range(len(dc.pms)))
        fast = decide(dc, pms, tuple(dc.pending), W, limits=EXACT)
        if fast.solution.result.termination != BOUND:
            continue
        proved += 1
        assert fast.status is Status.UNCHANGED and not fast.changed and fast.plan is None
        assert fast.solution.timings["solve_s"] < fast.solution.timings["bound_s"] + 1.0
    assert proved >= 4  # the proof is not a rarity on settled states (27 of 30 seeds when measured)


@settings(max_examples=examples(25), deadline=None)
@given(seed=st.integers(0, 10_000), scale=st.floats(0.0, 200.0))
def test_lagrangian_bound_is_valid_for_any_multipliers(seed: int, scale: float) -> None:
    dc = _instance(seed, 2, seed % 3)
    compiled = _compiled(dc)
    mip = solve_region(dc, range(len(dc.pms)), list(dc.pending), W, limits=EXACT, prove_first=False)
    rng = np.random.default_rng(seed)
    duals = scale * rng.standard_normal(compiled.A.shape[0])
    assert lagrangian_bound(compiled, duals) >= mip.result.objective - 1e-6


@settings(max_examples=examples(15), deadline=None)
@given(seed=st.integers(0, 10_000), perturb=st.floats(0.0, 5.0))
def test_a_column_held_at_a_value_lowers_the_bound_by_its_term(seed: int, perturb: float) -> None:
    """Reduced-cost fixing from `lagrangian_terms`: every solution x of the model has, for every column
    n, c·x ≤ bound − term[n] + reduced[n]·x[n] — checked at the start and at the MIP optimum, for the
    LP's duals and for perturbed ones. (So a column whose other value drops this below a target can
    be fixed.)"""
    dc = _instance(seed, 2, 1 + seed % 2)
    compiled = _compiled(dc)
    duals, _ = lp_duals(compiled, None)
    assert duals is not None
    duals = duals + perturb * np.random.default_rng(seed).standard_normal(duals.shape)
    bound, reduced, term = lagrangian_terms(compiled, duals)
    assert bound == lagrangian_bound(compiled, duals)
    best = highs.HighsBackend().solve_in_process(compiled, compiled.hint, EXACT)
    assert best.proved_optimal and best.x is not None
    for x in (compiled.hint, best.x):
        held = bound - term + reduced * x  # the bound with each column held at its value in x
        assert np.all(held >= compiled.objective_of(x) - 1e-6)


def test_bound_is_not_a_proof_when_an_improvement_exists() -> None:
    # Fragmented states with a pending VM: where the optimum gains anything, the MIP must run.
    improving = 0
    for seed in range(20):
        dc = _instance(seed, 3, 1)
        mip = solve_region(dc, range(3), list(dc.pending), W, limits=EXACT, prove_first=False)
        proof = no_change_proof(_compiled(dc), EXACT)
        if mip.result.objective > proof.start + 0.5:
            improving += 1
            assert not proof.proved
            fast = solve_region(dc, range(3), list(dc.pending), W, limits=EXACT)
            assert fast.result.termination != BOUND
            assert abs(fast.result.objective - mip.result.objective) < 1e-6
    assert improving >= 10
