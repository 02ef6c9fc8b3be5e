"""The arrival rule's best PM without scoring every PM again: the PMs of one GPU class ordered by a fit's
key, kept up to date from the data center's journal (`DataCenter.journal`).

An index belongs to one state's journal, one class and one memo key (the fit, the GI shape and their
order, as `choose_pm` remembers them per PM). It is a heap of `(key, pm, version, placement)` over the
class's PMs where the fit places the GIs. Asked for the best candidate, it first scores again the PMs
the journal names since its last question (pushed anew with a new version; an entry whose version is
no longer its PM's is dropped when it comes to the top), then takes entries in `(key, pm)` order,
setting aside those locked or without the VM's CPU and RAM (they go back afterwards). The answer is
the `(key, pm)` minimum that a scan of every candidate finds; tests hold the two to each other.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable
from typing import Any

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, VmSpec
from origamig.memo import remember

Score = Callable[[int], "tuple[Any, Placement] | None"]  # PM j → the fit's (key, placement), or None
Best = tuple[Any, int, Placement]  # (key, PM, placement)

INDEX_MIN_PMS = 512  # a class with fewer PMs is scanned: a scan costs less than keeping an index
INDEXES_KEPT = 32  # indexes kept in all (about 100 bytes per PM each), the oldest made dropped first


class FitIndex:
    """One class's PMs where a fit places a GI shape, by the fit's key."""

    def __init__(self, dc: DataCenter, pms: list[int], score: Score) -> None:
        self.journal = dc.journal()
        self.read = len(self.journal)
        self.version = dict.fromkeys(pms, 0)
        self.heap: list[tuple[Any, int, int, Placement]] = []
        for j in pms:
            hit = score(j)
            if hit is not None:
                self.heap.append((hit[0], j, 0, hit[1]))
        heapq.heapify(self.heap)

    def best(self, dc: DataCenter, vm: VmSpec, locked: frozenset[int], score: Score) -> Best | None:
        """The smallest `(key, pm)` among the class's PMs that are not in `locked` (PM indices), have
        the VM's CPU and RAM, and where the fit places the GIs."""
        self._catch_up(score)
        heap, version = self.heap, self.version
        if len(locked) >= len(dc.pms):
            return None  # every PM held (a service replays arrivals so to a policy): no heap walk
        aside = []
        found: Best | None = None
        while heap:
            key, j, v, pl = heap[0]
            if version[j] != v:
                heapq.heappop(heap)
            elif j in locked or not dc.fits_resources(vm, j):
                aside.append(heapq.heappop(heap))
            else:
                found = (key, j, pl)
                break
        for entry in aside:
            heapq.heappush(heap, entry)
        return found

    def _catch_up(self, score: Score) -> None:
        changed = self.journal[self.read :]
        self.read = len(self.journal)
        version = self.version
        for j in dict.fromkeys(changed):
            v = version.get(j)
            if v is None:
                continue  # a PM of another class
            version[j] = v + 1
            hit = score(j)
            if hit is not None:
                heapq.heappush(self.heap, (hit[0], j, v + 1, hit[1]))
        if len(self.heap) > 2 * len(version) + 64:  # mostly dropped entries: keep the live ones
            self.heap = [e for e in self.heap if version[e[1]] == e[2]]
            heapq.heapify(self.heap)


# (id of a journal, class, memo key) → its index; the entry keeps the journal, so an id is never
# mistaken for a later list's.
_INDEXES: dict[tuple[int, str, Hashable], FitIndex] = {}


def indexed_best(
    dc: DataCenter, gpu_class: str, memo_key: Hashable, vm: VmSpec, locked: frozenset[int], score: Score
) -> Best | None:
    """`FitIndex.best` on the index of (this state, `gpu_class`, `memo_key`), made on first use."""
    journal = dc.journal()
    key = (id(journal), gpu_class, memo_key)
    index = _INDEXES.get(key)
    if index is None or index.journal is not journal:
        index = remember(_INDEXES, key, FitIndex(dc, dc.class_pms.get(gpu_class, []), score), INDEXES_KEPT)
    return index.best(dc, vm, locked, score)
