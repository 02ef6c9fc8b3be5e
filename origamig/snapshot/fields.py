"""Reading JSON fields with every problem collected by JSON path (the snapshot reader's toolkit).

`FieldReader` accumulates one line `<json path>: <problem with the value>` per problem and never
stops at the first: each accessor returns None (and records the problem) when a value is bad, so a
caller can go on reading the rest and leave the broken record out.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from origamig.files import LARGEST, quantity_problem, show

__all__ = ["LARGEST", "MISSING", "FieldReader", "id_problem", "kind_of", "quantity_problem", "show"]

MISSING: Any = object()  # a key that is absent (null is a value, and a wrong one)


def id_problem(value: str) -> str | None:
    """Why a string cannot be an id (empty, or holding a control, line-break, surrogate or format
    character)."""
    if not value.strip():
        return "empty id"
    bad = next((c for c in value if unicodedata.category(c) in _NOT_IN_IDS), None)
    if bad is None:
        return None
    code = f"U+{ord(bad):04X}"
    if unicodedata.category(bad) == "Cf":
        name = unicodedata.name(bad, "a format character")
        return (
            f"{show(value)} holds the character {code} ({name}), which prints as nothing or reorders "
            "the text: the id would look like another one"
        )
    return f"{show(value)} holds the character {code}, which cannot be printed"


# Unicode categories refused in ids: control characters (a terminal escape, a newline), line and
# paragraph separators, lone surrogates (which no UTF-8 output can carry), and format characters
# (bidi controls, zero-width joiners and spaces: `h10\u200d0-01` prints exactly like `h100-01`).
_NOT_IN_IDS = frozenset({"Cc", "Cs", "Zl", "Zp", "Cf"})


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

    def flag(self, raw: dict, key: str, path: str, default: bool) -> bool | None:
        """An optional true/false field (`default` when absent)."""
        if key not in raw:
            return default
        where = f"{path}.{key}" if path else key
        return self.typed(raw[key], where, bool, "true or false")

    def number(self, value: Any, path: str, positive: bool = False) -> float | None:
        if value is MISSING:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.err(path, f"expected a number, got {show(value)} ({kind_of(value)})")
            return None
        problem = quantity_problem(value)
        if problem is not None:
            self.err(path, problem)
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
        problem = quantity_problem(value)
        if problem is not None:
            self.err(path, problem)
            return None
        return value

    def ident(self, obj: dict, path: str, seen: dict[str, str]) -> str | None:
        vid = self.typed(self.field(obj, path, "id"), f"{path}.id", str, "a string")
        if vid is None:
            return None
        problem = id_problem(vid)
        if problem is not None:
            self.err(f"{path}.id", problem)
            return None
        if vid in seen:
            self.err(f"{path}.id", f"{show(vid)} is also the id of {seen[vid]}")
            return None
        seen[vid] = path
        return vid
