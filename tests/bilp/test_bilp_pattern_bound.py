"""The PM-pattern bound (benchmarks/pm_pattern_bound.py): a valid bound however early it stops, never
weaker than the LP bound, and on a recorded call it closes the LP's root gap."""

from __future__ import annotations

import json
import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.pm_pattern_bound import column_pms, pattern_bound
from benchmarks.solver.solver_replay import snapshot_models
from origamig.bilp import Limits, build_model, compile_model, restrict
from origamig.bilp.backends import highs
from origamig.cluster.records import Weights
from tests.bilp_instances import A30, A100, fragmented
from tests.paths import ROOT
from tests.profiles import examples

EXACT = Limits(time_limit_s=60, threads=1, kill_at_deadline=False)
W = Weights()
CALLS = ROOT / "benchmarks" / "results" / "solver_replay-full_calls.json"


def _optimum(compiled) -> tuple[float, np.ndarray]:
    mip = highs.HighsBackend().solve_in_process(compiled, compiled.hint, EXACT)
    assert mip.proved_optimal and mip.objective is not None and mip.x is not None
    return mip.objective, mip.x


@settings(max_examples=examples(20), deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n_pms=st.integers(2, 4),
    pending=st.integers(0, 3),
    rounds=st.sampled_from([0, 1, 3, 200]),
    smoothing=st.sampled_from([0.0, 0.9]),  # 0: priced at the raw master duals, far from the LP's
)
def test_the_bound_holds_at_every_stop_and_is_no_weaker_than_the_lp(seed, n_pms, pending, rounds, smoothing):
    rng = random.Random(seed)
    dc = fragmented(rng, n_pms, 5 * n_pms, pending, models=(A100, A100) if seed % 2 else (A30, A30))
    model = build_model(restrict(dc, range(n_pms), list(dc.pending)), W)
    compiled = compile_model(model)
    pb = pattern_bound(model, compiled, max_iterations=rounds, smoothing=smoothing)
    optimum, x = _optimum(compiled)
    scale = max(1.0, abs(optimum))
    assert optimum <= pb.bound + 1e-6 * scale
    assert pb.bound <= pb.lp_bound + 1e-6 * scale
    # The master holds the current placement (every PM's current pattern) and only integer patterns.
    start = compiled.objective_of(compiled.hint)
    assert start - 1e-6 * scale <= pb.master <= pb.bound + 1e-6 * scale
    if pb.converged:
        assert pb.bound - pb.master <= 1e-5 * scale
    if pb.integral:  # the master's solution is then a placement: no better than the optimum
        assert pb.master <= optimum + 1e-6 * scale
    # Seeded with the optimum's patterns, the master reaches the optimum before any pricing round.
    seeded = pattern_bound(model, compiled, max_iterations=0, seeds=[x])
    assert optimum - 1e-6 * scale <= seeded.master <= seeded.bound + 1e-6 * scale


def test_every_pm_row_stays_whole_and_only_the_joining_rows_span_pms():
    dc = fragmented(random.Random(3), 3, 15, 2)
    model = build_model(restrict(dc, range(3), list(dc.pending)), W)
    compiled = compile_model(model)
    pms = column_pms(model, compiled)
    families = [var.parent_component().local_name for var in compiled.columns]
    assert {f for f, p in zip(families, pms, strict=True) if p < 0} == {"npm", "ngpu"}
    A = compiled.A
    spans = {}
    for r in range(A.shape[0]):
        owners = set(pms[A.indices[A.indptr[r] : A.indptr[r + 1]]].tolist())
        spans[r] = len(owners) > 1 or -1 in owners
    # Each VM's "placed once" row spans every PM it may go to; the capacity and configuration rows do not.
    assert any(spans.values()) and not all(spans.values())
    # A running VM's migration columns sit with the PM it runs on now (by the data center's own record).
    for n, (family, p) in enumerate(zip(families, pms, strict=True)):
        if family in ("mig", "omega", "stay"):
            index = compiled.columns[n].index()
            vm_id = index if family != "stay" else index[0]
            assert p == dc.placement[vm_id].pm


def _small_recorded_calls(most_pms: int = 15):
    for call in json.loads(CALLS.read_text())["calls"]:
        if len(call["snapshot"]["pms"]) <= most_pms:  # 8–10-PM neighborhoods: seconds each
            yield snapshot_models(call["snapshot"])


def test_on_a_recorded_call_the_bound_closes_the_lp_gap():
    for model, compiled in _small_recorded_calls():
        optimum, _ = _optimum(compiled)
        pb = pattern_bound(model, compiled)
        if pb.lp_bound - optimum < 1.0:
            continue  # the LP already proves this one: look for a call it leaves open
        assert pb.converged
        assert optimum - 1e-6 <= pb.bound < optimum + compiled.objective_step
        assert np.isclose(pb.master, pb.bound, atol=1e-5)
        assert pb.integral  # here column generation alone finds the optimal placement
        return
    raise AssertionError("no recorded 9-PM call with an LP gap of a step or more")


def test_where_the_bound_stays_above_the_optimum_the_master_is_not_a_placement():
    for model, compiled in _small_recorded_calls(most_pms=8):  # well under a second each
        optimum, _ = _optimum(compiled)
        pb = pattern_bound(model, compiled)
        if pb.bound < optimum + compiled.objective_step:
            continue  # closed here: look for a call the patterns leave open
        assert pb.converged and not pb.integral  # an integral master would beat the optimum
        assert pb.master > optimum
        return
    raise AssertionError("no recorded 8-PM call where the pattern bound stays a step above the optimum")


def test_stop_below_ends_as_soon_as_the_bound_is_below_it():
    dc = fragmented(random.Random(11), 3, 15, 1)
    model = build_model(restrict(dc, range(3), list(dc.pending)), W)
    compiled = compile_model(model)
    full = pattern_bound(model, compiled)
    early = pattern_bound(model, compiled, stop_below=np.inf)
    assert early.iterations == 0 and early.bound >= full.bound - 1e-9
