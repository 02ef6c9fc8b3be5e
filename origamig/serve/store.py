"""The service's state in SQLite (stdlib `sqlite3`, write-ahead log): every accepted change is
committed before the reply that reports it, so a restart resumes exactly where the last reply left.

Tables: `meta` (the seed snapshot document without its VMs — its PMs change as servers are added,
cordoned and removed — and the GIs found on hosts), `vms` (one row per VM known to the service, in
arrival order: the request entry and, when it runs, its placement in the snapshot form `{"pm": <id>,
"gis": [{"gpu", "start"}]}`), `plans` (each plan of the optimizer with
its steps and how far it got, as JSON), `rejected` (pending VMs an optimizer call gave up on, and
why: a client that was told 202 learns their fate from `GET /v1/vms/{id}`). The live state is
always the seed document with the rows of `vms` as its VMs, read back by the snapshot reader
(docs/formats.md#snapshot).

A new state is built under a temporary name and moved into place whole; a file that is not a whole
origamig state (empty, not SQLite, a table missing, another format) is refused, never seeded anew.
A change the file cannot take (disk full, read-only) is refused as `StoreWriteError` with nothing
changed. `Store.backup` copies a state consistently while a server writes it; `Store.reading`
reads one without changing it (`--backup`, `--print-k8s-config`). What makes a file a state, and a
state the file its server opened, is `state_file.py`.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from origamig.errors import UserError
from origamig.serve.state_file import (
    HOLDER,
    INODE,
    PATH,
    RUNNING,
    SERVER,
    STOPPED,
    STORE_FORMAT,
    copy_problem,
    file_id,
    moved,
    not_a_state,
    wal_of,
)
from origamig.serve.state_lock import StateLock

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS vms (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL,"
    " entry TEXT NOT NULL, placement TEXT)",
    "CREATE TABLE IF NOT EXISTS plans (id INTEGER PRIMARY KEY, doc TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS rejected (id TEXT PRIMARY KEY, reason TEXT NOT NULL)",
)


class StoreError(UserError):
    """A state file that cannot be used (not an origamig state, another format, not writable)."""


class StoreWriteError(UserError):
    """A change the state file could not take (disk full, read-only, I/O error): nothing changed,
    the client may retry (HTTP 503)."""


class StateMoved(StoreError):
    """The state file was deleted or replaced while the server ran: the server stops (exit 1)."""

    exit_code = 1


def _connect(path: Path, mode: str = "rw") -> sqlite3.Connection:
    """An open connection to the existing file `path` (never creates one); `mode` "ro" reads only,
    "immutable" reads a file nothing writes (no side file is made)."""
    query = "mode=ro&immutable=1" if mode == "immutable" else f"mode={mode}"
    uri = f"file:{quote(str(path))}?{query}"
    return sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)


class Store:
    """One SQLite database file holding a whole origamig state; methods are safe to call from several
    threads (one lock). `Store(path)` opens an existing state for a server (which holds its lock,
    `state_lock.py`) and refuses any file that is not one (`StoreError`, one line naming the file): a
    state is never re-seeded. `Store.create` makes a new one; `Store.reading` opens one to read it
    without changing it or its `-wal`, whether a server runs on it, stopped or crashed."""

    def __init__(self, path: Path | str, mode: str = "rw") -> None:
        self.path = Path(path).resolve()  # a symbolic link's target: where SQLite puts the -wal
        where = f"--state: {self.path}"
        if not self.path.exists():
            raise StoreError(f"{where}: no such file")
        if not self.path.is_file():
            raise StoreError(f"{where}: not a file")
        if self.path.stat().st_size == 0:
            raise StoreError(
                f"{where}: an empty file is not an origamig state (a state is never seeded anew: "
                "move it away to start from --from)"
            )
        writable = mode == "rw"
        if writable and not (os.access(self.path, os.W_OK) and os.access(self.path.parent, os.W_OK)):
            raise StoreError(
                f"{where}: cannot be written (a read-only file or folder); the service stores every change"
            )
        self._lock = threading.RLock()
        self.opened = file_id(self.path)  # the file this store writes: `--state` must keep naming it
        self.refusal: str | None = None  # why the last change was refused, until one is stored again
        self.refused_read_only = False  # ... because the file or its file system is read-only
        self.holder = ""  # who runs on it (`mark`)
        self.copy_problem: tuple[str, str] | None = None  # why it may miss changes, what to do
        had_log = wal_of(self.path).exists()  # SQLite makes one when it opens
        try:
            self._db = _connect(self.path, mode)
        except sqlite3.Error as exc:
            raise StoreError(f"{where}: cannot open ({exc})") from None
        try:
            problem = not_a_state(self._db, self._meta)
            self.copy_problem = copy_problem(self.path, self._meta, had_log) if problem is None else None
        except sqlite3.OperationalError as exc:
            problem = f"cannot open ({exc})"
        except sqlite3.Error as exc:
            problem = f"not an origamig state ({exc})"
        if problem is None and writable and self.copy_problem is not None:
            problem = "; ".join(self.copy_problem)
        if problem is None and writable:
            try:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=FULL")
            except sqlite3.Error as exc:
                problem = f"cannot open ({exc})"
        if problem is not None:
            self._db.close()
            raise StoreError(f"{where}: {problem}")

    @classmethod
    @contextmanager
    def reading(cls, path: Path | str) -> Iterator[Store]:
        """The state at `path`, read only, for `--backup` and `--print-k8s-config`: neither the file
        nor its `-wal` changes (SQLite folds the log into the file when its last writer closes, so a
        reader never writes: a stopped state is read as a file nothing writes, a running or crashed
        one through its log). A server does not start on it meanwhile (`StateLock`, shared)."""
        target = Path(path).resolve()
        if not target.is_file():
            raise StoreError(f"--state: {target}: no such file")
        lock = StateLock(target, shared=True)
        try:
            live_log = lock.server_runs or wal_of(target).exists()
            store = cls(target, mode="ro" if live_log else "immutable")
            try:
                yield store
            finally:
                store.close()
        finally:
            lock.release()

    def mark(self, state: str, holder: str = "") -> None:
        """Record in the main file (not only in the write-ahead log) whether a server runs on this
        state (`RUNNING`, with the file's inode and path, and `holder`: who runs it) or stopped
        cleanly (`STOPPED`): a copy of the main file alone, taken while a server runs, is then told
        from a state (`state_file.copy_problem`)."""
        if state == RUNNING:
            self.holder = holder
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (SERVER, state))
            if state == RUNNING:
                for key, value in ((INODE, self.opened[1]), (PATH, self.path), (HOLDER, holder)):
                    db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, str(value)))
        with self._lock, contextlib.suppress(sqlite3.Error):
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def moved(self) -> str | None:
        """Why `--state` no longer names the file this store opened, or None (`state_file.moved`)."""
        return moved(self.path, self.opened)

    @classmethod
    def create(cls, path: Path | str, document: Mapping[str, Any]) -> Store:
        """A new state seeded with snapshot `document`, moved into place whole (`_write_whole`), so
        `path` is never a half-made state; `StoreError` when `path` exists or cannot be written."""

        def seed(db: sqlite3.Connection) -> None:
            db.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA:
                db.execute(statement)
            _write_seed(db, document)
            db.execute("COMMIT")

        _write_whole(Path(path), "--state", seed)
        return cls(path)

    def backup(self, target: Path | str) -> None:
        """A consistent copy of the state (SQLite's online backup: safe while a server writes it) in
        the new file `target`, moved into place whole (`_write_whole`)."""

        def copy(db: sqlite3.Connection) -> None:
            with self._lock:
                self._db.backup(db)
            db.execute("PRAGMA journal_mode=DELETE")
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (SERVER, STOPPED))

        _write_whole(Path(target), "--backup", copy)

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic, durable change: committed when the block ends, rolled back if it raises. A
        change the file cannot take — or one to a state file that was deleted or replaced meanwhile —
        is `StoreWriteError` (nothing changed); `refusal` says why until a change is stored again."""
        with self._lock:
            gone = self.moved()
            if gone is not None:
                raise self._refused(gone)
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise self._refused(_why(exc), exc) from None
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException as exc:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise self._refused(_why(exc), exc) from None
                raise
            self.refusal = None

    def _refused(self, why: str, exc: sqlite3.Error | None = None) -> StoreWriteError:
        self.refusal = why
        code = getattr(exc, "sqlite_errorcode", 0) or 0
        self.refused_read_only = code & 0xFF == sqlite3.SQLITE_READONLY
        return StoreWriteError(f"state: the change cannot be stored ({why})")

    # --- the state ----------------------------------------------------------------------------
    def document(self) -> dict[str, Any]:
        """The stored state as a snapshot document: the seed with every VM row, in arrival order."""
        doc = json.loads(self._meta("seed") or "{}")
        with self._lock:
            rows = self._db.execute("SELECT entry, placement FROM vms ORDER BY seq").fetchall()
        vms = []
        for entry, placement in rows:
            vm = json.loads(entry)
            if placement is not None:
                vm["placement"] = json.loads(placement)
            vms.append(vm)
        doc["vms"] = vms
        return doc

    # --- changes (each inside `transaction()`) ---------------------------------------------------
    @staticmethod
    def add_vm(db: sqlite3.Connection, entry: Mapping[str, Any], placement: Mapping[str, Any] | None) -> None:
        db.execute("DELETE FROM rejected WHERE id = ?", (entry["id"],))
        db.execute(
            "INSERT INTO vms (id, entry, placement) VALUES (?, ?, ?)",
            (entry["id"], json.dumps(entry), None if placement is None else json.dumps(placement)),
        )

    @staticmethod
    def remove_vm(db: sqlite3.Connection, vm_id: str) -> None:
        db.execute("DELETE FROM vms WHERE id = ?", (vm_id,))

    @staticmethod
    def reject_vm(db: sqlite3.Connection, vm_id: str, reason: str) -> None:
        db.execute("DELETE FROM vms WHERE id = ?", (vm_id,))
        db.execute("INSERT OR REPLACE INTO rejected (id, reason) VALUES (?, ?)", (vm_id, reason))

    def rejected(self) -> dict[str, str]:
        with self._lock:
            return dict(self._db.execute("SELECT id, reason FROM rejected").fetchall())

    @staticmethod
    def set_placement(db: sqlite3.Connection, vm_id: str, placement: Mapping[str, Any] | None) -> None:
        db.execute(
            "UPDATE vms SET placement = ? WHERE id = ?",
            (None if placement is None else json.dumps(placement), vm_id),
        )

    @staticmethod
    def put_meta(db: sqlite3.Connection, key: str, value: Any) -> None:
        """Set `meta` entry `key` to JSON `value`: the seed (`seed`, the fleet as it changes) or the
        GIs found on hosts (`found_gis`)."""
        db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, json.dumps(value)))

    def meta_value(self, key: str) -> Any:
        """The JSON value of `meta` entry `key` (None when it has none)."""
        raw = self.meta(key)
        return None if raw is None else json.loads(raw)

    @staticmethod
    def put_plan(db: sqlite3.Connection, plan_id: int, doc: Mapping[str, Any]) -> None:
        db.execute("INSERT OR REPLACE INTO plans (id, doc) VALUES (?, ?)", (plan_id, json.dumps(doc)))

    def plans(self) -> list[dict[str, Any]]:
        """Every stored plan, oldest first."""
        with self._lock:
            rows = self._db.execute("SELECT doc FROM plans ORDER BY id").fetchall()
        return [json.loads(doc) for (doc,) in rows]

    def meta(self, key: str) -> str | None:
        """A value of the state's `meta` table (None when it has none)."""
        return self._meta(key)

    def _meta(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]


def _write_seed(db: sqlite3.Connection, document: Mapping[str, Any]) -> None:
    """A snapshot document as a state: its VMs become rows, the rest the seed."""
    base = {k: v for k, v in document.items() if k != "vms"}
    db.execute("INSERT INTO meta VALUES ('format', ?)", (str(STORE_FORMAT),))
    db.execute("INSERT INTO meta VALUES ('seed', ?)", (json.dumps(base),))
    for entry in document.get("vms", []):
        vm = {k: v for k, v in entry.items() if k != "placement"}
        placement = entry.get("placement")
        db.execute(
            "INSERT INTO vms (id, entry, placement) VALUES (?, ?, ?)",
            (vm["id"], json.dumps(vm), None if placement is None else json.dumps(placement)),
        )


def _write_whole(path: Path, option: str, fill: Callable[[sqlite3.Connection], None]) -> None:
    """Make the new database `path` with `fill`, under a temporary name beside it, then give it its
    name (never over an existing file) and make the name durable; `StoreError` naming `option`."""
    tmp = path.with_name(f".{path.name}.new-{os.getpid()}")
    try:
        if path.exists():
            raise FileExistsError(path)
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()  # left by a crashed start of a process with this id
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT, 0o644))  # an OSError here says why it cannot
        with contextlib.closing(sqlite3.connect(tmp, isolation_level=None)) as db:
            fill(db)
        os.link(tmp, path)  # fails if `path` appeared meanwhile: nothing is overwritten
        _sync_folder(path.parent)
    except FileExistsError:
        raise StoreError(f"{option}: {path}: already exists") from None
    except (OSError, sqlite3.Error) as exc:
        raise StoreError(f"{option}: {path}: cannot write ({_why(exc)})") from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def _sync_folder(folder: Path) -> None:
    """Make a new name in `folder` durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _why(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc)
