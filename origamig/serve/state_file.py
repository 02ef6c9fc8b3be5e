"""What a file must be for the service to take it as its state, and whether it is still that file.

A state is whole (every table, this format, a seed, no damage) and not a partial copy: the server
records in the main file, when it starts, that it runs, with the file's inode and its path
(`Store.mark`). A file marked running whose write-ahead log (`-wal`) is not beside it is then told
apart:

- the same inode, at the same path: the state itself, its log folded in by some other program —
  nothing is missing;
- another name of that inode (a hard link) while the log is beside the recorded name: the latest
  changes are in that log, so the state is started under its recorded name;
- another inode: a copy of a running state's main file alone (`cp`), which may miss the changes the
  log held: refused at start, with what to do; a backup of it is still made on request.

While it runs, the server checks that `--state` still names the file it opened (`moved`): a state
deleted, or replaced by another file, is not written to.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

STORE_FORMAT = 1
TABLES = ("meta", "vms", "plans", "rejected")
SERVER, RUNNING, STOPPED = "server", "running", "stopped"  # meta: whether a server runs on the state
INODE, PATH, HOLDER = "inode", "path", "holder"  # meta, with RUNNING: the file the server opened, and who

Meta = Callable[[str], "str | None"]


def wal_of(path: Path) -> Path:
    return path.with_name(path.name + "-wal")


def file_id(path: Path) -> tuple[int, int]:
    """The device and inode of the file `path` names now (`OSError` when it names none)."""
    found = os.stat(path)
    return found.st_dev, found.st_ino


def not_a_state(db: sqlite3.Connection, meta: Meta) -> str | None:
    """Why the open database is not a whole origamig state this version reads, or None."""
    names = {n for (n,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    missing = [t for t in TABLES if t not in names]
    if missing:
        return f"not an origamig state (no table {', '.join(missing)})"
    found = meta("format")
    if found != str(STORE_FORMAT):
        return f"state format {found} (this version reads state format {STORE_FORMAT})"
    if meta("seed") is None:
        return "not an origamig state (no seed)"
    damage = [row for (row,) in db.execute("PRAGMA quick_check(3)")]
    if damage != ["ok"]:
        return f"damaged ({'; '.join(map(str, damage))})"
    return None


def copy_problem(path: Path, meta: Meta, had_log: bool) -> tuple[str, str] | None:
    """Why the state at `path` (resolved) may miss changes its server made, and what to do; None when
    it misses none: a file marked running without its `-wal` that is not the file the server marked
    (module docstring)."""
    if meta(SERVER) != RUNNING or had_log:
        return None
    recorded, inode = meta(PATH), meta(INODE)
    here = os.stat(path).st_ino
    if recorded and recorded != str(path) and wal_of(Path(recorded)).exists():
        try:
            same = os.stat(recorded).st_ino == here
        except OSError:
            same = False
        if same:
            return (
                f"another name (a hard link) of {recorded}, whose -wal file holds the latest changes",
                f"start the service with --state {recorded}",
            )
    if inode is not None and inode == str(here):
        return None  # the state itself: its log was folded in
    return (
        "copied from a running server without its -wal file (it is another file than the one the "
        "server marked running): it may miss the latest changes",
        "copy the original's -wal file beside it, or back the original up with `origamig serve --state "
        f"ORIGINAL --backup COPY`; to start from this file as it is, `origamig serve --state {path} "
        "--backup NEW` and start on NEW",
    )


def moved(path: Path, opened: tuple[int, int]) -> str | None:
    """Why `path` no longer names the file the server opened (`opened`: its device and inode), or None."""
    try:
        now = file_id(path)
    except FileNotFoundError:
        return f"--state: {path} was deleted while the server ran"
    except OSError as exc:
        return f"--state: {path} cannot be checked ({exc.strerror})"
    if now != opened:
        return f"--state: {path} was replaced by another file while the server ran"
    return None
