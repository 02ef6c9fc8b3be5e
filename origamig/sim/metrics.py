"""The metrics of docs/simulator.md#metrics over the measured window [warm-up, warm-up + measure].

State between two events is constant, so every time average is integrated exactly: before each
event at time t the recorder adds level × (overlap of [last, t] with the window). Only PM
switch-ons are sampled, once a minute (paper §6.2): a sample at minute s sees the state after
every event at times ≤ s (the `SAMPLE` kind runs last, see `events.py`), and counts the PMs that
are active at s but were not at the previous sample.

Metric names and meanings (shares are fractions 0–1, `None` when undefined):
- `acceptance`: admitted / requested memory slices of the requests arriving in the window (by request
  count when no request asks for a GI); a request still pending at the end counts as not admitted.
- `active_pms`, `active_gpus`: time averages of PMs hosting a VM and GPUs holding a GI.
- `packing_density`: ∫ occupied memory slices dt / ∫ memory slices of the active GPUs dt.
- `energy_mwh`: energy of the active PMs and their GPUs over the window.
- `energy_kwh_per_gpu_hour`: kWh per admitted GPU-hour (a GI counts as its share of compute slices).
- `switch_ons_per_hour`, `migrations_per_hour`, `migrated_gb_per_hour`, `calls_per_hour`: per hour
  of the window (migrations and GB when their plan is applied, calls when they start).
- `mean_wait_s`: mean time in Q of the admitted requests arriving in the window.
- `median_call_s`: median simulated duration of the calls started in the window.
- `plan_duration_s_p50`, `plan_duration_s_p95`: median and 95th percentile of the time from a plan's
  adoption to its last move's end, over the plans adopted in the window (docs/plans.md#in-time).
- `link_busy_share`: the share of the window the PMs' migration links carry a move, averaged over
  the PMs (a move between PMs keeps both links busy).
- `plan_wait_s`: mean time in Q of the requests arriving in the window that a plan admitted (their
  start step's end minus their arrival).
Migrations and GB count when a move's `migrate` step is carried out, a VM admitted by a plan when
its `start` step is.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable

from origamig.cluster.datacenter import DataCenter
from origamig.sim.energy import PowerModel

METRIC_NAMES: tuple[str, ...] = (
    "acceptance",
    "active_pms",
    "active_gpus",
    "packing_density",
    "energy_mwh",
    "energy_kwh_per_gpu_hour",
    "switch_ons_per_hour",
    "migrations_per_hour",
    "migrated_gb_per_hour",
    "mean_wait_s",
    "calls_per_hour",
    "median_call_s",
    "plan_duration_s_p50",
    "plan_duration_s_p95",
    "link_busy_share",
    "plan_wait_s",
)
SAMPLE_PERIOD_S = 60.0


class Recorder:
    """Integrates the state of one run; call `advance(t)` before, `touch(pms)` after each mutation."""

    def __init__(self, dc: DataCenter, power: PowerModel, warmup_s: float, measure_s: float) -> None:
        self.dc, self.power = dc, power
        self.w0, self.w1 = warmup_s, warmup_s + measure_s
        n = len(dc.pms)
        self.pm_w = [0.0] * n
        self.pm_share = [0.0] * n
        self.sampled_active = [False] * n
        self.dirty: set[int] = set()
        self.next_sample = SAMPLE_PERIOD_S
        self.last = 0.0
        self.level_pms = self.level_gpus = self.level_cap = self.level_used = 0
        self.level_w = self.level_share = 0.0
        self.pm_s = self.gpu_s = self.cap_s = self.used_s = self.energy_j = self.share_s = 0.0
        self.switch_ons = 0
        self.requested = self.admitted = 0  # memory slices of requests arriving in the window
        self.requested_n = self.admitted_n = 0
        self.waits: list[float] = []
        self.call_times: list[float] = []
        self.migrations = 0
        self.migrated_gb = 0.0
        self.plan_waits: list[float] = []
        self.plan_durations: list[float] = []
        self.link_s = 0.0  # link-seconds a move kept busy, in the window
        self.touch(range(n))

    # --- time ----------------------------------------------------------------------------------
    def advance(self, t: float) -> None:
        """Integrate the current levels up to `t` and take the samples due before `t`."""
        last = self.last
        if t > last:
            lo = last if last > self.w0 else self.w0
            hi = t if t < self.w1 else self.w1
            if hi > lo:
                dt = hi - lo
                self.pm_s += self.level_pms * dt
                self.gpu_s += self.level_gpus * dt
                self.cap_s += self.level_cap * dt
                self.used_s += self.level_used * dt
                self.energy_j += self.level_w * dt
                self.share_s += self.level_share * dt
            self.last = t
        if self.next_sample < t:
            self._sample(t)

    def _sample(self, t: float) -> None:
        """Samples at every minute s < t see one state (nothing changed since the last event)."""
        s = self.next_sample
        if self.dirty:
            dc, seen = self.dc, self.sampled_active
            counts = self.w0 < s <= self.w1
            for j in self.dirty:
                now = dc.is_active(j)
                if now and not seen[j] and counts:
                    self.switch_ons += 1
                seen[j] = now
            self.dirty.clear()
        k = math.ceil(t / SAMPLE_PERIOD_S)
        if k * SAMPLE_PERIOD_S < t:
            k += 1
        self.next_sample = max(k * SAMPLE_PERIOD_S, s + SAMPLE_PERIOD_S)

    # --- state changes -------------------------------------------------------------------------
    def touch(self, pms: Iterable[int]) -> None:
        """PMs whose state just changed: refresh their power and the data-center levels."""
        dc, power = self.dc, self.power
        pm_w, pm_share, dirty = self.pm_w, self.pm_share, self.dirty
        for j in pms:
            w, share = power.pm_state(dc, j)
            self.level_w += w - pm_w[j]
            pm_w[j] = w
            self.level_share += share - pm_share[j]
            pm_share[j] = share
            dirty.add(j)
        self.level_pms = dc.active_pms
        self.level_gpus = sum(dc.active_gpus.values())
        self.level_cap = sum(n * dc.class_slices[h] for h, n in dc.active_gpus.items())
        self.level_used = sum(dc.placed_slices.values())

    def in_window(self, t: float) -> bool:
        return self.w0 <= t < self.w1

    def requested_vm(self, arrival_s: float, slices: int) -> None:
        if self.in_window(arrival_s):
            self.requested += slices
            self.requested_n += 1

    def admitted_vm(self, arrival_s: float, slices: int, wait_s: float, by_plan: bool = False) -> None:
        if self.in_window(arrival_s):
            self.admitted += slices
            self.admitted_n += 1
            self.waits.append(wait_s)
            if by_plan:
                self.plan_waits.append(wait_s)

    def links_busy(self, start_s: float, end_s: float, links: int) -> None:
        """`links` migration links carried one move from `start_s` to `end_s`."""
        lo, hi = max(start_s, self.w0), min(end_s, self.w1)
        if hi > lo:
            self.link_s += links * (hi - lo)

    def plan_ended(self, created_s: float, duration_s: float) -> None:
        if self.in_window(created_s):
            self.plan_durations.append(duration_s)

    def call(self, start_s: float, duration_s: float) -> None:
        if self.in_window(start_s):
            self.call_times.append(duration_s)

    def migrated(self, t: float, moves: int, gb: float) -> None:
        if self.in_window(t):
            self.migrations += moves
            self.migrated_gb += gb

    # --- results -------------------------------------------------------------------------------
    def finish(self) -> dict[str, float | None]:
        """Integrate to the end of the window and return the metrics by their names (`METRIC_NAMES`)."""
        self.advance(self.w1)
        if self.next_sample <= self.w1:
            self._sample(self.w1 + SAMPLE_PERIOD_S / 2)
        span = self.w1 - self.w0
        hours = span / 3600.0
        acceptance: float | None
        if self.requested:
            acceptance = self.admitted / self.requested
        else:
            acceptance = self.admitted_n / self.requested_n if self.requested_n else None
        gpu_hours = self.share_s / 3600.0
        kwh = self.energy_j / 3.6e6
        return {
            "acceptance": acceptance,
            "active_pms": self.pm_s / span,
            "active_gpus": self.gpu_s / span,
            "packing_density": self.used_s / self.cap_s if self.cap_s else None,
            "energy_mwh": kwh / 1000.0,
            "energy_kwh_per_gpu_hour": kwh / gpu_hours if gpu_hours else None,
            "switch_ons_per_hour": self.switch_ons / hours,
            "migrations_per_hour": self.migrations / hours,
            "migrated_gb_per_hour": self.migrated_gb / hours,
            "mean_wait_s": statistics.fmean(self.waits) if self.waits else None,
            "calls_per_hour": len(self.call_times) / hours,
            "median_call_s": statistics.median(self.call_times) if self.call_times else None,
            "plan_duration_s_p50": percentile(self.plan_durations, 50),
            "plan_duration_s_p95": percentile(self.plan_durations, 95),
            "link_busy_share": self.link_s / (span * len(self.dc.pms)) if self.dc.pms else None,
            "plan_wait_s": statistics.fmean(self.plan_waits) if self.plan_waits else None,
        }


def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile of `values`, interpolated between the nearest ranks (None when empty)."""
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)
