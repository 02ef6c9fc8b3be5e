"""`origamig simulate --option KEY=VALUE` / `--bound`: policy options from the command line."""

from __future__ import annotations

import pytest

from origamig.cli.simulate import parse_options
from origamig.errors import UserError


def test_values_are_read_as_json_when_they_parse():
    opts = parse_options(["m_max=8", "delta=2.5", "random_neighborhoods=true", "bound=vms"], ["origamig"])
    assert opts == (("m_max", 8), ("delta", 2.5), ("random_neighborhoods", True), ("bound", "vms"))


def test_an_option_no_selected_policy_accepts_is_an_error_naming_it():
    with pytest.raises(UserError) as err:
        parse_options(["m_max=8", "oops"], ["ff"])
    assert err.value.problems == [
        "--option: 'm_max' is not an option of ff (known: none)",
        "--option: 'oops' is not KEY=VALUE",
    ]


def test_an_option_of_one_of_several_policies_is_accepted():
    assert parse_options(["tc_rule=literal"], ["ff", "tc"]) == (("tc_rule", "literal"),)


def test_options_reach_the_policy(tmp_path):
    from origamig.sim.runner import make_run_policy
    from origamig.sim.scenario import SimConfig

    config = SimConfig(policy_options=parse_options(["m_max=4", "bound=vms", "delta=20"], ["origamig"]))
    policy = make_run_policy("origamig", config, seed=1)
    assert policy.bounds.m_max == 4 and policy.bounds.bound == "vms"
    assert policy.weights.migration == 20
