"""Reading JSON fields with every problem collected by JSON path (the snapshot reader's toolkit).

`FieldReader` accumulates one line `<json path>: <problem with the value>` per problem and never
stops at the first: each accessor returns None (and records the problem) when a value is bad, so a
caller can go on reading the rest and leave the broken record out.
"""

from __future__ import annotations

import json
import math
from typing import Any

MISSING: Any = object()  # a key that is absent (null is a value, and a wrong one)
# The largest number a snapshot may hold (cores, GB, weights): far beyond any server or sensible
# weight, and far below the magnitudes at which the MIP solvers lose precision or refuse a model.
LARGEST = 1e6


def show(value: Any) -> str:
    """A short JSON rendering of a value for error messages."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def kind_of(value: Any) -> str:
    """What a JSON value is, in words: "null", "a number", "a list", ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


class FieldReader:
    """Collects every problem of a document while its fields are read."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    # typed accessors: each returns None (and records a problem) when the value is bad
    def err(self, path: str, message: str) -> None:
        self.problems.append(f"{path}: {message}")

    def field(self, obj: dict, path: str, key: str, required: bool = True) -> Any:
        if key not in obj:
            if required:
                self.err(f"{path}.{key}" if path else key, "missing")
            return MISSING
        return obj[key]

    def typed(self, value: Any, path: str, kind: type, what: str) -> Any:
        if value is MISSING:
            return None
        if (isinstance(value, bool) and kind is not bool) or not isinstance(value, kind):
            self.err(path, f"expected {what}, got {show(value)} ({kind_of(value)})")
            return None
        return value

    def number(self, value: Any, path: str, positive: bool = False) -> float | None:
        if value is MISSING:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.err(path, f"expected a number, got {show(value)} ({kind_of(value)})")
            return None
        if not math.isfinite(value):
            self.err(path, f"{value} is not a finite number")
            return None
        if value < 0:
            self.err(path, f"{show(value)} is negative")
            return None
        if value > LARGEST:
            self.err(path, f"{show(value)} is implausibly large (at most {LARGEST:,.0f})")
            return None
        if positive and value == 0:
            self.err(path, "0 must be positive")
            return None
        return float(value)

    def index(self, value: Any, path: str) -> int | None:
        if value is MISSING:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self.err(path, f"expected an integer, got {show(value)} ({kind_of(value)})")
            return None
        if value < 0:
            self.err(path, f"{value} is negative")
            return None
        return value

    def ident(self, obj: dict, path: str, seen: dict[str, str]) -> str | None:
        vid = self.typed(self.field(obj, path, "id"), f"{path}.id", str, "a string")
        if vid is None:
            return None
        if not vid.strip():
            self.err(f"{path}.id", "empty id")
            return None
        if vid in seen:
            self.err(f"{path}.id", f"{show(vid)} is also the id of {seen[vid]}")
            return None
        seen[vid] = path
        return vid
