"""One server per state: an exclusive lock on `<state>.lock`, held for the life of the process.

The lock is the kernel's (`flock`): it ends with the process, even one killed with SIGKILL, so a
stale lock never keeps a restart out. The file names its holder (process id and address) for the
error a second server prints; it is left in place when the server ends (removing it could let two
servers lock two different files of one name).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from origamig.errors import UserError


def lock_path(state: Path) -> Path:
    return state.with_name(state.name + ".lock")


class StateLock:
    """The exclusive lock on a state; `UserError` naming the holder when another process has it."""

    def __init__(self, state: Path, holder: str) -> None:
        self.path = lock_path(state)
        writable = True
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            try:  # a read-only file system: lock it all the same (the state is refused later, by name)
                fd, writable = os.open(self.path, os.O_RDONLY), False
            except OSError:
                raise UserError(
                    f"--state: {state}: cannot be written: its lock file cannot be made ({exc.strerror})"
                ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            other = os.pread(fd, 400, 0).decode("utf-8", "replace").strip() or "another process"
            os.close(fd)
            raise UserError(
                f"--state: {state} is in use by another origamig serve ({other}); one server per state"
            ) from None
        if writable:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{holder}\n".encode(), 0)
        self.fd: int | None = fd

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the only descriptor ends the lock
            self.fd = None
