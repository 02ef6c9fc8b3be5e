"""When OrigaMIG calls the solver (paper §5.1).

Admission: whenever the pending queue Q is non-empty. Consolidation for class h: when Γ_h ≥ θ
(Eq. 17; Eq. 18 for the PMs without GPUs), read in O(1) from the DataCenter's counters. A call for
h that changes nothing disables h until Γ_h grows above its value then, or a VM leaves a PM of
class h. The timer variant replaces the threshold by one call per class every `timer_s` seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from origamig.cluster.datacenter import DataCenter


@dataclass
class Triggers:
    """Consolidation trigger state per class (mutable; owned by one policy instance)."""

    theta: int = 1
    timer_s: float | None = None
    disabled: dict[str, int] = field(default_factory=dict)  # class → Γ_h when it was disabled
    next_due: dict[str, float] = field(default_factory=dict)  # timer variant: class → next call time

    def due(self, dc: DataCenter, now: float) -> list[str]:
        """Classes whose consolidation call is due now, in the data center's class order."""
        out = []
        for h in dc.classes:
            if self.timer_s is not None:
                if now >= self.next_due.setdefault(h, self.timer_s):
                    out.append(h)
                continue
            g = dc.gamma(h)
            if h in self.disabled:
                if g <= self.disabled[h]:
                    continue
                del self.disabled[h]
            if g >= self.theta:
                out.append(h)
        return out

    def called(self, h: str, now: float) -> None:
        """A call for h ran (the timer variant schedules the next one)."""
        if self.timer_s is not None:
            self.next_due[h] = now + self.timer_s

    def unchanged(self, dc: DataCenter, h: str) -> None:
        """A call for h changed nothing: silence h until Γ_h grows or a VM leaves a PM of h."""
        if self.timer_s is None:
            self.disabled[h] = dc.gamma(h)

    def departed(self, classes: frozenset[str] | None) -> None:
        """A VM left a PM of these classes (None: unknown — re-enable every class)."""
        if classes is None:
            self.disabled.clear()
            return
        for h in classes:
            self.disabled.pop(h, None)
