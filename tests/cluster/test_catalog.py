"""The hardware catalog: shipped files load as docs/model.md#domain gives them; malformed files name file,
field, value."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from origamig.cluster.catalog import default_catalog, load_catalog, models_dir
from origamig.errors import CatalogError, UserError

# docs/model.md#domain: (name, compute slices, memory slices, permissible starts) per profile.
A100_PROFILES = [
    ("1g.5gb", 1, 1, (0, 1, 2, 3, 4, 5, 6)),
    ("1g.10gb", 1, 2, (0, 2, 4, 6)),
    ("2g.10gb", 2, 2, (0, 2, 4)),
    ("3g.20gb", 3, 4, (0, 4)),
    ("4g.20gb", 4, 4, (0,)),
    ("7g.40gb", 7, 8, (0,)),
]
A30_PROFILES = [("1g.6gb", 1, 1, (0, 1, 2, 3)), ("2g.12gb", 2, 2, (0, 2)), ("4g.24gb", 4, 4, (0,))]
SHIPPED_GPUS = {"A100-40GB", "A30-24GB", "A100-80GB", "H100-80GB", "H100-94GB", "H200-141GB"}


def profile_rows(name: str) -> list[tuple[str, int, int, tuple[int, ...]]]:
    m = default_catalog().gpu(name)
    return [(p.name, p.compute_slices, p.memory_slices, p.starts) for p in m.profiles]


def test_shipped_catalog_loads_with_spec_geometries() -> None:
    cat = default_catalog()
    assert set(cat.gpus) >= SHIPPED_GPUS
    a100, a30 = cat.gpu("A100-40GB"), cat.gpu("A30-24GB")
    assert (a100.gpu_class, a100.memory_slices, a100.compute_slices) == ("100", 8, 7)
    assert (a30.gpu_class, a30.memory_slices, a30.compute_slices) == ("30", 4, 4)
    assert (a100.idle_power_w, a100.max_power_w, a30.idle_power_w, a30.max_power_w) == (50, 250, 33, 165)
    assert profile_rows("A100-40GB") == A100_PROFILES
    assert profile_rows("A30-24GB") == A30_PROFILES


def test_every_model_cites_its_source_and_has_consistent_profiles() -> None:
    for m in default_catalog().gpus.values():
        assert m.source, m.name
        for n, p in enumerate(m.profiles):
            assert p.index == n and p.gpu_model == m.name and p.gpu_class == m.gpu_class
            assert m.profile(p.name) is p


def test_pm_power_curve() -> None:
    pm = default_catalog().default_pm
    # docs/simulator.md#energy: idle 143 W, 100% 647 W; 5% lies halfway between the 0% and 10%
    # levels (143, 196.8).
    assert pm.power_at(0.0) == 143
    assert pm.power_at(1.0) == 647
    assert pm.power_at(0.05) == pytest.approx((143 + 196.8) / 2)
    assert pm.power_at(1.7) == 647  # clamped


def test_models_dir_holds_the_catalog() -> None:
    root = models_dir()
    assert (root / "gpus" / "A100-40GB.toml").is_file()
    assert (root / "pms").is_dir()
    assert set(load_catalog(root).gpus) == set(default_catalog().gpus)


def test_unknown_model_lists_the_known_ones() -> None:
    with pytest.raises(CatalogError, match=r"unknown GPU model 'X'.*A100-40GB"):
        default_catalog().gpu("X")
    assert issubclass(CatalogError, UserError)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the shipped catalog to break one file of."""
    shutil.copytree(models_dir(), tmp_path / "models")
    return tmp_path / "models"


A100_FILE = "gpus/A100-40GB.toml"
PM_FILE = "pms/DL380-Gen10Plus-2x8380.toml"

# (file, text replaced, replacement, words the error must contain: field and value)
BROKEN = [
    (A100_FILE, "memory_slices = 8", 'memory_slices = "8"', ["memory_slices", "'8'"]),
    (A100_FILE, "compute_slices = 7", "compute_slices = 0", ["compute_slices", "0"]),
    (A100_FILE, "memory_slices = 8", "memory_slices = 17", ["memory_slices", "17"]),
    (A100_FILE, "max_power_w = 250", "max_power_w = 10", ["max_power_w", "10"]),
    (A100_FILE, 'name = "A100-40GB"', 'nam = "A100-40GB"', [".name", "missing"]),
    (A100_FILE, "starts = [0, 2, 4, 6]", "starts = [0, 1, 4, 6]", ["profiles[1].starts", "1"]),
    (A100_FILE, "starts = [0, 2, 4]", "starts = [0, 4, 2]", ["profiles[2].starts", "[0, 4, 2]"]),
    (A100_FILE, "starts = [0, 4]", "starts = [0, 8]", ["profiles[3].starts", "8"]),
    (A100_FILE, "starts = [0, 4]", "starts = []", ["profiles[3].starts", "empty"]),
    (A100_FILE, 'name = "1g.10gb"', 'name = "1g.5gb"', ["profiles[1].name", "'1g.5gb'"]),
    (A100_FILE, "compute_slices = 4\n", "compute_slices = 9\n", ["profiles[4].compute_slices", "9"]),
    (A100_FILE, 'class = "100"', "class = true", ["class", "True"]),
    (A100_FILE, "starts = [0, 4]", "starts = [0, 4", ["not valid TOML"]),
    (PM_FILE, "load_percent = [0, 10,", 'load_percent = [0, "x",', ["load_percent", "'x'"]),
    (PM_FILE, "power_w = [143,", "power_w = [-143,", ["power_w", "-143"]),
    (PM_FILE, "cpu = 80", "cpu = -80", ["cpu", "-80"]),
]


@pytest.mark.parametrize(("file", "old", "new", "words"), BROKEN)
def test_malformed_file_names_file_field_and_value(
    tree: Path, file: str, old: str, new: str, words: list[str]
) -> None:
    path = tree / file
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(CatalogError) as err:
        load_catalog(tree)
    message = str(err.value)
    assert "\n" not in message
    for word in [path.name, *words]:
        assert word in message


def test_duplicate_model_name_and_empty_directory(tree: Path, tmp_path: Path) -> None:
    shutil.copy(tree / A100_FILE, tree / "gpus" / "copy.toml")
    with pytest.raises(CatalogError, match=r"copy\.toml.*'A100-40GB' is defined twice"):
        load_catalog(tree)
    (tmp_path / "empty" / "gpus").mkdir(parents=True)
    with pytest.raises(CatalogError, match="no GPU model files"):
        load_catalog(tmp_path / "empty")
