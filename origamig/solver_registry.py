"""The solver backends by name: the one list the CLI, the policies and the benchmarks read.

Each backend lives in its own module under `origamig.bilp.backends` and is imported only when a
solve runs (`bilp.backends.base.get_backend`), so reading the names costs no import. Adding a solver:
one module (see `bilp/backends/base.py`) and one line here.
"""

from __future__ import annotations

BACKEND_MODULES: dict[str, str] = {
    "highs": "origamig.bilp.backends.highs",
    "cpsat": "origamig.bilp.backends.cpsat",
    "portfolio": "origamig.bilp.backends.portfolio",
}
# Backends decided by the wall clock: they cannot solve deterministically.
NOT_DETERMINISTIC: frozenset[str] = frozenset({"portfolio"})
DEFAULT_BACKEND = "highs"


def backend_names() -> tuple[str, ...]:
    """Every registered backend name, the default first."""
    return tuple(BACKEND_MODULES)
