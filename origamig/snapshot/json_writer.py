"""Indented JSON text, the same bytes as `json.dumps(data, indent=n)`, about twice as fast.

Python's encoder runs in C only without indentation; with it, it is a chain of generators. The
documents the package writes for a large cluster (a 10,000-server snapshot or `solve` answer is
8 MB) spend most of their writing there. This writer appends the pieces to one list instead, and
falls back to `json.dumps` for a value of any other type (which then raises as it would).
tests/snapshot/test_json_writer.py holds it to `json.dumps` on arbitrary documents.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii
from typing import Any

_INFINITY = float("inf")


def indented_json(data: Any, indent: int = 2) -> str:
    """`json.dumps(data, indent=indent)`."""
    out: list[str] = []
    _write(data, "", " " * indent, out.append)
    return "".join(out)


def _write(value: Any, pad: str, step: str, put: Any) -> None:
    if isinstance(value, str):
        put(encode_basestring_ascii(value))
    elif value is None:
        put("null")
    elif value is True:
        put("true")
    elif value is False:
        put("false")
    elif isinstance(value, int):
        put(int.__repr__(value))
    elif isinstance(value, float):
        put(_float(value))
    elif isinstance(value, list | tuple):
        if not value:
            put("[]")
            return
        inner = pad + step
        put("[\n" + inner)
        for n, item in enumerate(value):
            if n:
                put(",\n" + inner)
            _write(item, inner, step, put)
        put("\n" + pad + "]")
    elif isinstance(value, dict):
        if not value:
            put("{}")
            return
        inner = pad + step
        put("{\n")
        for n, (key, item) in enumerate(value.items()):
            put(("," if n else "") + ("\n" if n else "") + inner + _key(key) + ": ")
            _write(item, inner, step, put)
        put("\n" + pad + "}")
    else:
        put(json.dumps(value))


def _float(x: float) -> str:
    if x != x:
        return "NaN"
    if x == _INFINITY:
        return "Infinity"
    if x == -_INFINITY:
        return "-Infinity"
    return float.__repr__(x)


def _key(key: Any) -> str:
    """A dict key as `json.dumps` writes it (str, and int, float, bool or None made strings)."""
    if isinstance(key, str):
        return encode_basestring_ascii(key)
    if key is True or key is False or key is None:
        return '"' + json.dumps(key) + '"'
    if isinstance(key, int):
        return '"' + int.__repr__(key) + '"'
    if isinstance(key, float):
        return '"' + _float(key) + '"'
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
