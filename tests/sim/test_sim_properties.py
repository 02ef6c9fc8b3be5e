"""Invariants of random runs: every state passes the checker, and the integrated metrics equal an
independent recomputation from the placement log (interval unions per PM and per GPU)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.policies.base import Placed, make_policy
from origamig.sim.engine import Simulation
from origamig.sim.workload import Request
from tests.profiles import examples
from tests.strategies import pm_lists, vm_specs

H = 3600.0
WARMUP, MEASURE = 1 * H, 3 * H


class Logged:
    """Wraps a policy and logs where each arriving VM was placed."""

    def __init__(self, policy) -> None:
        self.p, self.name, self.placed = policy, policy.name, {}

    def arrive(self, dc, vm, now, locked):
        d = self.p.arrive(dc, vm, now, locked)
        if isinstance(d, Placed):
            self.placed[vm.id] = d.placement
        return d

    def __getattr__(self, attr):
        return getattr(self.p, attr)


@st.composite
def streams(draw):
    n = draw(st.integers(1, 25))
    out = []
    for i in range(n):
        vm = draw(vm_specs(vm_id=f"v{i}"))
        arrival = draw(st.floats(0, WARMUP + MEASURE, allow_nan=False))
        lifetime = draw(st.floats(1, 3 * H, allow_nan=False))
        out.append(Request(vm, arrival, lifetime))
    return out


def covered(intervals: list[tuple[float, float]], lo: float, hi: float) -> float:
    """Length of the union of `intervals` inside [lo, hi]."""
    total, end = 0.0, lo
    for a, b in sorted((max(a, lo), min(b, hi)) for a, b in intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


@settings(max_examples=examples(40), deadline=None)
@given(pms=pm_lists(1, 4), requests=streams(), policy=st.sampled_from(["ff", "mfi", "dra"]))
def test_metrics_equal_an_interval_recomputation(pms, requests, policy) -> None:
    logged = Logged(make_policy(policy))
    sim = Simulation(pms, requests, logged, WARMUP, MEASURE, debug_check=True)  # checker after each event
    m = sim.run().metrics
    lo, hi = WARMUP, WARMUP + MEASURE
    by_id = {r.id: r for r in requests}
    pm_busy: dict[int, list] = {}
    gpu_busy: dict[tuple[int, int], list] = {}
    for vm_id, pl in logged.placed.items():
        r = by_id[vm_id]
        span = (r.arrival_s, r.arrival_s + r.lifetime_s)  # FF/MFI admit on arrival
        pm_busy.setdefault(pl.pm, []).append(span)
        for slot in pl.gis:
            gpu_busy.setdefault((pl.pm, slot.gpu), []).append(span)
    active_pms = sum(covered(v, lo, hi) for v in pm_busy.values()) / MEASURE
    active_gpus = sum(covered(v, lo, hi) for v in gpu_busy.values()) / MEASURE
    assert abs(m["active_pms"] - active_pms) < 1e-6
    assert abs(m["active_gpus"] - active_gpus) < 1e-6
    asked = [r for r in requests if lo <= r.arrival_s < hi]
    slices = sum(r.vm.memory_slices for r in asked)
    if slices:
        got = sum(r.vm.memory_slices for r in asked if r.id in logged.placed)
        assert abs(m["acceptance"] - got / slices) < 1e-12
    # Power bounds: an active PM draws at least its idle curve point (143 W) plus idle GPUs, at most its
    # 100% point (647 W) plus its GPUs at full power.
    low = min(143 + sum(g.idle_power_w for g in pm.gpus) for pm in pms)
    high = max(647 + sum(g.max_power_w for g in pm.gpus) for pm in pms)
    pm_hours = sum(covered(v, lo, hi) for v in pm_busy.values()) / H
    if pm_hours > 1e-6:
        mean_w = m["energy_mwh"] * 1e6 / pm_hours
        assert low - 1e-6 <= mean_w <= high + 1e-6
    if m["packing_density"] is not None:
        assert 0 < m["packing_density"] <= 1
