"""On 8-GPU servers, every state of a simulation passes the independent checker, for every policy.

Random data centers of two or three 8-GPU servers (H100-80GB, A100-80GB and H200 GPUs, mixed within a
server too) and random request streams run through FF, MFI, TC and OrigaMIG (deterministic, a small node
budget, the bounds `simulate` derives for 8-GPU servers). The engine asks `origamig.judge.check` after every
event (`debug_check`), and every plan a policy hands over is replayed step by step by `origamig.judge.replay`
— which judges each intermediate state with the same checker — on the state the call started from.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from origamig.call.neighborhood_bounds import derived_bounds
from origamig.cluster.catalog import default_catalog
from origamig.cluster.records import PmSpec, VmSpec, cores_to_m, gb_to_mb
from origamig.judge.replay import replay_plan
from origamig.sim.engine import Simulation
from origamig.sim.scenario import SimConfig
from origamig.sim.workload import HOUR, Request
from origamig.study.runner import make_run_policy
from tests.profiles import examples

MODELS = ("H100-80GB", "A100-80GB", "H200-141GB")
HORIZON = 6 * HOUR


@st.composite
def servers(draw: st.DrawFn) -> list[PmSpec]:
    cat = default_catalog()
    out = []
    for j in range(draw(st.integers(2, 3))):
        if draw(st.booleans()):  # one model per server, as usually bought
            gpus = (cat.gpu(draw(st.sampled_from(MODELS))),) * 8
        else:
            gpus = tuple(cat.gpu(draw(st.sampled_from(MODELS))) for _ in range(8))
        cpu = draw(st.sampled_from((96, 192)))
        ram = draw(st.sampled_from((1024, 2048)))
        out.append(PmSpec(f"pm{j}", cores_to_m(cpu), gb_to_mb(ram), gpus))
    return out


@st.composite
def streams(draw: st.DrawFn, max_requests: int, large: bool = False) -> list[Request]:
    """Requests of 1–2 GIs; `large`: profiles of at least half a GPU, which crowd a few servers fast
    (first fit then fails, so OrigaMIG's admission calls and plans get exercised)."""
    cat = default_catalog()
    out = []
    for i in range(draw(st.integers(1, max_requests))):
        model = cat.gpu(draw(st.sampled_from(MODELS)))
        profiles = [p for p in model.profiles if not large or 2 * p.memory_slices >= model.memory_slices]
        gis = tuple(draw(st.sampled_from(profiles)) for _ in range(draw(st.integers(1, 2))))
        compute = sum(p.compute_slices for p in gis)
        vm = VmSpec(f"v{i}", cores_to_m(3 * compute), gb_to_mb(24 * compute), gis)
        arrival = draw(st.floats(0, HORIZON / 2, allow_nan=False))
        lifetime = draw(st.floats(60, HORIZON, allow_nan=False))
        out.append(Request(vm, arrival, lifetime))
    return out


class Replayed:
    """Wraps a policy: every plan it hands over is replayed on the state its call starts from."""

    def __init__(self, policy) -> None:
        self.p, self.name, self.plans = policy, policy.name, 0

    def work(self, dc, now, locked=frozenset()):
        work = self.p.work(dc, now, locked)
        if work is not None and work.plan is not None:
            steps = work.plan.to_json()
            result = replay_plan(dc.pms, dc.vms, dc.placement, dc.pending, steps, target=work.target)
            assert result.ok, f"{self.name} at t={now}: {result.reason}"
            self.plans += 1
        return work

    def __getattr__(self, attr):
        return getattr(self.p, attr)


def simulate(pms: list[PmSpec], requests: list[Request], policy_name: str) -> None:
    config = SimConfig(pms=len(pms), deterministic=True, policy_options=(("work_limit", 10),))
    policy = make_run_policy(policy_name, config, 1)
    if policy_name == "origamig":  # the bounds `simulate` derives for these servers
        m_max, n_max = derived_bounds(pms)
        policy.bounds = type(policy.bounds)(m_max=m_max, n_max=n_max)
        assert m_max == 4
    sim = Simulation(pms, requests, Replayed(policy), 0.0, HORIZON, deterministic=True, debug_check=True)
    sim.run()  # raises SimulationError on the first state the checker rejects


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pms=servers(), requests=streams(40), policy=st.sampled_from(["ff", "mfi", "dra", "tc"]))
def test_every_state_passes_the_checker_for_arrival_policies_and_tc(pms, requests, policy) -> None:
    simulate(pms, requests, policy)


@settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pms=servers(), requests=streams(24, large=True))
def test_every_state_passes_the_checker_for_origamig(pms, requests) -> None:
    simulate(pms, requests, "origamig")
