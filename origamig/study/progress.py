"""What a person watching runs sees: a live bar of simulated hours (events/s, ETA) on a terminal, a
plain line per finished run otherwise (a log, a pipe, CI). Written to stderr, so that stdout carries
only the results (tables, `--json`).

Runs in this process report as they go (`live`); runs in worker processes or on a Dask cluster
report when they finish, and the bar's elapsed time and ETA move meanwhile."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TextIO

from origamig.sim.engine import Progress
from origamig.sim.workload import HOUR
from origamig.study.runner import FailedRun


@dataclass(frozen=True)
class Job:
    """One run as the display names it, and how many simulated seconds it spans."""

    label: str
    horizon_s: float


def failure_of(result: Any) -> str | None:
    """The error of a run that raised (the runner's `FailedRun`), else None."""
    return result.error if isinstance(result, FailedRun) else None


class RunsProgress:
    """The display of a batch of runs; `live(i)` is run i's in-process callback, `finished(i, result)`
    marks it done (or failed). `show=False`: nothing is shown; `bar=None`: a bar when the stream is a
    terminal, plain lines otherwise."""

    def __init__(
        self,
        title: str,
        jobs: Sequence[Job],
        show: bool = True,
        bar: bool | None = None,
        stream: TextIO | None = None,
    ) -> None:
        self.title, self.jobs, self.show = title, list(jobs), show
        self.stream = stream or sys.stderr
        self.use_bar = show and (self.stream.isatty() if bar is None else bar)
        self.total_h = sum(j.horizon_s for j in self.jobs) / HOUR
        self.done_h = 0.0
        self.live_h: dict[int, float] = {}
        self.events = 0
        self.live_events: dict[int, int] = {}
        self.finished_n = 0
        self.started = time.perf_counter()
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> RunsProgress:
        self.started = time.perf_counter()
        if self.use_bar:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                TextColumn("{task.completed:,.1f}/{task.total:,.0f} sim h"),
                TextColumn("{task.fields[rate]:,.0f} events/s"),
                TextColumn("{task.fields[runs]}"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=Console(file=self.stream),
                refresh_per_second=4,
            )
            self._bar.__enter__()
            self._task = self._bar.add_task(
                self.title, total=max(self.total_h, 1e-9), rate=0.0, runs=self._runs()
            )
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._bar is not None:
            self._bar.__exit__(kind, exc, tb)

    def live(self, i: int) -> Progress:
        """Run i's in-process callback: (simulated seconds, events, calls) so far."""

        def update(sim_s: float, events: int, calls: int) -> None:
            self.live_h[i] = sim_s / HOUR
            self.live_events[i] = events
            self._refresh()

        return update

    def finished(self, i: int, result: Any) -> None:
        """Run i ended with `result` (a run result, or a failed-run record)."""
        self.live_h.pop(i, None)
        self.live_events.pop(i, None)
        self.done_h += self.jobs[i].horizon_s / HOUR
        self.finished_n += 1
        error = failure_of(result)
        if error is None:
            self.events += int(getattr(result, "events", 0) or 0)
        self._refresh()
        if self.show and not self.use_bar:
            wall = float(getattr(result, "wall_s", 0.0) or 0.0)
            what = (
                f"FAILED: {error}" if error else f"{self.jobs[i].horizon_s / HOUR:g} sim h in {wall:,.1f} s"
            )
            self._line(f"[{self.finished_n}/{len(self.jobs)}] {self.jobs[i].label}: {what}; {self._eta()}")
        elif error and self._bar is not None:
            self._bar.console.print(f"{self.jobs[i].label}: FAILED: {error}")

    def _runs(self) -> str:
        return f"{self.finished_n}/{len(self.jobs)} runs"

    def _refresh(self) -> None:
        if self._bar is None:
            return
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        events = self.events + sum(self.live_events.values())
        self._bar.update(
            self._task,
            completed=self.done_h + sum(self.live_h.values()),
            rate=events / elapsed,
            runs=self._runs(),
        )

    def _eta(self) -> str:
        elapsed = time.perf_counter() - self.started
        if self.done_h >= self.total_h or self.done_h <= 0:
            return f"{elapsed:,.0f} s elapsed"
        left = elapsed * (self.total_h - self.done_h) / self.done_h
        return f"{elapsed:,.0f} s elapsed, about {left:,.0f} s left"

    def _line(self, text: str) -> None:
        print(text, file=self.stream, flush=True)
