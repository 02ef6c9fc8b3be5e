"""The bounded memo tables: never above their limit, and forgetting never changes an answer."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from origamig.bilp import configurations
from origamig.cluster.catalog import default_catalog
from origamig.cluster.records import Weights
from origamig.memo import remember


@given(keys=st.lists(st.integers(0, 20), max_size=60), limit=st.integers(1, 8))
def test_a_table_keeps_at_most_its_limit_and_the_newest_entry(keys: list[int], limit: int) -> None:
    table: dict[int, int] = {}
    stored: list[int] = []  # the keys given to `remember`, in order (a key is stored while absent)
    for n, key in enumerate(keys):
        if key not in table:
            assert remember(table, key, n, limit) == n
            stored.append(key)
            assert len(table) <= limit and table[key] == n
    assert list(table) == stored[-limit:]  # the oldest are the ones forgotten


def test_prunings_are_the_same_when_the_table_forgets(monkeypatch: pytest.MonkeyPatch) -> None:
    model = default_catalog().gpu("A100-40GB")
    weights = Weights()
    cases = [(tuple([1] * len(model.profiles)), frozenset()), (tuple([2] * len(model.profiles)), frozenset())]
    fresh = [configurations.usable_configurations(model, a, prev, weights) for a, prev in cases]
    monkeypatch.setattr(configurations, "PRUNED_KEPT", 1)
    monkeypatch.setattr(configurations, "_PRUNED", {})
    again = [configurations.usable_configurations(model, a, prev, weights) for a, prev in cases * 2]
    assert again == fresh * 2 and len(configurations._PRUNED) == 1
