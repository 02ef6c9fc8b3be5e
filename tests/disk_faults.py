"""A full disk, without root: SQLite connections whose commits fail with SQLITE_FULL while a flag file
exists (`install` in a server process, before it starts; `FULL_FLAG` names the file).

A real full disk fails a commit the same way ("database or disk is full", SQLITE_FULL); a tiny file
system or a loop device would need root.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

FULL_FLAG = "ORIGAMIG_TEST_FULL_DISK"  # environment: the flag file's path


def disk_full() -> sqlite3.OperationalError:
    error = sqlite3.OperationalError("database or disk is full")
    error.sqlite_errorcode = sqlite3.SQLITE_FULL  # type: ignore[attr-defined]
    error.sqlite_errorname = "SQLITE_FULL"  # type: ignore[attr-defined]
    return error


class FillingDisk(sqlite3.Connection):
    """A connection whose `COMMIT` fails as on a full disk while `flag` exists."""

    flag: Path | None = None

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if self.flag is not None and self.flag.exists() and sql.strip().upper() == "COMMIT":
            raise disk_full()
        return super().execute(sql, *args)


def install(flag: Path | None = None) -> None:
    """Every SQLite connection made from now on fills up while `flag` (default: `$FULL_FLAG`) exists."""
    FillingDisk.flag = flag or Path(os.environ[FULL_FLAG])
    real = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        kwargs.setdefault("factory", FillingDisk)
        return real(*args, **kwargs)

    sqlite3.connect = connect  # type: ignore[assignment]
