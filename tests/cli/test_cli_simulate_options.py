"""`origamig simulate --option KEY=VALUE` / `--bound`: policy options from the command line."""

from __future__ import annotations

import pytest

from origamig.call.neighborhood_bounds import Bound
from origamig.cli.arguments import parse_options
from origamig.errors import UserError
from origamig.policies.base import make_policy
from origamig.solver_registry import backend_names
from tests.cli_helpers import run_main


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
    from origamig.sim.scenario import SimConfig
    from origamig.study.runner import make_run_policy

    config = SimConfig(policy_options=parse_options(["m_max=4", "bound=vms", "delta=20"], ["origamig"]))
    policy = make_run_policy("origamig", config, seed=1)
    assert policy.bounds.m_max == 4 and policy.bounds.bound == "vms"
    assert policy.weights.migration == 20


@pytest.mark.parametrize(
    ("option", "line"),
    [
        ("bound=pm", "error: bound: 'pm' is not one of pms, vms"),
        ("m_max=0", "error: m_max: 0 must be a positive integer"),
        ("solver=glpk", "error: solver: 'glpk' is not one of " + ", ".join(backend_names())),
        ("admission_calls=maybe", "error: admission_calls: 'maybe' must be true or false"),
        ("safety_net_s=0", "error: safety_net_s: 0 must be a positive number or null"),
    ],
)
def test_a_bad_origamig_option_is_one_error_line_before_any_run(option: str, line: str) -> None:
    args = [
        "simulate",
        "--policy",
        "ff,origamig",
        "--pms",
        "4",
        "--seeds",
        "1",
        "--measure",
        "1h",
        "-o",
        option,
    ]
    code, out, err = run_main(args)
    assert (code, out, err.splitlines()) == (2, "", [line])


def test_origamig_options_are_validated_together() -> None:
    with pytest.raises(UserError) as err:
        make_policy("origamig", bound="PMs", n_max=-1, time_limit_s=0)
    assert err.value.problems == [
        "bound: 'PMs' is not one of pms, vms",
        "n_max: -1 must be a positive integer",
        "time_limit_s: 0 must be a positive number or null",
    ]
    assert make_policy("origamig", bound="vms").bounds.bound is Bound.VMS


def test_the_solver_choices_are_the_registered_backends() -> None:
    code, _, err = run_main(["simulate", "--policy", "ff", "--solver", "nope", "--pms", "4", "--seeds", "1"])
    assert code == 2 and err.strip() == f"error: --solver: 'nope' is not one of {', '.join(backend_names())}"
