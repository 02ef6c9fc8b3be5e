"""The extender's verdicts, kept: per VM shape (cores, memory, GI choices) and PM, the arrival rule's
verdict with the version of the PM it was made on (`Live.touched` bumps it when the PM's VMs change).
A cluster changes a few PMs per request while kube-scheduler asks about all of them.

Bounded: at most `max_verdicts` verdicts in all, the least recently asked shapes dropped first. A
verdict is a few small tuples (about 200 bytes), and a shape at most the GIs of the largest PM
(larger requests are refused before any work), so the bound in bytes follows from the one in entries.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from typing import Any

MAX_VERDICTS = 100_000  # about 20 MB


class VerdictCache:
    """Verdicts per (shape, PM), with the PM's version; thread-safe."""

    def __init__(self, max_verdicts: int = MAX_VERDICTS) -> None:
        self.max_verdicts = max_verdicts
        self._shapes: OrderedDict[Hashable, dict[int, tuple[int, Any]]] = OrderedDict()
        self._count = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._count

    def shapes(self) -> int:
        return len(self._shapes)

    def get(self, shape: Hashable, pm: int, version: int) -> Any | None:
        """The verdict on `pm` for `shape` made at `version` (None: none, or made on an older one)."""
        with self._lock:
            per_pm = self._shapes.get(shape)
            if per_pm is None:
                return None
            self._shapes.move_to_end(shape)
            hit = per_pm.get(pm)
        return hit[1] if hit is not None and hit[0] == version else None

    def get_many(self, shape: Hashable, versions: Mapping[int, int]) -> dict[int, Any]:
        """`get` for each PM of `versions` (PM → its version) at once; PMs without a verdict left out."""
        with self._lock:
            per_pm = self._shapes.get(shape)
            if per_pm is None:
                return {}
            self._shapes.move_to_end(shape)
            out = {}
            for pm, version in versions.items():
                hit = per_pm.get(pm)
                if hit is not None and hit[0] == version:
                    out[pm] = hit[1]
            return out

    def put(self, shape: Hashable, pm: int, version: int, verdict: Any) -> None:
        with self._lock:
            per_pm = self._shapes.setdefault(shape, {})
            self._shapes.move_to_end(shape)
            self._count += pm not in per_pm
            per_pm[pm] = (version, verdict)
            while self._count > self.max_verdicts and len(self._shapes) > 1:
                _, dropped = self._shapes.popitem(last=False)
                self._count -= len(dropped)
            if self._count > self.max_verdicts:  # one shape alone over the bound: start it over
                per_pm.clear()
                per_pm[pm] = (version, verdict)
                self._count = 1
