"""Strict JSON in: no NaN/Infinity, nesting at most `MAX_DEPTH` deep; errors name the source.

Every JSON file the package reads (snapshots, plans, checkpoints, results, requests) goes through
`parse_json_text`, so that a hostile or broken file is one `error:` line and exit 2 — never a
`RecursionError` traceback from the parser or from code that walks the document later. No file the
package reads nests deeper than about eight levels; `MAX_DEPTH` leaves ample room.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from origamig.errors import UserError

MAX_DEPTH = 100


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
    """How deeply lists and objects nest in `doc` (a scalar: 0); counting ends beyond `stop`."""
    deepest = 0
    todo: list[tuple[Any, int]] = [(doc, 0)]
    while todo:
        node, depth = todo.pop()
        children: Iterable[Any]
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        depth += 1
        deepest = max(deepest, depth)
        if stop is not None and deepest > stop:
            return deepest
        todo.extend((child, depth) for child in children)
    return deepest
