"""Strict input: JSON without NaN/Infinity nested at most `MAX_DEPTH` deep, numbers within bounds.

Every JSON file the package reads (snapshots, plans, checkpoints, results, requests) goes through
`parse_json_text`, so that a hostile or broken file is one `error:` line and exit 2 — never a
`RecursionError` traceback from the parser or from code that walks the document later. No file the
package reads nests deeper than about eight levels; `MAX_DEPTH` leaves ample room. Every quantity
read from a user (cores, GB, weights, slice counts, GPU indices, watts) is refused by
`quantity_problem` when it is not finite, negative or beyond `LARGEST`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from origamig.errors import UserError

MAX_DEPTH = 100
# The largest quantity an input may hold (cores, GB, weights, watts): far beyond any server or sensible
# weight, and far below the magnitudes at which the MIP solvers lose precision or refuse a model.
LARGEST = 1e6


def parse_json_text(text: str, source: str, error: type[UserError] = UserError) -> Any:
    """The parsed document; `error` naming `source` (line and column for syntax errors) otherwise."""

    def _reject(token: str) -> Any:
        raise ValueError(f"{token} is not valid JSON")

    try:
        doc = json.loads(text, parse_constant=_reject)
    except json.JSONDecodeError as exc:
        raise error(f"{source}: not valid JSON: {exc.msg} (line {exc.lineno} column {exc.colno})") from None
    except ValueError as exc:
        raise error(f"{source}: not valid JSON: {exc}") from None
    except RecursionError:
        raise error(f"{source}: JSON nested deeper than {MAX_DEPTH} levels") from None
    if nesting_depth(doc, MAX_DEPTH) > MAX_DEPTH:
        raise error(f"{source}: JSON nested deeper than {MAX_DEPTH} levels")
    return doc


def nesting_depth(doc: Any, stop: int | None = None) -> int:
    """How deeply lists and objects nest in `doc` (a scalar: 0); counting ends beyond `stop`.
    Walks level by level, holding only the containers of the next level."""
    containers = (dict, list)  # a tuple: isinstance against it is faster than against `dict | list`
    level = [doc] if isinstance(doc, containers) else []
    depth = 0
    while level:
        depth += 1
        if stop is not None and depth > stop:
            return depth
        below: list[Any] = []
        extend = below.extend
        for node in level:
            extend(
                [c for c in (node.values() if isinstance(node, dict) else node) if isinstance(c, containers)]
            )
        level = below
    return depth


def show(value: Any) -> str:
    """A short JSON rendering of a value for error messages."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def quantity_problem(value: float) -> str | None:
    """Why a number read as a quantity is refused (not finite, negative, beyond `LARGEST`), or None.

    Works on integers of any size (a 4000-digit integer is refused, not converted to a float).
    """
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value} is not a finite number"
    if value < 0:
        return f"{show(value)} is negative"
    if value > LARGEST:
        return f"{show(value)} is implausibly large (at most {LARGEST:,.0f})"
    return None


def check_quantities(values: Mapping[str, float | None], positive: Iterable[str] = ()) -> None:
    """`UserError` with one line per bad quantity of `values` (name → value; None is not given)."""
    must_be_positive = set(positive)
    problems = []
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, float) and value.is_integer():
            value = int(value)  # an option's -1.0 reads -1, as typed
        problem = quantity_problem(value)
        if problem is None and name in must_be_positive and value == 0:
            problem = "0 must be positive"
        if problem is not None:
            problems.append(f"{name}: {problem}")
    if problems:
        raise UserError(problems)
