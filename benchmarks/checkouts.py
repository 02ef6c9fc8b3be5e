"""Running `origamig` of another checkout in a process of its own, to compare versions side by side.

A checkout is a folder holding an `origamig` package (this repository, or `git worktree add
/tmp/old <commit>` of it). Its command runs as an installed package would: its own function from a
fresh interpreter, with that folder first on the path and the bytecode cache written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The console script's own function (`main` in checkouts from before it had one).
_ENTRY = (
    "import sys; from origamig.cli import app; sys.argv[0] = 'origamig'; getattr(app, 'script', app.main)()"
)


@dataclass(frozen=True)
class Ran:
    """One command of a checkout: its exit code, wall time, stdout and stderr."""

    code: int
    wall_s: float
    stdout: str
    stderr: str
    peak_mb: float = 0.0  # the process's peak resident memory

    def document(self) -> dict[str, Any]:
        """The JSON document the command printed (`--json`)."""
        return json.loads(self.stdout)


def run_command(package_root: Path, args: list[str], timeout_s: float | None = None) -> Ran:
    """`origamig ARGS` of the checkout at `package_root`, timed as a whole process, with its peak
    resident memory (its own, from the kernel's accounting of that one child)."""
    env = dict(os.environ, PYTHONPATH=str(package_root))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package's bytecode is compiled and cached
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-c", _ENTRY, *args],
            env=env,
            cwd=package_root,  # `python -c` puts its working folder first on the path, before PYTHONPATH
            stdout=out,
            stderr=err,
            text=True,
        )
        status, usage = _wait(proc, timeout_s)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        code = os.waitstatus_to_exitcode(status)
        return Ran(code, wall, out.read(), err.read(), usage.ru_maxrss / 1024)


def _wait(proc: subprocess.Popen, timeout_s: float | None) -> tuple[int, Any]:
    """Reap `proc` (killed past `timeout_s`: `subprocess.TimeoutExpired`): its status and rusage."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return status, usage
        if deadline is not None and time.monotonic() > deadline:
            proc.kill()
            os.wait4(proc.pid, 0)
            proc.returncode = -9
            raise subprocess.TimeoutExpired(proc.args, timeout_s or 0.0)
        time.sleep(0.02)


def revision(root: Path) -> str:
    """The commit a checkout is at, `+` when its tree has changes ("" when it is no git checkout)."""
    git = ["git", "-C", str(root)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
    if head.returncode:
        return ""
    dirty = subprocess.run([*git, "status", "--porcelain", "--", "origamig"], capture_output=True, text=True)
    return head.stdout.strip() + ("+" if dirty.stdout.strip() else "")
