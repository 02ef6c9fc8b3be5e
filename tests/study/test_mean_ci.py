"""`MeanCi`, a metric over seeds: its JSON is the dict results files have always held (same keys, same
order, same bytes), read back it is the same record, and its half-width is Student's t interval."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from benchmarks import RESULTS
from origamig.study.aggregate import MeanCi, mean_ci, t975
from origamig.study.spread import errbar, spread_text
from tests.profiles import examples

FLOATS = st.floats(-1e6, 1e6, allow_nan=False)
KEYS = ["mean", "ci95", "n", "values"]


def dict_mean_ci(values: list[float | None]) -> dict[str, Any]:
    """`mean_ci` as it was before the record: the dict every stored results file holds."""
    xs = [float(v) for v in values if v is not None]
    if not xs:
        return {"mean": None, "ci95": None, "n": 0, "values": []}
    mean = statistics.fmean(xs)
    half = t975(len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else 0.0
    return {"mean": mean, "ci95": half, "n": len(xs), "values": xs}


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.one_of(st.none(), FLOATS), max_size=12))
@example([])
@example([None])
@example([2.5])
@example([None, -1.0, None])
def test_json_is_the_old_dict_and_reads_back_as_the_record(values: list[float | None]) -> None:
    stats = mean_ci(values)
    doc = stats.to_json()
    assert list(doc) == KEYS and isinstance(doc["values"], list)
    assert json.dumps(doc) == json.dumps(dict_mean_ci(values))  # byte for byte
    assert MeanCi.from_json(doc) == stats
    assert MeanCi.from_json(json.loads(json.dumps(doc))) == stats  # through a file too


def test_no_values_is_the_empty_summary() -> None:
    assert mean_ci([]).to_json() == {"mean": None, "ci95": None, "n": 0, "values": []}
    assert mean_ci([None, None]) == MeanCi(None, None, 0, ())
    assert mean_ci([4.0]).to_json() == {"mean": 4.0, "ci95": 0.0, "n": 1, "values": [4.0]}


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(FLOATS, min_size=1, max_size=40))
def test_half_width_is_t_times_the_standard_error(xs: list[float]) -> None:
    stats = mean_ci(xs)
    assert stats.n == len(xs) and stats.values == tuple(xs)
    rounding = 1e-12 * max(1.0, *map(abs, xs))  # fmean of equal values may miss them by an ulp
    assert stats.mean is not None and min(xs) - rounding <= stats.mean <= max(xs) + rounding
    if len(xs) == 1:
        assert stats.ci95 == 0
    else:
        expected = t975(len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))
        assert stats.ci95 == pytest.approx(expected) and stats.ci95 >= 0


def test_from_json_reads_what_stored_files_hold() -> None:
    # A paired difference carries `wins` (not the record's); older or hand-made documents may lack
    # `values` or `n`.
    paired = {"mean": -2.0, "ci95": 12.706, "n": 2, "values": [-3.0, -1.0], "wins": 2}
    assert MeanCi.from_json(paired) == MeanCi(-2.0, 12.706, 2, (-3.0, -1.0))
    assert MeanCi.from_json({"mean": 5, "ci95": 1, "n": 3}) == MeanCi(5.0, 1.0, 3, ())
    assert MeanCi.from_json({"mean": 5.0, "values": [4.0, 6.0]}) == MeanCi(5.0, None, 2, (4.0, 6.0))
    assert MeanCi.from_json({}) == MeanCi(None, None, 0, ())
    assert MeanCi.from_json({"mean": None, "ci95": None, "n": 0, "values": None}) == mean_ci([])


def _summaries(x: Any) -> Iterator[dict[str, Any]]:
    if isinstance(x, dict):
        if {"mean", "ci95", "n", "values"} <= set(x):
            yield x
        for v in x.values():
            yield from _summaries(v)
    elif isinstance(x, list):
        for v in x:
            yield from _summaries(v)


def test_every_stored_summary_reads_back_and_writes_the_same_bytes() -> None:
    found = 0
    for path in sorted(RESULTS.rglob("*.json")):
        for doc in _summaries(json.loads(path.read_text())):
            own = {k: doc[k] for k in KEYS}
            assert json.dumps(MeanCi.from_json(doc).to_json()) == json.dumps(own), path
            found += 1
    assert found > 1000  # the sweeps' summaries and findings, the what-ifs' paired differences


def test_spread_reads_the_record() -> None:
    three, two = mean_ci([1.0, 2.0, 3.0]), mean_ci([1.0, 3.0])
    assert spread_text(three) == f"2.0 ± {4.303 / math.sqrt(3):.1f}" and spread_text(two) == "2.0 (1.0–3.0)"
    assert spread_text(mean_ci([2.0]), 100, 0) == "200" and spread_text(mean_ci([])) == "–"
    assert errbar(two) == (1.0, 1.0) and errbar(mean_ci([])) == (0.0, 0.0)
    assert errbar(three, 2) == pytest.approx((2 * 4.303 / math.sqrt(3),) * 2)
