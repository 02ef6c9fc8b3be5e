"""Faults in the solver's helper process (bilp/backends/helper_pool.py), and a way around it, for tests.

A solve sends its hint to the helper pickled; these arrays unpickle there as a fault instead: one
that never answers, one that ends the process. In the calling process they are ordinary arrays
(the start the answer falls back to). A test that stands in a solver of its own keeps the solve in
its process (`solve_in_this_process`).
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np
import pytest


class StallsInTheHelper(np.ndarray):
    """Unpickled in the helper, sleeps there two minutes: a solve that never answers."""

    def __reduce__(self):
        return (time.sleep, (120,))


class KillsTheHelper(np.ndarray):
    """Unpickled in the helper, ends it with exit status 3: a solver that crashes."""

    def __reduce__(self):
        return (os._exit, (3,))


def solve_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep every solve in the calling process, so that a patched `solve_in_process` (a stand-in
    solver) is the one that runs; the helper process would run the real one."""
    from origamig.bilp.backends import base, deadline

    def here(
        name: str, compiled: Any, hint: np.ndarray, limits: Any, started: float, meanwhile: Any = None
    ) -> base.SolveResult:
        early = meanwhile() if meanwhile is not None else None
        return early or base.errors_as_result(base.get_backend(name), compiled, hint, limits)

    monkeypatch.setattr(deadline, "solve_in_child", here)


class StallsInTheCpsatHelper(np.ndarray):
    """Unpickled in a CP-SAT helper, sleeps there two minutes; in any other helper it is the array
    itself (built from builtins only: the helper cannot import this test module)."""

    def __reduce__(self):
        stall = "__import__('time').sleep(120) if __import__('sys').argv[-1] == 'cpsat' else None"
        return (eval, (f"({stall}) or __import__('numpy').array({np.asarray(self).tolist()!r})",))
