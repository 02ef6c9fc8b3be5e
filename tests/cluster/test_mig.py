"""MIG slice algebra (`origamig.cluster.mig`) against docs/model.md#domain, paper Table 3 and brute
force over plain sets."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.cluster.catalog import GpuModel, Profile, default_catalog
from origamig.cluster.mig import GpuConfig, geometry
from origamig.errors import PlacementError
from tests.builders import A30, A100, config, model
from tests.profiles import examples
from tests.strategies import gpu_configs

# docs/model.md#domain / paper §3 Eq. (2): CF of the empty A100 = 7+4+3+2+1+1 starts,
# of the empty A30 = 4+2+1.
CF_EMPTY_A100 = 18
CF_EMPTY_A30 = 7
# Paper §3, Fig. 1(b): G = {0:1, 3:1} leaves {1,2,4,5,6,7} free: 5 + 2 + 1 + 1 = 9.
CF_FIG1B = 9
# Paper Table 3 (Fig. 2): per-profile capacity in A100 profile order 1g.5gb … 7g.40gb, both CF 11.
TABLE3_A = (5, 2, 2, 1, 1, 0)
TABLE3_B = (5, 3, 2, 1, 0, 0)


def brute_free(model_: GpuModel, occupied: set[int]) -> set[int]:
    return set(range(model_.memory_slices)) - occupied


def brute_starts(model_: GpuModel, profile: Profile, occupied: set[int]) -> list[int]:
    """S(F,p) from plain sets: permitted starts whose g_p slices are all free (Eq. 1)."""
    free = brute_free(model_, occupied)
    return [z for z in profile.starts if set(range(z, z + profile.memory_slices)) <= free]


def brute_cf(model_: GpuModel, occupied: set[int]) -> int:
    return sum(len(brute_starts(model_, p, occupied)) for p in model_.profiles)


def occupied_slices(cfg: GpuConfig) -> set[int]:
    return {u for gi in cfg.gis for u in range(gi.start, gi.start + gi.profile.memory_slices)}


def test_cf_of_spec_examples() -> None:
    assert GpuConfig(model(A100)).cf == CF_EMPTY_A100
    assert GpuConfig(model(A30)).cf == CF_EMPTY_A30
    assert config(A100, ("1g.5gb", 0), ("1g.5gb", 3)).cf == CF_FIG1B


def test_table3_configurations() -> None:
    a = config(A100, ("1g.5gb", 4), ("1g.5gb", 6))
    b = config(A100, ("1g.5gb", 0), ("1g.5gb", 1))
    assert tuple(a.capacity().values()) == TABLE3_A
    assert tuple(b.capacity().values()) == TABLE3_B
    assert a.cf == b.cf == sum(TABLE3_A) == 11


def test_paper_two_small_gis_example() -> None:
    # Paper §3: two 1g.5gb on an empty A100 go to slices 6 then 4 (CF 11), not 4 and 5 (CF 12).
    cfg = GpuConfig(model(A100)).default_place("1g.5gb").default_place("1g.5gb")
    assert cfg.key() == {("1g.5gb", 4), ("1g.5gb", 6)}
    assert cfg.cf == 11 < config(A100, ("1g.5gb", 4), ("1g.5gb", 5)).cf == 12


@pytest.mark.parametrize("name", sorted(default_catalog().gpus))
def test_tables_match_brute_force_for_every_occupancy(name: str) -> None:
    """Exhaustive over all 2^|U| occupancies of every catalog model."""
    m = default_catalog().gpu(name)
    geo = geometry(m)
    for occ in range(1 << m.memory_slices):
        occupied = {u for u in range(m.memory_slices) if occ >> u & 1}
        assert geo.cf(occ) == brute_cf(m, occupied)
        for p in m.profiles:
            starts = brute_starts(m, p, occupied)
            assert list(geo.free_starts(occ, p)) == starts
            assert geo.capacity(occ)[p.index] == len(starts)
            assert geo.fits(occ, p) == bool(starts)
            assert (geo.default_start(occ, p) is None) == (not starts)


@settings(max_examples=examples(200), deadline=None)
@given(gpu_configs(), st.data())
def test_place_then_remove_restores(cfg: GpuConfig, data: st.DataObject) -> None:
    prof = data.draw(st.sampled_from(cfg.model.profiles))
    free = brute_starts(cfg.model, prof, occupied_slices(cfg))
    if not free:
        return
    start = data.draw(st.sampled_from(free))
    placed = cfg.place(prof, start)
    assert placed.cf == brute_cf(cfg.model, occupied_slices(placed))
    assert placed.remove(prof, start) == cfg
    assert placed.remove(prof.name, start).occupancy == cfg.occupancy


@settings(max_examples=examples(200), deadline=None)
@given(gpu_configs(), st.data())
def test_default_placement_is_max_cf_lowest_start(cfg: GpuConfig, data: st.DataObject) -> None:
    prof = data.draw(st.sampled_from(cfg.model.profiles))
    occupied = occupied_slices(cfg)
    free = brute_starts(cfg.model, prof, occupied)
    result = cfg.default_place(prof)
    assert (result is None) == (not free)  # a profile fits iff S(F,p) is non-empty
    if result is None:
        return
    (new,) = set(result.gis) - set(cfg.gis)
    assert new.start in prof.starts
    assert not occupied & set(range(new.start, new.start + prof.memory_slices))  # never overlaps
    # Brute force: CF after each candidate start, best CF wins, lowest start on ties.
    scored = [(-brute_cf(cfg.model, occupied | set(range(z, z + prof.memory_slices))), z) for z in free]
    assert new.start == min(scored)[1]


@settings(max_examples=examples(200), deadline=None)
@given(gpu_configs())
def test_cf_and_capacity_equal_brute_force(cfg: GpuConfig) -> None:
    occupied = occupied_slices(cfg)
    assert cfg.cf == brute_cf(cfg.model, occupied)
    for p in cfg.model.profiles:
        assert cfg.capacity()[p.name] == len(brute_starts(cfg.model, p, occupied))


def test_invalid_placements_raise() -> None:
    cfg = config(A100, ("3g.20gb", 4))
    with pytest.raises(PlacementError, match="not a permitted start"):
        cfg.place("1g.10gb", 1)
    with pytest.raises(PlacementError, match="overlaps"):
        cfg.place("1g.5gb", 5)
    with pytest.raises(PlacementError, match="cannot go on"):
        cfg.place(model(A30).profile("1g.6gb"), 0)
    with pytest.raises(PlacementError, match="no profile"):
        cfg.place("1g.6gb", 0)
    with pytest.raises(PlacementError, match=r"no 1g\.5gb at start 0"):
        cfg.remove("1g.5gb", 0)
    assert cfg.key() == {("3g.20gb", 4)}  # immutable: failed calls change nothing


def test_full_gpu_takes_nothing() -> None:
    full = config(A100, ("7g.40gb", 0))
    assert full.cf == 0
    assert all(full.default_place(p) is None for p in full.model.profiles)
