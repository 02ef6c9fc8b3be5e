"""CPU time of this process and of its solver helpers: what the solves between two readings cost on
every core."""

from __future__ import annotations

import os
import time
from pathlib import Path

try:
    import resource
except ImportError:  # not on Windows
    resource = None  # type: ignore[assignment]

from origamig.bilp.backends.helper_pool import helper_pids

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds() -> float:
    """CPU seconds so far of this process, of its idle solver helpers (read from /proc; a helper is
    idle between solves) and of its children already ended and reaped. The difference of two readings
    taken between solves is what the solves in between cost on every core. Off Linux: this process's
    own time and its reaped children's."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN) if resource is not None else None
    reaped = children.ru_utime + children.ru_stime if children is not None else 0.0
    return time.process_time() + reaped + sum(_proc_cpu_s(pid) for pid in helper_pids())


def _proc_cpu_s(pid: int) -> float:
    """User + system seconds of a live process (0 when it is gone or there is no /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS  # utime and stime, in clock ticks
