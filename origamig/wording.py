"""Small helpers for the sentences origamig prints."""

from __future__ import annotations


def count(n: int, noun: str) -> str:
    """`n noun`, the noun in the plural unless n is 1 (regular plurals: `call` → `calls`)."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
