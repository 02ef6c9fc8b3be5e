"""The package's indented JSON writer (`snapshot/json_writer.py`) writes exactly `json.dumps(indent=n)`;
the nesting guard every JSON file passes (`files.nesting_depth`) counts as its definition says."""

from __future__ import annotations

import json
from enum import StrEnum

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.snapshot.json_writer import indented_json
from tests.profiles import examples

SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
KEYS = st.text() | st.integers() | st.booleans() | st.none() | st.floats(allow_nan=False)
DOCUMENTS = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.tuples(inner, inner) | st.dictionaries(KEYS, inner, max_size=4)
    ),
    max_leaves=30,
)


class Kind(StrEnum):
    PLAIN = "plain"


@settings(max_examples=examples(500), deadline=None)
@given(doc=DOCUMENTS, indent=st.sampled_from([0, 1, 2, 4]))
def test_the_same_text_as_json_dumps(doc: object, indent: int) -> None:
    assert indented_json(doc, indent) == json.dumps(doc, indent=indent)


def test_subclasses_and_unknown_types_as_json_dumps() -> None:
    doc = {"kind": Kind.PLAIN, "n": True, "nested": {"list": [Kind.PLAIN, 1.5e300, -0.0]}}
    assert indented_json(doc) == json.dumps(doc, indent=2)
    with pytest.raises(TypeError):
        indented_json({"x": object()})
    with pytest.raises(TypeError):
        indented_json({(1, 2): 0})


def _depth(doc: object) -> int:
    """Nesting by its definition, recursively (the documents here are shallow)."""
    if isinstance(doc, dict):
        return 1 + max((_depth(v) for v in doc.values()), default=0)
    if isinstance(doc, list):
        return 1 + max((_depth(v) for v in doc), default=0)
    return 0


@settings(max_examples=examples(300), deadline=None)
@given(doc=DOCUMENTS.map(lambda d: json.loads(json.dumps(d))), stop=st.integers(1, 6))
def test_nesting_depth_by_its_definition(doc: object, stop: int) -> None:
    from origamig.files import nesting_depth

    assert nesting_depth(doc) == _depth(doc)
    assert (nesting_depth(doc, stop) > stop) == (_depth(doc) > stop)
