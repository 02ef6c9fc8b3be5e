"""Hints that misbehave in the solver's helper process (bilp/backends/deadline.py), for the tests.

A solve sends its hint to the helper pickled; these arrays unpickle there as a fault instead: one
that never answers, one that ends the process. In the calling process they are ordinary arrays
(the start the answer falls back to).
"""

from __future__ import annotations

import os
import time

import numpy as np


class StallsInTheHelper(np.ndarray):
    """Unpickled in the helper, sleeps there two minutes: a solve that never answers."""

    def __reduce__(self):
        return (time.sleep, (120,))


class KillsTheHelper(np.ndarray):
    """Unpickled in the helper, ends it with exit status 3: a solver that crashes."""

    def __reduce__(self):
        return (os._exit, (3,))
