"""CPU time of this process and of its solver helper processes, for benchmarks of solves.

A solve runs in a long-lived helper process (origamig/bilp/backends/deadline.py), so this process's
own CPU time misses it. `cpu_seconds()` adds the helpers alive now (read from /proc) and those
already ended and reaped (the children's resource usage); the difference of two readings around a
solve is the solve's CPU time on every core. Off Linux it is this process's time alone.
"""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path

from origamig.bilp.backends import deadline

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _proc_cpu(pid: int) -> float:
    """User + system seconds of a live process (0 when it is gone or /proc is absent)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime, stime (fields 14 and 15 of stat)


def cpu_seconds() -> float:
    """CPU seconds so far of this process, its live solver helpers and its reaped children."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    helpers = sum(_proc_cpu(pid) for pid in deadline.helper_pids())
    return time.process_time() + children.ru_utime + children.ru_stime + helpers
