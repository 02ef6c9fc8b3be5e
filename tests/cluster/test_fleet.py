"""Fleet files: the shipped examples, the paper's fleet reproducing the default data center exactly,
scaling, profile mixes, derived neighborhood bounds, and one clear error per malformed field."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.call.neighborhood_bounds import derived_bounds
from origamig.errors import UserError
from origamig.sim.fleet import Fleet, FleetError, PmKind, load_fleet
from origamig.sim.scenario import SimConfig, build_pms, requests_for, validate, workload_spec
from origamig.sim.workload import generate
from tests.cli_helpers import run_main
from tests.paths import ROOT
from tests.profiles import examples

FLEETS = ROOT / "examples" / "fleets"
PAPER = FLEETS / "paper.toml"


def test_shipped_fleets_load_and_describe_their_hardware() -> None:
    names = {p.stem: load_fleet(p) for p in FLEETS.glob("*.toml")}
    assert set(names) >= {"paper", "h100-8x", "a100-h200-mixed"}
    for stem, fleet in names.items():
        assert fleet.name == stem
        assert len(fleet.build_pms()) == fleet.pm_count
    h100 = names["h100-8x"].build_pms()
    assert all(len(pm.gpus) == 8 and {g.name for g in pm.gpus} == {"H100-80GB"} for pm in h100)
    mixed = {g.name for pm in names["a100-h200-mixed"].build_pms() for g in pm.gpus}
    assert mixed == {"A100-80GB", "H200-141GB"}


@pytest.mark.parametrize("pms", [*range(1, 41), 64, 100, 128, 129, 1000])
def test_paper_fleet_builds_the_default_data_center(pms: int) -> None:
    fleet = load_fleet(PAPER)
    with_file = SimConfig(pms=pms, fleet=fleet)
    assert build_pms(with_file) == build_pms(SimConfig(pms=pms))
    assert workload_spec(with_file) == workload_spec(SimConfig(pms=pms))


def test_paper_fleet_reproduces_a_deterministic_default_run_exactly() -> None:
    """The same `simulate` command with and without the paper's fleet file: identical runs."""
    base = ["simulate", "--policy", "ff,tc,origamig", "--pms", "8", "--warmup", "3h", "--measure", "3h"]
    base += ["--seeds", "1..2", "--deterministic", "-o", "work_limit=20", "--json"]
    code, plain, err = run_main(base)
    assert code == 0, err
    code, with_file, err = run_main([*base, "--fleet", str(PAPER)])
    assert code == 0, err
    a, b = json.loads(plain)["runs"], json.loads(with_file)["runs"]
    assert [(r["policy"], r["seed"]) for r in a] == [(r["policy"], r["seed"]) for r in b]
    timing = ("time_", "median_call_s", "wall_s")  # wall-clock measurements, not results
    for x, y in zip(a, b, strict=True):
        assert x["metrics"] == y["metrics"], (x["policy"], x["seed"])
        assert x["requests"] == y["requests"] and x["calls"] == y["calls"] and x["events"] == y["events"]
        same = {k: v for k, v in x["counters"].items() if not k.startswith(timing)}
        assert same == {k: v for k, v in y["counters"].items() if not k.startswith(timing)}
    assert any(r["policy"] == "origamig" and r["calls"] > 0 for r in a)  # the optimizer did run
    assert b[0]["config"]["fleet"]["name"] == "paper"


@settings(max_examples=examples(200), deadline=None)
@given(
    own=st.lists(st.integers(1, 50), min_size=1, max_size=6),
    total=st.integers(1, 500),
)
def test_scaled_counts_are_never_negative_and_add_up(own: list[int], total: int) -> None:
    fleet = Fleet("f", tuple(PmKind(c, ("A30-24GB",), 8, 32) for c in own))
    counts = fleet.counts(total)
    assert sum(counts) == total and min(counts) >= 0
    assert fleet.counts() == own and fleet.counts(sum(own)) == own


def test_profile_mix_of_a_fleet_is_drawn() -> None:
    fleet = load_fleet(FLEETS / "a100-h200-mixed.toml")
    config = SimConfig(fleet=fleet, pms=fleet.pm_count, warmup_s=0, measure_s=400 * 3600.0)
    pms = build_pms(config)
    requests = requests_for(config, 3, pms)
    drawn = Counter(p.name for r in requests for p in r.vm.gis if p.gpu_model == "H200-141GB")
    weights = dict(dict(fleet.profile_weights)["H200-141GB"])
    total = sum(drawn.values())
    for name, w in weights.items():
        expected = w / sum(weights.values())
        assert abs(drawn[name] / total - expected) < 0.03, (name, drawn[name] / total, expected)
    a100 = Counter(p.name for r in requests for p in r.vm.gis if p.gpu_model == "A100-80GB")
    assert len(a100) == 6 and max(a100.values()) / min(a100.values()) < 1.3  # uniform
    # CPU follows the fleet's 3 cores per compute slice.
    assert all(r.vm.cpu == 3 * sum(p.compute_slices for p in r.vm.gis) for r in requests[:50])


def test_a_profile_left_out_of_the_mix_is_never_requested(tmp_path: Path) -> None:
    path = tmp_path / "only-small.toml"
    path.write_text(
        '[[pm]]\ncount = 4\ngpus = ["A100-80GB", "A100-80GB", "A100-80GB", "A100-80GB"]\ncpu = 128\n'
        'ram_gb = 1024\n[workload.profiles."A100-80GB"]\n"1g.10gb" = 1\n"2g.20gb" = 0\n"7g.80gb" = 1\n'
    )
    fleet = load_fleet(path)
    config = SimConfig(fleet=fleet, pms=4)
    pms = build_pms(config)
    inventory = {"A100-80GB": (pms[0].gpus[0], 16)}
    names = {p.name for r in generate(inventory, workload_spec(config), 1, 200 * 3600.0) for p in r.vm.gis}
    assert names == {"1g.10gb", "7g.80gb"}


def test_derived_bounds_keep_the_papers_neighborhood_in_gpus() -> None:
    def bounds(name: str) -> tuple[int, int]:
        return derived_bounds(load_fleet(FLEETS / f"{name}.toml").build_pms())

    assert bounds("paper") == (16, 64)  # the paper's Table 11 values
    assert bounds("h100-8x") == (4, 64)  # 32 GPUs, 64 VMs
    assert derived_bounds([]) == (16, 64)


def test_simulate_passes_derived_bounds_unless_set() -> None:
    from origamig.study.runner import make_run_policy

    fleet = load_fleet(FLEETS / "h100-8x.toml")
    config = SimConfig(fleet=fleet, pms=12)
    assert make_run_policy("origamig", config, 1).bounds.m_max == 4
    assert make_run_policy("origamig", SimConfig(pms=8), 1).bounds.m_max == 16
    set_by_user = config.replace(policy_options=(("m_max", 6),))
    policy = make_run_policy("origamig", set_by_user, 1)
    assert (policy.bounds.m_max, policy.bounds.n_max) == (6, 64)


def test_fleet_conflicts_with_snapshot_and_hardware_variants() -> None:
    fleet = load_fleet(PAPER)
    with pytest.raises(UserError, match="--variant: a100-only sets the hardware"):
        validate(SimConfig(fleet=fleet, variant="a100-only"))
    with pytest.raises(UserError, match="--fleet: cannot be combined with --from"):
        validate(SimConfig(fleet=fleet, snapshot="examples/mixed-a100-a30.json"))
    validate(SimConfig(fleet=fleet, variant="lognormal"))  # a workload variant applies on top


GOOD_PM = '[[pm]]\ncount = 2\ngpus = ["H100-80GB"]\ncpu = 64\nram_gb = 512\n'

# (file text, expected substrings of one error line: the field and the value)
MALFORMED = [
    ("", ["pm: missing"]),
    ("pm = 3\n", ["pm: expected one or more [[pm]] tables"]),
    ("[[pm]]\ngpus = []\ncpu = 8\nram_gb = 32\n", ["pm[0].count: missing"]),
    (GOOD_PM.replace("count = 2", "count = 0"), ["pm[0].count: 0 must be at least 1"]),
    (GOOD_PM.replace("count = 2", "count = 2.5"), ["pm[0].count: 2.5 is not a whole number"]),
    (GOOD_PM.replace("count = 2", "count = true"), ["pm[0].count: True is not a whole number"]),
    (GOOD_PM.replace('["H100-80GB"]', '["H100"]'), ["pm[0].gpus[0]: unknown GPU model 'H100' (known: "]),
    (GOOD_PM.replace('["H100-80GB"]', '"H100-80GB"'), ["pm[0].gpus: 'H100-80GB' is not a list"]),
    (GOOD_PM.replace('gpus = ["H100-80GB"]\n', ""), ["pm[0].gpus: missing"]),
    (GOOD_PM.replace("cpu = 64", "cpu = -4"), ["pm[0].cpu: -4 must be positive"]),
    (GOOD_PM.replace("cpu = 64", 'cpu = "64"'), ["pm[0].cpu: '64' is not a number"]),
    (GOOD_PM.replace("ram_gb = 512", "ram_gb = nan"), ["pm[0].ram_gb: nan is not a finite number"]),
    (GOOD_PM.replace("ram_gb = 512\n", ""), ["pm[0].ram_gb: missing"]),
    (GOOD_PM + 'power = "DL380-Gen10-Plus"\n', ["pm[0].power: unknown power curve 'DL380-Gen10-Plus'"]),
    (GOOD_PM + "ram = 512\n", ["pm[0].ram: unknown key (known: count, gpus, cpu, ram_gb, power, label)"]),
    ('name = "my fleet"\n' + GOOD_PM, ["name: 'my fleet' must be letters, digits"]),
    ("site = 3\n" + GOOD_PM, ["site: unknown key"]),
    (GOOD_PM + "[workload]\ntenant_share = 1.5\n", ["workload.tenant_share: 1.5 must be between 0 and 1"]),
    (GOOD_PM + "[workload]\njob_mean_h = 0\n", ["workload.job_mean_h: 0 must be positive"]),
    (GOOD_PM + '[workload]\nlifetimes = "weibull"\n', ["workload.lifetimes: 'weibull' is not one of"]),
    (GOOD_PM + "[workload]\nload = 0.9\n", ["workload.load: unknown key"]),
    (
        GOOD_PM + '[workload.profiles."A30-24GB"]\n"1g.6gb" = 1\n',
        ['workload.profiles."A30-24GB": no [[pm]] carries it'],
    ),
    (
        GOOD_PM + '[workload.profiles."H100-80GB"]\n"1g.5gb" = 1\n',
        ['workload.profiles."H100-80GB"."1g.5gb": not a profile of H100-80GB'],
    ),
    (
        GOOD_PM + '[workload.profiles."H100-80GB"]\n"1g.10gb" = -1\n',
        ['workload.profiles."H100-80GB"."1g.10gb": -1 must be at least 0'],
    ),
    (
        GOOD_PM + '[workload.profiles."H100-80GB"]\n"1g.10gb" = 0\n',
        ['workload.profiles."H100-80GB": every weight is 0'],
    ),
    ("[[pm]\ncount = 1\n", ["not valid TOML"]),
]


@pytest.mark.parametrize(("text", "expected"), MALFORMED)
def test_malformed_fleet_names_file_field_and_value(tmp_path: Path, text: str, expected: list[str]) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(FleetError) as info:
        load_fleet(path)
    for want in expected:
        assert any(line.startswith(f"{path}: ") and want in line for line in info.value.problems), (
            want,
            info.value.problems,
        )


def test_every_problem_of_a_file_is_listed(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[[pm]]\ncount = 0\ngpus = ["X"]\ncpu = 0\nram_gb = 8\n[[pm]]\ncount = 1\ngpus = []\n')
    with pytest.raises(FleetError) as info:
        load_fleet(path)
    fields = [line.split(": ")[1] for line in info.value.problems]
    assert fields == ["pm[0].count", "pm[0].gpus[0]", "pm[0].cpu", "pm[1].cpu", "pm[1].ram_gb"]


def test_meta_table_is_free_for_other_tools(tmp_path: Path) -> None:
    path = tmp_path / "tool.toml"
    path.write_text('[meta]\nwritten_by = "inventory-sync"\nracks = [1, 2]\n' + GOOD_PM)
    assert load_fleet(path).pm_count == 2


def test_cli_reports_a_bad_fleet_in_one_line_without_traceback(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(GOOD_PM.replace("cpu = 64", "cpu = 0"))
    out_file = tmp_path / "out.json"
    code, _, err = run_main(["simulate", "--policy", "ff", "--fleet", str(path), "--out", str(out_file)])
    assert code == 2
    assert err.strip() == f"error: {path}: pm[0].cpu: 0 must be positive"
    assert "Traceback" not in err and not out_file.exists()
    code, _, err = run_main(["simulate", "--policy", "ff", "--fleet", str(tmp_path / "none.toml")])
    assert code == 2 and err.strip() == f"error: --fleet: {tmp_path / 'none.toml'}: no such file"


def test_fleet_survives_a_results_file_round_trip() -> None:
    import dataclasses

    from origamig.sim.fleet import fleet_from_dict

    for path in sorted(FLEETS.glob("*.toml")):
        fleet = load_fleet(path)
        assert fleet_from_dict(json.loads(json.dumps(dataclasses.asdict(fleet)))) == fleet


def test_own_requests_replay_on_a_fleet(tmp_path: Path) -> None:
    requests = tmp_path / "reqs.csv"
    requests.write_text(
        "id,arrival_s,lifetime_s,gpu_model,gis,cpu,ram_gb\n"
        "a,0,7200,H100-80GB,7g.80gb;7g.80gb,,\n"
        "b,60,7200,H100-80GB,1g.10gb,,\n"
        "c,120,3600,A100-40GB,1g.5gb,,\n"
    )
    args = [
        "simulate",
        "--policy",
        "ff",
        "--fleet",
        str(FLEETS / "h100-8x.toml"),
        "--requests",
        str(requests),
    ]
    code, out, err = run_main([*args, "--seeds", "1", "--warmup", "0", "--measure", "3h", "--json"])
    assert code == 0, err
    run = json.loads(out)["runs"][0]
    assert run["requests"] == 3 and run["config"]["pms"] == 12
    # The A100-40GB request fits no H100 server: 1 of the 18 requested memory slices is refused.
    assert run["metrics"]["acceptance"] == 17 / 18


def test_solve_auto_neighborhood_on_8_gpu_servers_uses_derived_bounds() -> None:
    code, out, err = run_main(["solve", str(FLEETS / "h100-cluster.json"), "--json"])
    assert code == 0, err
    calls = json.loads(out)["calls"]
    assert len(calls) >= 2  # one admission call per pending VM here, each in its own neighborhood
    for call in calls:  # M_max = 4 servers of 8 GPUs (the paper's 16 would take all six)
        assert 2 <= len(call["pms"]) <= 4
