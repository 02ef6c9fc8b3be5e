"""The BILP learns the real cluster, against brute force: pending VMs without a GPU model may take any
model that offers their profiles (each as that model defines them), `"migratable": false` pins a VM,
and `intra_pm_moves: false` allows no move between GIs of one PM (docs/model.md#the-cluster-as-it-is).

The brute force is independent of the model: it enumerates every placement of the region's VMs on
every GPU of every class each VM may take, keeps those the checker accepts and the cluster allows,
and scores them with the referee.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.bilp import Limits, restrict, solve_region
from origamig.call.goals import tiered
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import GiSlot, Placement, VmSpec, Weights
from origamig.judge.check import check_placement, moves_refused
from origamig.judge.objective import evaluate
from origamig.snapshot.document import parse_snapshot
from tests.profiles import examples

EXACT = Limits(time_limit_s=60, threads=1)
A40, A80 = "A100-40GB", "A100-80GB"  # both offer 1g.10gb: two memory slices on the 40GB, one on the 80GB
RUNNING = {
    A40: ["1g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"],
    A80: ["1g.10gb", "3g.40gb", "4g.40gb", "7g.80gb"],
}


def tiny_cluster(seed: int) -> tuple[DataCenter, dict[str, Any]]:
    """pm0 carries an A100-40GB and an A100-80GB, pm1 one A100-80GB; two or three running VMs (one
    maybe not migratable), one pending VM with one or two 1g.10gb and no GPU model; CPU that binds;
    intra-PM moves on or off."""
    rng = random.Random(seed)
    pms = [
        {"id": "pm0", "cpu": 12, "ram_gb": 96, "gpus": [A40, A80]},
        {"id": "pm1", "cpu": rng.choice([8, 12]), "ram_gb": 96, "gpus": [A80]},
    ]
    vms: list[dict[str, Any]] = []
    used: dict[tuple[int, int], set[int]] = {}
    for n in range(rng.choice([2, 3])):
        j = rng.randrange(2)
        k = rng.randrange(len(pms[j]["gpus"]))
        model = pms[j]["gpus"][k]
        name = rng.choice(RUNNING[model])
        snap = parse_snapshot({"version": 1, "pms": [pms[j]], "vms": [], "gpu_models": {}})
        prof = snap.pms[0].gpus[k].profile(name)
        free = [z for z in prof.starts if not used.get((j, k), set()) & set(range(z, z + prof.memory_slices))]
        cpu = sum(4 for v in vms if v["placement"]["pm"] == pms[j]["id"])
        if not free or cpu + 4 > pms[j]["cpu"]:
            continue
        z = free[rng.randrange(len(free))]
        used.setdefault((j, k), set()).update(range(z, z + prof.memory_slices))
        vm = {"id": f"vm{n}", "cpu": 4, "ram_gb": 16, "gis": [name], "gpu_model": model,
              "placement": {"pm": pms[j]["id"], "gis": [{"gpu": k, "start": z}]}}  # fmt: skip
        if rng.random() < 0.3:
            vm["migratable"] = False
        vms.append(vm)
    vms.append({"id": "new", "cpu": 4, "ram_gb": 16, "gis": ["1g.10gb"] * rng.choice([1, 2])})
    doc = {"version": 1, "pms": pms, "vms": vms, "intra_pm_moves": rng.random() < 0.5}
    snap = parse_snapshot(doc)
    return snap.datacenter(), doc


def every_placement(dc: DataCenter, vm_ids: list[str]) -> Iterator[dict[str, Placement]]:
    """Every end state of the region (both PMs) the cluster allows; the pending VM may stay out."""
    specs = {**dc.vms, **dc.pending}

    def options(vm: VmSpec) -> Iterator[Placement]:
        for j, pm in enumerate(dc.pms):
            for choice in vm.gi_choices:  # every class the VM may take, each GI on a GPU of that class
                per_gi = [
                    [
                        GiSlot(k, z)
                        for k, g in enumerate(pm.gpus)
                        if g.gpu_class == p.gpu_class and g.has_profile(p.name)
                        for z in g.profile(p.name).starts
                    ]
                    for p in choice
                ]
                for slots in itertools.product(*per_gi):
                    yield Placement(j, tuple(slots))

    choices = [list(options(specs[v])) + ([None] if v in dc.pending else []) for v in vm_ids]
    for combo in itertools.product(*choices):
        target = {v: pl for v, pl in zip(vm_ids, combo, strict=True) if pl is not None}
        if check_placement(dc.pms, specs, target):
            continue
        if moves_refused(specs, dc.placement, target, dc.intra_pm_moves):
            continue
        yield target


@settings(max_examples=examples(40), deadline=None)
@given(seed=st.integers(0, 10_000), migration=st.sampled_from([0.0, 10.0, 40.0]))
def test_the_model_optimum_is_the_brute_force_optimum(seed: int, migration: float) -> None:
    dc, doc = tiny_cluster(seed)
    w = Weights(migration=migration)
    region = restrict(dc, [0, 1], ["new"])
    ids = list(region.vms)
    specs = {**dc.vms, **dc.pending}
    best = max(
        evaluate(dc.pms, specs, t, dc.placement, w, region.pms, ids).value for t in every_placement(dc, ids)
    )
    sol = solve_region(dc, [0, 1], ["new"], w, limits=EXACT)
    assert sol.result.proved_optimal
    assert sol.result.objective == pytest.approx(best, abs=1e-6), doc
    target = {**dc.placement, **sol.target}
    assert not check_placement(dc.pms, specs, target)
    assert not moves_refused(specs, dc.placement, target, dc.intra_pm_moves), doc
    assert evaluate(dc.pms, specs, target, dc.placement, w, region.pms, ids).value == best


def _moves(dc: DataCenter, target: dict[str, Placement]) -> int:
    """Σ (m_i + ω_i): a PM change counts 2, a change of GIs inside the PM 1."""
    out = 0
    for v, old in dc.placement.items():
        new = target.get(v, old)
        out += 2 if new.pm != old.pm else (1 if new.gis != old.gis else 0)
    return out


@settings(max_examples=examples(30), deadline=None)
@given(seed=st.integers(0, 10_000))
def test_tiered_weights_rank_admission_then_moves_then_packing(seed: int) -> None:
    # The default goal's admission call: one more admitted VM beats any moves, one move fewer any packing.
    dc, doc = tiny_cluster(seed)
    base = Weights()
    w = tiered(base, dc, [0, 1])
    ids = list(restrict(dc, [0, 1], ["new"]).vms)
    specs = {**dc.vms, **dc.pending}
    packing = {"pm": base.pm, "gpu": base.gpu, "free_start": base.free_start}
    only_packing = Weights(accept=0.0, migration=0.0, **packing)

    def rank(t: dict[str, Placement]) -> tuple[int, int, float]:
        return ("new" in t, -_moves(dc, t), evaluate(dc.pms, specs, t, dc.placement, only_packing).value)

    best = max(rank(t) for t in every_placement(dc, ids))
    sol = solve_region(dc, [0, 1], ["new"], w, limits=EXACT)
    assert sol.result.proved_optimal
    assert rank({**dc.placement, **sol.target}) == best, doc
