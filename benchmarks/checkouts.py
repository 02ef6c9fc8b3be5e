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

    def document(self) -> dict[str, Any]:
        """The JSON document the command printed (`--json`)."""
        return json.loads(self.stdout)


def run_command(package_root: Path, args: list[str], timeout_s: float | None = None) -> Ran:
    """`origamig ARGS` of the checkout at `package_root`, timed as a whole process."""
    env = dict(os.environ, PYTHONPATH=str(package_root))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package's bytecode is compiled and cached
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _ENTRY, *args],
        env=env,
        cwd=package_root,  # `python -c` puts its working folder first on the path, before PYTHONPATH
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout_s,
    )
    return Ran(done.returncode, time.perf_counter() - t0, done.stdout, done.stderr)


def revision(root: Path) -> str:
    """The commit a checkout is at, `+` when its tree has changes ("" when it is no git checkout)."""
    git = ["git", "-C", str(root)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
    if head.returncode:
        return ""
    dirty = subprocess.run([*git, "status", "--porcelain", "--", "origamig"], capture_output=True, text=True)
    return head.stdout.strip() + ("+" if dirty.stdout.strip() else "")
