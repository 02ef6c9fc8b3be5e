"""The §3 configuration-space analysis: the paper's exact counts and an independent brute force."""

from __future__ import annotations

import json
import sys
from itertools import combinations

import pytest
from typer.testing import CliRunner

from origamig.cli.app import app, main
from origamig.cluster.catalog import GpuModel, default_catalog
from origamig.cluster.configspace import (
    analyze,
    default_reachable,
    enumerate_space,
    looser_single,
    looser_two_gpu,
    suboptimal,
    terminal,
    two_gpu_count,
)
from origamig.cluster.mig import GpuConfig
from tests.builders import A30, A100, model

# Paper §3 and docs/model.md#configuration-space (A100-40GB).
A100_CONFIGURATIONS = 723
A100_TERMINAL = 78
A100_SUBOPTIMAL = 482  # 67%: lower CF than the best arrangement of the same GIs
A100_DEFAULT_REACHABLE = 179  # 25%: default GI placement, adding GIs only
A100_DEFAULT_SUBOPTIMAL = 59  # 33% of the 179
A100_TWO_GPU = 261_726  # multisets of two of the 723: C(724, 2)
A100_LOOSER_SINGLE = 428  # 59%
A100_LOOSER_TWO_GPU = 205_575  # 79%
# A30-24GB, derived by hand from its starts (1g.6gb 0-3, 2g.12gb 0,2, 4g.24gb 0): 16 subsets of 1g
# starts (incl. empty) + 4g alone + 2g@0 with a subset of 1g@{2,3} (4) + 2g@2 with a subset of 1g@{0,1}
# (4) + both 2g = 26; terminal: 4g, 2g+2g, 2g@0+1g@2+1g@3, 2g@2+1g@0+1g@1, four 1g = 5.
A30_CONFIGURATIONS = 26
A30_TERMINAL = 5


def brute_force_configurations(m: GpuModel) -> set[frozenset[tuple[str, int]]]:
    """Every set of pairwise disjoint (profile, start) placements, from plain sets of slices."""
    slots = [(p.name, z, frozenset(range(z, z + p.memory_slices))) for p in m.profiles for z in p.starts]
    found: set[frozenset[tuple[str, int]]] = set()
    for size in range(m.memory_slices + 1):
        for combo in combinations(slots, size):
            used = [u for _, _, s in combo for u in s]
            if len(used) == len(set(used)):
                found.add(frozenset((name, z) for name, z, _ in combo))
    return found


@pytest.mark.parametrize(
    ("name", "count", "ends"), [(A30, A30_CONFIGURATIONS, A30_TERMINAL), (A100, 723, 78)]
)
def test_dfs_finds_exactly_the_disjoint_placement_sets(name: str, count: int, ends: int) -> None:
    space = enumerate_space(model(name))
    found = {frozenset(space.gis(key)) for key in space.occupancy}
    assert len(found) == len(space) == count
    assert found == brute_force_configurations(model(name))
    assert len(terminal(space)) == ends


def test_a100_counts_of_the_paper() -> None:
    space = enumerate_space(model(A100))
    assert len(space) == A100_CONFIGURATIONS
    assert len(terminal(space)) == A100_TERMINAL
    assert len(suboptimal(space)) == A100_SUBOPTIMAL
    reached = default_reachable(space)
    assert len(reached) == A100_DEFAULT_REACHABLE
    assert len(suboptimal(space, reached)) == A100_DEFAULT_SUBOPTIMAL
    assert two_gpu_count(space) == A100_TWO_GPU
    assert len(looser_single(space)) == A100_LOOSER_SINGLE
    assert looser_two_gpu(space) == A100_LOOSER_TWO_GPU


def test_every_configuration_is_valid_and_terminal_ones_take_nothing() -> None:
    space = enumerate_space(model(A100))
    ends = set(terminal(space))
    for key in space.occupancy:
        cfg = space.gpu_config(key)  # placing each GI validates start and overlap
        assert cfg.occupancy == space.occupancy[key]
        assert cfg.cf == space.cf(key)
        takes_more = any(cfg.default_place(p) is not None for p in cfg.model.profiles)
        assert takes_more == (key not in ends)


def test_default_reachable_replays_the_default_policy() -> None:
    """Each default-reachable configuration arises by default-placing its GIs in some order; the paper's
    two-1g.5gb example is one of the suboptimal ones."""
    space = enumerate_space(model(A100))
    reached = set(default_reachable(space))
    sub = set(suboptimal(space))
    example = space.key_of([("1g.5gb", 4), ("1g.5gb", 6)])
    assert example in reached and example in sub
    assert space.key_of([("1g.5gb", 4), ("1g.5gb", 5)]) not in reached
    # Closure: the default placement from a reached configuration stays reached.
    for key in reached:
        cfg = space.gpu_config(key)
        for p in cfg.model.profiles:
            nxt = cfg.default_place(p)
            if nxt is not None:
                assert space.key_of(nxt.key()) in reached


def test_suboptimal_means_a_better_arrangement_exists() -> None:
    """Check 482 against an independent definition: a configuration with the same profile multiset
    and strictly higher CF exists among the brute-forced configurations."""
    m = model(A100)
    configs: list[GpuConfig] = []
    for gis in brute_force_configurations(m):
        cfg = GpuConfig(m)
        for name, z in sorted(gis, key=lambda g: g[1]):
            cfg = cfg.place(name, z)
        configs.append(cfg)
    best: dict[tuple[str, ...], int] = {}
    for cfg in configs:
        ms = tuple(sorted(gi.profile.name for gi in cfg.gis))
        best[ms] = max(best.get(ms, 0), cfg.cf)
    worse = [c for c in configs if c.cf < best[tuple(sorted(gi.profile.name for gi in c.gis))]]
    assert len(worse) == A100_SUBOPTIMAL


def test_looser_two_gpu_against_every_pair() -> None:
    """The class-grouped count equals a direct pass over all 261,726 pairs: pairs with the same union
    of GIs are alternatives; C counts when some alternative A has CF(A) ≤ CF(C) and more free starts
    for at least one profile (capacities summed over the two GPUs)."""
    space = enumerate_space(model(A100))
    keys = list(space.occupancy)
    rows = [(space.counts(k), space.capacity(k)) for k in keys]
    by_union: dict[tuple[int, ...], dict[tuple[int, ...], int]] = {}
    for i, (counts_a, cap_a) in enumerate(rows):
        for counts_b, cap_b in rows[i:]:
            union = tuple(x + y for x, y in zip(counts_a, counts_b, strict=True))
            cap = tuple(x + y for x, y in zip(cap_a, cap_b, strict=True))
            caps = by_union.setdefault(union, {})
            caps[cap] = caps.get(cap, 0) + 1
    assert sum(sum(c.values()) for c in by_union.values()) == A100_TWO_GPU
    count = sum(
        n
        for caps in by_union.values()
        for cap, n in caps.items()
        if any(sum(alt) <= sum(cap) and any(a > c for a, c in zip(alt, cap, strict=True)) for alt in caps)
    )
    assert count == looser_two_gpu(space) == A100_LOOSER_TWO_GPU


@pytest.mark.parametrize("name", sorted(default_catalog().gpus))
def test_every_catalog_model_analyzes(name: str) -> None:
    a = analyze(default_catalog().gpu(name))
    assert 0 < a.terminal < a.configurations
    assert a.default_reachable <= a.configurations
    assert a.suboptimal < a.configurations and a.default_suboptimal <= a.default_reachable
    assert a.two_gpu == a.configurations * (a.configurations + 1) // 2


runner = CliRunner()


@pytest.mark.parametrize("name", sorted(default_catalog().gpus))
def test_cli_configs_on_every_model(name: str) -> None:
    table = runner.invoke(app, ["configs", "--gpu", name])
    assert table.exit_code == 0, table.output
    assert name in table.output
    result = runner.invoke(app, ["configs", "--gpu", name, "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["gpu"] == name
    assert doc["configurations"] == len(enumerate_space(default_catalog().gpu(name)))


def test_cli_configs_json_for_a100_and_all() -> None:
    doc = json.loads(runner.invoke(app, ["configs", "--json"]).output)
    assert (doc["configurations"], doc["terminal"], doc["suboptimal"]) == (723, 78, 482)
    assert (doc["looser_single"], doc["looser_two_gpu"]) == (428, 205_575)
    every = json.loads(runner.invoke(app, ["configs", "--gpu", "all", "--json"]).output)
    assert sorted(d["gpu"] for d in every) == sorted(default_catalog().gpus)


def test_cli_unknown_gpu_is_one_error_line_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["origamig", "configs", "--gpu", "NOPE"])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("error: unknown GPU model 'NOPE'")


def test_cli_usage_error_exits_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "argv", ["origamig", "configs", "--no-such-option"])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 2
    assert "Traceback" not in capsys.readouterr().err
