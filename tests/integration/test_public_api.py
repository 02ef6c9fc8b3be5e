"""The package's face: `import origamig` is cheap, and its names do what a README snippet shows."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import origamig
from tests.paths import ROOT

EXAMPLE = ROOT / "examples" / "fragmented-a100.json"


def test_the_readme_tour_solves_and_the_plan_replays_under_the_independent_checker() -> None:
    snap = origamig.load_snapshot(EXAMPLE)
    outcome = origamig.solve_snapshot(snap, limits=origamig.Limits(deterministic=True, work_limit=1000))
    assert outcome.status == "improved" and outcome.plan is not None
    dc = snap.datacenter()
    replay = origamig.replay_plan(
        dc.pms, dc.vms, dc.placement, dc.pending, outcome.plan.steps, target=outcome.placement
    )
    assert replay.ok, replay.reason
    assert origamig.check_placement(outcome.pms_out, snap.vms, outcome.placement) == []
    assert outcome.after.value > outcome.before.value  # the objective of Eq. (5) is maximized


def test_a_plan_ordered_through_the_api_replays() -> None:
    snap = origamig.load_snapshot(EXAMPLE)
    outcome = origamig.solve_snapshot(snap, limits=origamig.Limits(deterministic=True, work_limit=1000))
    dc = snap.datacenter()
    moved = {v: pl for v, pl in outcome.placement.items() if dc.placement.get(v) != pl}
    plan = origamig.plan_migrations(dc, moved)
    assert hasattr(plan, "steps"), plan
    replay = origamig.replay_plan(dc.pms, dc.vms, dc.placement, dc.pending, plan.steps, target=moved)
    assert replay.ok, replay.reason


def test_make_policy_and_user_error() -> None:
    policy = origamig.make_policy("ff")
    assert policy.name == "ff"
    with pytest.raises(origamig.UserError, match="unknown policy 'nope'"):
        origamig.make_policy("nope")
    assert origamig.Weights().accept > 0


def test_every_public_name_is_its_home_modules_object() -> None:
    homes = origamig._HOMES
    assert sorted(homes) == sorted(n for n in origamig.__all__ if n != "__version__")
    for name, home in homes.items():
        assert getattr(origamig, name) is getattr(importlib.import_module(home), name)
    assert set(homes) <= set(dir(origamig))
    with pytest.raises(AttributeError, match="no attribute 'solve'"):
        origamig.solve  # noqa: B018


def test_importing_the_package_loads_none_of_its_layers() -> None:
    probe = "import sys, origamig\nprint(sorted(m for m in sys.modules if m.startswith('origamig')))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['origamig', 'origamig.lazy']"  # the package and its name loader


def test_the_package_is_marked_typed() -> None:
    assert (Path(origamig.__file__).parent / "py.typed").is_file()
