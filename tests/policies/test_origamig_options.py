"""The OrigaMIG options record: one place that validates, str enums that keep the JSON spellings."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from origamig.call.consolidation_neighborhood import Consolidation
from origamig.call.neighborhood_bounds import Bound
from origamig.errors import UserError
from origamig.policies.base import make_policy, option_names, policy_factory
from origamig.policies.optimizer.options import Arrival, OrigaMIGOptions
from origamig.policies.optimizer.policy import OrigaMIG


@pytest.mark.parametrize(
    ("field", "kind"), [("bound", Bound), ("consolidation", Consolidation), ("arrival", Arrival)]
)
def test_a_json_spelling_becomes_its_enum_and_writes_back_the_same(field: str, kind: type) -> None:
    for member in kind:
        options = OrigaMIGOptions.of({field: member.value})
        value = getattr(options, field)
        assert type(value) is kind and value is member
        assert json.dumps(value) == json.dumps(member.value)  # stored options stay byte-identical


def test_every_bad_option_is_named_at_once() -> None:
    with pytest.raises(UserError) as err:
        OrigaMIGOptions.of({"m_max": 0, "arrival": "bf", "rotate": "yes", "nope": 1})
    assert err.value.problems == ["nope: not an option of origamig (known: " + ", ".join(
        sorted(OrigaMIGOptions.names())) + ")"]  # fmt: skip
    with pytest.raises(UserError) as err:
        OrigaMIGOptions.of({"m_max": 0, "arrival": "bf", "rotate": "yes"})
    assert err.value.problems == [
        "m_max: 0 must be a positive integer",
        "rotate: 'yes' must be true or false",
        "arrival: 'bf' is not one of ff, tc, fgd",
    ]


def test_the_record_and_the_keywords_build_the_same_policy() -> None:
    record = OrigaMIGOptions(m_max=4, n_max=16, consolidation=Consolidation.SOURCES, arrival=Arrival.FF)
    by_keywords = make_policy("origamig", m_max=4, n_max=16, consolidation="sources", arrival="ff")
    assert isinstance(by_keywords, OrigaMIG)
    assert OrigaMIG(record).options == by_keywords.options == record
    assert OrigaMIG(record, m_max=8).options == OrigaMIGOptions.of({**asdict(record), "m_max": 8})


def test_the_registry_reads_the_option_names_from_the_record() -> None:
    assert option_names(policy_factory("origamig")) == OrigaMIGOptions.names() | {"weights"}


@given(m=st.integers(-3, 40), grow=st.none() | st.integers(-3, 80))
def test_grow_to_below_m_max_is_refused_and_nothing_else(m: int, grow: int | None) -> None:
    ok = m >= 1 and (grow is None or grow >= m)
    try:
        OrigaMIGOptions(m_max=m, grow_to=grow)
    except UserError:
        assert not ok
    else:
        assert ok


def test_the_primal_option_times_its_phase_and_leaves_other_runs_counters_as_they_were() -> None:
    from origamig.study.whatif import run_policy

    small = {"pms": 8, "warmup_h": 6, "measure_h": 6, "load": 1.0}
    runs = {p: run_policy("origamig", **small, work_limit=100, primal=p) for p in (False, True)}
    assert runs[True].counters["calls"] > 0 and runs[True].counters["time_primal_s"] > 0
    assert "time_primal_s" not in runs[False].counters  # the stored runs' counters keep their keys


def test_delta_per_gb_prices_each_move_by_what_it_copies() -> None:
    from origamig.cluster.records import VmSpec

    policy = make_policy("origamig", delta_per_gb=0.1)
    assert policy.weights.migration_per_gb == 0.1
    big = VmSpec("b", 28_000, 112_000, ())
    assert policy.weights.delta(big) == pytest.approx(11.2)
    with pytest.raises(UserError, match="delta_per_gb"):
        OrigaMIGOptions.of({"delta_per_gb": -1})
