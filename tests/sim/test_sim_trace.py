"""The Alibaba 2023 trace mapping (docs/simulator.md#alibaba-trace, paper §6.5), on a hand-written CSV and on
the real trace."""

from __future__ import annotations

from collections import Counter

import pytest

from origamig.cluster.catalog import default_catalog
from origamig.errors import UserError
from origamig.sim.scenario import SimConfig, build_pms, requests_for
from origamig.sim.trace import ENV_VAR, POD_FILE, load_pods, map_pods, profile_for_share, schedule, trace_dir

A100 = default_catalog().gpu("A100-40GB")
DAY = 86400
# Paper §6.5: "Of the resulting GIs, 77% are 7g.40gb."
PAPER_FULL_GI_SHARE = 0.77

HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
    "creation_time,deletion_time,scheduled_time\n"
)


@pytest.mark.parametrize(
    ("milli", "profile"),
    [
        (50, "1g.5gb"),  # ⌈0.35⌉ = 1 compute, ⌈0.4⌉ = 1 memory
        (125, "1g.5gb"),  # ⌈0.875⌉ = 1, ⌈1.0⌉ = 1
        (200, "2g.10gb"),  # ⌈1.4⌉ = 2 compute, ⌈1.6⌉ = 2 memory: 1g.10gb has 1 compute only
        (320, "3g.20gb"),  # ⌈2.24⌉ = 3, ⌈2.56⌉ = 3 → 4 memory slices
        (470, "4g.20gb"),  # ⌈3.29⌉ = 4, ⌈3.76⌉ = 4
        (550, "7g.40gb"),  # ⌈3.85⌉ = 4, ⌈4.4⌉ = 5 memory → only 7g.40gb
        (810, "7g.40gb"),
    ],
)
def test_profile_for_a_gpu_share(milli: int, profile: str) -> None:
    assert profile_for_share(milli / 1000, A100).name == profile


def write_trace(tmp_path, rows: list[str]):
    (tmp_path / POD_FILE).write_text(HEADER + "".join(r + "\n" for r in rows))
    load_pods.cache_clear()
    return tmp_path


def small_trace(tmp_path):
    end = 40 * DAY
    return write_trace(
        tmp_path,
        [
            f"old,1000,1,1,1000,,LS,Running,0,{end},0",  # created before the last 34 days: dropped
            f"cpu,1000,1,0,0,,LS,Running,{10 * DAY},{10 * DAY + 100},{10 * DAY}",  # no GPU: dropped
            f"frac,1000,1,1,470,,LS,Running,{10 * DAY},{10 * DAY + 3600},{10 * DAY + 60}",
            f"two,1000,1,2,1000,,LS,Running,{20 * DAY},{20 * DAY + 7200},{20 * DAY}",
            f"eight,1000,1,8,1000,,LS,Running,{25 * DAY},{25 * DAY + 7200},{25 * DAY}",  # > 2 GPUs: dropped
            f"pending,1000,1,1,1000,,LS,Pending,{end},{end + 1800},",  # never scheduled: from creation
        ],
    )


def test_mapping_filters_and_lifetimes(tmp_path) -> None:
    mapped = map_pods(load_pods(str(small_trace(tmp_path))), A100)
    got = {pod.name: ([p.name for p in gis], pod.lifetime_s) for pod, gis in mapped}
    assert got == {
        "frac": (["4g.20gb"], 3540.0),  # deletion − scheduled
        "two": (["7g.40gb", "7g.40gb"], 7200.0),
        "pending": (["7g.40gb"], 1800.0),  # deletion − creation
    }


def test_timeline_is_compressed_to_the_load_and_seeds_shift_it(tmp_path) -> None:
    mapped = map_pods(load_pods(str(small_trace(tmp_path))), A100)
    # Σ lifetime·f = 3540·0.5 + 7200·2 + 1800·1 = 17,970 GPU-s; load 0.5 on 4 GPUs → length 8,985 s.
    length = (3540 * 0.5 + 7200 * 2 + 1800) / (0.5 * 4)
    reqs = schedule(mapped, A100, gpus=4, load=0.5, seed=1, horizon_s=length)
    # Creation offsets 0, 10 d, 30 d; three pods span two gaps, the cycle adds a third (45 d ≙ length).
    assert [(r.id, r.arrival_s) for r in reqs] == [
        ("frac.0", 0.0),
        ("two.0", pytest.approx(length * 10 / 45)),
        ("pending.0", pytest.approx(length * 30 / 45)),
    ]
    assert [r.lifetime_s for r in reqs] == [3540.0, 7200.0, 1800.0]
    shifted = schedule(mapped, A100, gpus=4, load=0.5, seed=2, horizon_s=length)  # starts at length/5
    assert [(r.id, r.arrival_s) for r in shifted] == [
        ("two.0", pytest.approx(length * (10 / 45 - 1 / 5))),
        ("pending.0", pytest.approx(length * (30 / 45 - 1 / 5))),
        ("frac.0", pytest.approx(length * (1 - 1 / 5))),
    ]
    longer = schedule(mapped, A100, gpus=4, load=0.5, seed=1, horizon_s=2.5 * length)
    assert [r.id for r in longer] == [
        "frac.0",
        "two.0",
        "pending.0",
        "frac.1",
        "two.1",
        "pending.1",
        "frac.2",
        "two.2",
    ]
    assert all(r.vm.cpu_m == 4000 * sum(p.compute_slices for p in r.vm.gis) for r in longer)


def test_missing_trace_is_one_clear_line(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    with pytest.raises(UserError) as err:
        trace_dir(str(tmp_path / "nowhere"))
    assert len(err.value.problems) == 1 and "--trace-dir" in err.value.problems[0]
    monkeypatch.setenv(ENV_VAR, str(small_trace(tmp_path)))
    assert trace_dir() == tmp_path


def test_alibaba_variant_uses_the_option_directory(tmp_path) -> None:
    cfg = SimConfig(variant="alibaba", trace_dir=str(small_trace(tmp_path)), warmup_s=0, measure_s=10 * 3600)
    reqs = requests_for(cfg, 1, build_pms(cfg))
    assert reqs and {p.gpu_model for r in reqs for p in r.vm.gis} == {"A100-40GB"}


def _real_trace():
    try:
        return trace_dir()
    except UserError as err:
        pytest.skip(f"Alibaba 2023 trace not available: {err}")


def test_real_trace_matches_the_paper_profile_share() -> None:
    load_pods.cache_clear()
    mapped = map_pods(load_pods(str(_real_trace())), A100)
    gis = Counter(p.name for _, g in mapped for p in g)
    share = gis["7g.40gb"] / sum(gis.values())
    assert share == pytest.approx(PAPER_FULL_GI_SHARE, abs=0.01)
    cfg = SimConfig(variant="alibaba")
    reqs = requests_for(cfg, 3, build_pms(cfg))
    assert all(r.arrival_s < cfg.horizon_s for r in reqs) and len(reqs) > 5000
