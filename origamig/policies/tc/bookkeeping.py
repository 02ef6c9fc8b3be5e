"""The bookkeeping under TC's compaction (`compaction.py`): an undo journal and a bit-set index.

Neither decides anything. The journal lets a failed vacate or trial be rolled back without copying
the state; the index lets TC's rule skip the PMs it would reject anyway. Both are exact: a rollback
restores every dict as it was, and the index holds, per GPU class, bit sets over the class's GPUs
(bit = row in data-center (pm, gpu) order): the GPUs that may receive a VM, and per profile name those
whose blocked slices leave room for the profile (`Geometry.default_table`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.mig import Geometry

Gpu = tuple[int, int]  # (pm, gpu index)
ClassLayout = dict[
    str, list[tuple[int, list[tuple[Gpu, Geometry]]]]
]  # class -> [(pm, its GPUs of the class)]
_MISSING = object()


class UndoJournal:
    """Writes to dicts, undone in reverse order back to a mark.

    A write may name a callback (`then`), called with the key after the write and after its undo,
    so that an index built on that dict stays in step."""

    def __init__(self) -> None:
        self._log: list[tuple[dict[Any, Any], Any, Any, Callable[[Any], None] | None]] = []

    def set(self, d: dict[Any, Any], key: Any, value: Any, then: Callable[[Any], None] | None = None) -> None:
        """`d[key] = value`, recorded; then `then(key)`."""
        self._log.append((d, key, d.get(key, _MISSING), then))
        d[key] = value
        if then is not None:
            then(key)

    def mark(self) -> int:
        return len(self._log)

    def rollback(self, mark: int) -> None:
        """Undo every write made since `mark`."""
        log = self._log
        while len(log) > mark:
            d, key, old, then = log.pop()
            if old is _MISSING:
                del d[key]
            else:
                d[key] = old
            if then is not None:
                then(key)


class GpuIndex:
    """Per class, bit sets over its GPUs: those that may receive, and per profile those with room."""

    def __init__(self, dc: DataCenter, class_layout: ClassLayout) -> None:
        self.dc = dc
        self.rows: dict[str, list[tuple[int, list[tuple[Gpu, Geometry]]]]] = {}  # row -> (pm, its gpus)
        self.row_of: dict[Gpu, tuple[str, int, tuple[tuple[str, int], ...]]] = {}
        self.recv_bits: dict[str, int] = {}
        self.fit_bits: dict[str, dict[str, int]] = {}
        for h, layout in class_layout.items():
            self.rows[h] = [(j, gpus) for j, gpus in layout for _ in gpus]
            self.recv_bits[h] = 0
            self.fit_bits[h] = {p.name: 0 for _, gpus in layout for _, geo in gpus for p in geo.profiles}
            row = 0
            for _, gpus in layout:
                for g, geo in gpus:
                    self.row_of[g] = (h, row, tuple((p.name, p.index) for p in geo.profiles))
                    row += 1

    def set_receiving(self, g: Gpu, receiving: bool) -> None:
        """GPU g may (or may no longer) receive a VM."""
        hit = self.row_of.get(g)
        if hit is None:
            return
        h, row, _ = hit
        if receiving:
            self.recv_bits[h] |= 1 << row
        else:
            self.recv_bits[h] &= ~(1 << row)

    def set_blocked(self, g: Gpu, blocked: int) -> None:
        """GPU g's unusable slices are now the mask `blocked`: recompute which profiles still fit."""
        hit = self.row_of.get(g)
        if hit is None:
            return
        h, row, profiles = hit
        bit = 1 << row
        table = self.dc.gpu_geometry(*g).default_table
        fit = self.fit_bits[h]
        for name, index in profiles:
            if table[index][blocked] >= 0:
                fit[name] |= bit
            else:
                fit[name] &= ~bit

    def candidate_pms(
        self, gpu_class: str, profile: str, exclude: Gpu
    ) -> Iterator[tuple[int, list[tuple[Gpu, Geometry]]]]:
        """The PMs, in data-center order, with a GPU of `gpu_class` other than `exclude` that may
        receive and has room for `profile`; each with all its GPUs of the class."""
        cand = self.fit_bits[gpu_class].get(profile, 0) & self.recv_bits[gpu_class]
        hit_ex = self.row_of.get(exclude)
        if hit_ex is not None and hit_ex[0] == gpu_class:
            cand &= ~(1 << hit_ex[1])
        rows = self.rows[gpu_class]
        last = -1
        while cand:
            low = cand & -cand
            cand ^= low
            j, gpus = rows[low.bit_length() - 1]
            if j == last:  # another GPU of a PM already given
                continue
            last = j
            yield j, gpus
