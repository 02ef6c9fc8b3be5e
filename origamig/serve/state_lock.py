"""One server per state: an exclusive lock on the state's database file itself, held for the life of
the process.

The lock is the kernel's (`flock`) on the file's inode, not on a side file that could be deleted: a
symbolic link, a hard link or a bind mount names the same inode, so a second server through any of
them is refused. It ends with the process, even one killed with SIGKILL, so a stale lock never keeps
a restart out. The holder (process id and address) is written in the state by the server
(`Store.mark`), for the error a second server prints.

Readers (`--backup`, `--print-k8s-config`) take the lock shared: they learn whether a server runs
(it holds the lock exclusively), and while they read no server starts on the state — a server
starting then waits for them (at most `READERS_WAIT_S`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import time
from pathlib import Path
from urllib.parse import quote

from origamig.errors import UserError

READERS_WAIT_S = 30.0  # how long a starting server waits for a backup under way
_POLL_S = 0.05


def _try(fd: int, how: int) -> bool:
    try:
        fcntl.flock(fd, how | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _open(state: Path) -> int:
    """A descriptor of the state file itself (read-only: a lock needs no more)."""
    try:
        return os.open(state, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise UserError(f"--state: {state}: cannot open ({exc.strerror})") from None


def holder_of(state: Path) -> str:
    """Who holds the state, as the server wrote it in the state (`Store.mark`)."""
    uri = f"file:{quote(str(state))}?mode=ro"
    with contextlib.suppress(sqlite3.Error), contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
        row = db.execute("SELECT value FROM meta WHERE key = 'holder'").fetchone()
        if row is not None and isinstance(row[0], str):
            return row[0]
    return "another process"


class StateLock:
    """The exclusive lock on the existing state file `state`; `UserError` naming the holder when a
    server has it. `shared=True`: a reader's lock, never refused (`server_runs` says whether a
    server holds the state)."""

    def __init__(self, state: Path, shared: bool = False, readers_wait_s: float = READERS_WAIT_S) -> None:
        fd = _open(state)
        self.fd: int | None = fd
        self.server_runs = False
        if shared:
            self.server_runs = not _try(fd, fcntl.LOCK_SH)
            return
        deadline = time.monotonic() + readers_wait_s
        while not _try(fd, fcntl.LOCK_EX):
            # Held shared: readers only (a backup), who are done soon; held exclusively: a server.
            if not _try(fd, fcntl.LOCK_SH) or time.monotonic() > deadline:
                os.close(fd)
                self.fd = None
                raise UserError(
                    f"--state: {state} is in use by another origamig serve ({holder_of(state)}); "
                    "one server per state"
                )
            time.sleep(_POLL_S)

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the only descriptor ends the lock
            self.fd = None
