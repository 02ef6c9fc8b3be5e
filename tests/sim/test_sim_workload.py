"""The synthetic workload matches docs/simulator.md#workload statistically; variants, seeds and request
files."""

from __future__ import annotations

import itertools
import json
import math
import statistics
from collections import Counter

import pytest

from origamig.cluster.catalog import default_catalog
from origamig.errors import UserError
from origamig.sim.requests_file import read_requests, write_requests
from origamig.sim.scenario import VARIANTS, SimConfig, build_pms, gpu_inventory, requests_for, workload_spec
from origamig.sim.workload import (
    HOUR,
    WorkloadSpec,
    arrival_rates_per_h,
    generate,
    is_larger,
    mean_share,
    offered_load,
)

CAT = default_catalog()
A100, A30 = CAT.gpu("A100-40GB"), CAT.gpu("A30-24GB")

# docs/simulator.md#workload worked figure for the default data center at ρ = 0.85.
DOC_RATE_A100_PER_H = 28.9
DOC_RATE_A30_PER_H = 7.2
DOC_MEAN_F_A100 = 1.5 * 21 / 48  # 0.656
DOC_MEAN_F_A30 = 1.5 * 7 / 12  # 0.875
LONG_H = 1000.0  # a long stream: ≈ 36,000 requests


def within(measured: float, expected: float, se: float, sigmas: float = 4.0) -> bool:
    return abs(measured - expected) <= sigmas * se


@pytest.fixture(scope="module")
def stream():
    pms = build_pms(SimConfig())
    gpus = gpu_inventory(pms)
    return gpus, generate(gpus, WorkloadSpec(load=0.85), seed=7, horizon_s=LONG_H * HOUR)


def test_default_data_center_and_rates_match_the_worked_figure() -> None:
    gpus = gpu_inventory(build_pms(SimConfig()))
    assert {m: n for m, (_, n) in gpus.items()} == {"A100-40GB": 192, "A30-24GB": 64}
    spec = WorkloadSpec(load=0.85)
    assert mean_share(A100, spec) == pytest.approx(DOC_MEAN_F_A100)
    assert mean_share(A30, spec) == pytest.approx(DOC_MEAN_F_A30)
    rates = arrival_rates_per_h(gpus, spec)
    assert rates["A100-40GB"] == pytest.approx(DOC_RATE_A100_PER_H, abs=0.05)
    assert rates["A30-24GB"] == pytest.approx(DOC_RATE_A30_PER_H, abs=0.05)
    # "about 4,300 requests over the 120 simulated hours"
    assert sum(rates.values()) * 120 == pytest.approx(4300, rel=0.02)


def test_arrivals_are_poisson_at_the_offered_rate(stream) -> None:
    gpus, reqs = stream
    rates = arrival_rates_per_h(gpus, WorkloadSpec(load=0.85))
    total = sum(rates.values()) * LONG_H
    assert within(len(reqs), total, math.sqrt(total))  # Poisson count: sd = sqrt(mean)
    gaps = [b.arrival_s - a.arrival_s for a, b in itertools.pairwise(reqs)]
    mean_gap = statistics.fmean(gaps)
    # Exponential gaps: coefficient of variation 1.
    assert statistics.stdev(gaps) / mean_gap == pytest.approx(1.0, abs=0.03)
    assert all(r.arrival_s < LONG_H * HOUR for r in reqs)
    assert [r.arrival_s for r in reqs] == sorted(r.arrival_s for r in reqs)
    n = len(reqs)
    share_a100 = sum(1 for r in reqs if r.vm.gis[0].gpu_model == "A100-40GB") / n
    p = rates["A100-40GB"] / sum(rates.values())
    assert within(share_a100, p, math.sqrt(p * (1 - p) / n))


def test_jobs_tenants_lifetimes_and_gi_counts(stream) -> None:
    _, reqs = stream
    n = len(reqs)
    tenants = [r for r in reqs if r.kind == "tenant"]
    jobs = [r for r in reqs if r.kind == "job"]
    assert within(len(tenants) / n, 0.3, math.sqrt(0.21 / n))
    for group, mean_h in ((jobs, 2.0), (tenants, 24.0)):
        lifetimes = [r.lifetime_s / HOUR for r in group]
        assert within(statistics.fmean(lifetimes), mean_h, mean_h / math.sqrt(len(group)))  # exp: sd = mean
        assert statistics.stdev(lifetimes) / statistics.fmean(lifetimes) == pytest.approx(1.0, abs=0.05)
    two = sum(1 for r in reqs if len(r.vm.gis) == 2) / n
    assert within(two, 0.5, math.sqrt(0.25 / n))
    assert all(len(r.vm.gis) in (1, 2) and len({p.gpu_model for p in r.vm.gis}) == 1 for r in reqs)


def test_profile_mix_is_uniform_and_cpu_ram_follow_compute(stream) -> None:
    _, reqs = stream
    for model in (A100, A30):
        drawn = Counter(p.name for r in reqs for p in r.vm.gis if p.gpu_model == model.name)
        total = sum(drawn.values())
        q = 1 / len(model.profiles)
        for prof in model.profiles:
            assert within(drawn[prof.name] / total, q, math.sqrt(q * (1 - q) / total)), prof.name
    for r in reqs[:2000]:
        compute = sum(p.compute_slices for p in r.vm.gis)
        assert r.vm.cpu_m == 4000 * compute and r.vm.ram_mb == 16000 * compute


def test_offered_load_is_met_on_both_gpu_models(stream) -> None:
    gpus, reqs = stream
    measured = offered_load(reqs, gpus, LONG_H * HOUR)
    for name, (model, count) in gpus.items():
        terms = [
            r.lifetime_s * r.vm.memory_slices / model.memory_slices
            for r in reqs
            if r.vm.gis[0].gpu_model == name
        ]
        # Compound Poisson sum: sd = sqrt(Σ term²) / (horizon·|K|).
        se = math.sqrt(sum(t * t for t in terms)) / (LONG_H * HOUR * count)
        assert within(measured[name], 0.85, se), (name, measured[name], se)


def test_same_seed_same_requests_and_other_seed_differs() -> None:
    cfg = SimConfig(warmup_s=10 * HOUR, measure_s=10 * HOUR)
    pms = build_pms(cfg)
    a, b, c = requests_for(cfg, 3, pms), requests_for(cfg, 3, pms), requests_for(cfg, 4, pms)
    assert a == b
    assert a != c


@pytest.mark.parametrize(
    ("name", "check"),
    [
        ("one-gi", lambda reqs: all(len(r.vm.gis) == 1 for r in reqs)),
        ("two-gi", lambda reqs: all(len(r.vm.gis) == 2 for r in reqs)),
        ("a100-only", lambda reqs: all(r.vm.gis[0].gpu_model == "A100-40GB" for r in reqs)),
        ("a30-only", lambda reqs: all(r.vm.gis[0].gpu_model == "A30-24GB" for r in reqs)),
    ],
)
def test_structural_variants(name: str, check) -> None:
    cfg = SimConfig(variant=name, warmup_s=0, measure_s=200 * HOUR)
    reqs = requests_for(cfg, 1, build_pms(cfg))
    assert len(reqs) > 1000 and check(reqs)


def test_variant_hardware() -> None:
    small = build_pms(SimConfig(variant="small-pms"))
    assert len(small) == 128 and {(p.cpu, p.ram_gb) for p in small} == {(32, 256)}
    assert {g.name for p in build_pms(SimConfig(variant="a30-only")) for g in p.gpus} == {"A30-24GB"}
    pms = build_pms(SimConfig(pms=16))
    assert [len(p.gpus) for p in pms] == [2] * 16 and sum(p.gpus[0].name == "A100-40GB" for p in pms) == 12


@pytest.mark.parametrize(("name", "weight"), [("smaller-profiles", 0.5), ("larger-profiles", 2.0)])
def test_profile_mix_variants(name: str, weight: float) -> None:
    # A100: 3g.20gb, 4g.20gb, 7g.40gb are the larger profiles (≥ half the memory slices): share 3w/(3w+3).
    assert [p.name for p in A100.profiles if is_larger(p, A100)] == ["3g.20gb", "4g.20gb", "7g.40gb"]
    cfg = SimConfig(variant=name, warmup_s=0, measure_s=1500 * HOUR)
    reqs = requests_for(cfg, 2, build_pms(cfg))
    gis = [p for r in reqs for p in r.vm.gis if p.gpu_model == "A100-40GB"]
    share = sum(1 for p in gis if is_larger(p, A100)) / len(gis)
    q = 3 * weight / (3 * weight + 3)
    assert within(share, q, math.sqrt(q * (1 - q) / len(gis)))
    gpus = gpu_inventory(build_pms(cfg))
    assert offered_load(reqs, gpus, 1500 * HOUR)["A100-40GB"] == pytest.approx(0.85, rel=0.06)


@pytest.mark.parametrize(("name", "share"), [("tenants-10", 0.1), ("tenants-60", 0.6)])
def test_tenant_variants_keep_the_offered_load(name: str, share: float) -> None:
    cfg = SimConfig(variant=name, warmup_s=0, measure_s=1500 * HOUR)
    reqs = requests_for(cfg, 5, build_pms(cfg))
    n = len(reqs)
    assert within(sum(r.kind == "tenant" for r in reqs) / n, share, math.sqrt(share * (1 - share) / n))
    spec = workload_spec(cfg)
    assert spec.mean_lifetime_h == pytest.approx((1 - share) * 2 + share * 24)


def test_lognormal_lifetimes_keep_the_means() -> None:
    cfg = SimConfig(variant="lognormal", warmup_s=0, measure_s=2000 * HOUR)
    reqs = requests_for(cfg, 9, build_pms(cfg))
    jobs = [r.lifetime_s / HOUR for r in reqs if r.kind == "job"]
    logs = [math.log(x) for x in jobs]
    assert statistics.stdev(logs) == pytest.approx(1.5, abs=0.03)  # σ of the log
    sd = math.sqrt(math.exp(1.5**2) - 1) * 2.0  # lognormal sd = mean·sqrt(e^{σ²} − 1)
    assert within(statistics.fmean(jobs), 2.0, sd / math.sqrt(len(jobs)))


def test_every_table9_variant_is_named() -> None:
    assert set(VARIANTS) == {
        "default", "smaller-profiles", "larger-profiles", "one-gi", "two-gi", "lognormal",
        "tenants-10", "tenants-60", "a100-only", "a30-only", "small-pms", "alibaba",
    }  # fmt: skip


def test_requests_file_round_trip_csv_and_json(tmp_path) -> None:
    cfg = SimConfig(warmup_s=0, measure_s=5 * HOUR)
    reqs = requests_for(cfg, 1, build_pms(cfg))
    path = tmp_path / "reqs.csv"
    write_requests(path, reqs)
    assert read_requests(path, CAT) == [r.__class__(r.vm, r.arrival_s, r.lifetime_s, "file") for r in reqs]
    doc = {
        "requests": [
            {"id": "x", "arrival_s": 5, "lifetime_s": 60, "gpu_model": "A30-24GB", "gis": ["2g.12gb"]},
            {"id": "cpu", "arrival_s": 1, "lifetime_s": 60, "gis": [], "cpu": 2, "ram_gb": 8},
        ]
    }
    (tmp_path / "r.json").write_text(json.dumps(doc))
    got = read_requests(tmp_path / "r.json", CAT)
    assert [r.id for r in got] == ["cpu", "x"]  # sorted by arrival
    assert got[1].vm.cpu_m == 8000 and got[1].vm.ram_mb == 32000  # 2 compute slices × 4 cores / 16 GB
    assert got[0].vm.gis == () and got[0].vm.cpu_m == 2000


def test_requests_file_errors_name_the_row(tmp_path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(
        "id,arrival_s,lifetime_s,gpu_model,gis\n"
        "a,0,10,A100-40GB,9g.99gb\n"
        "b,x,10,A100-40GB,1g.5gb\n"
        "c,0,10,,1g.5gb\n"
        "a,0,10,A100-40GB,1g.5gb\n"
    )
    with pytest.raises(UserError) as err:
        read_requests(path, CAT)
    text = str(err.value)
    assert f"{path}:2.gis: '9g.99gb' is not a profile of A100-40GB" in text
    assert f"{path}:3.arrival_s: 'x' is not a number" in text
    assert f"{path}:4.gpu_model: missing" in text
    assert f"{path}:5.id: 'a' appears twice" in text
