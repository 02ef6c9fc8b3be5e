"""Bounded memo tables for the hot paths that `functools.cache` does not fit.

The package's tables of GPU geometry and configurations are keyed by an object's identity (`id`, with
the object kept in the entry so that the id is not reused while cached) or by a tuple of plain
values: hashing a `GpuModel` costs microseconds on paths called millions of times in a simulation,
and some arguments (a `Weights` with a per-profile mapping) cannot be hashed at all. Every table is
bounded, so that a long-lived process (many snapshots, each with its own model objects; a long run
with ever new GPU states) never grows without end.
"""

from __future__ import annotations

from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


def remember(table: dict[K, V], key: K, value: V, limit: int) -> V:
    """Store `value` under `key` in `table` and return it, first forgetting the oldest entry when the
    table already holds `limit` entries (insertion order: the oldest is the first)."""
    if len(table) >= limit:
        table.pop(next(iter(table)))
    table[key] = value
    return value
