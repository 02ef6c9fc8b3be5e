"""The service's state in SQLite (stdlib `sqlite3`, write-ahead log): every accepted change is
committed before the reply that reports it, so a restart resumes exactly where the last reply left.

Tables: `meta` (the seed snapshot document without its VMs, written once), `vms` (one row per VM
known to the service, in arrival order: the request entry and, when it runs, its placement in the
snapshot form `{"pm": <id>, "gis": [{"gpu", "start"}]}`), `plans` (each plan of the optimizer with
its steps and how far it got, as JSON), `rejected` (pending VMs an optimizer call gave up on, and
why: a client that was told 202 learns their fate from `GET /v1/vms/{id}`). The live state is
always the seed document with the rows of `vms` as its VMs, read back by the snapshot reader
(docs/formats.md#snapshot).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from origamig.errors import UserError

STORE_FORMAT = 1

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS vms (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL,"
    " entry TEXT NOT NULL, placement TEXT)",
    "CREATE TABLE IF NOT EXISTS plans (id INTEGER PRIMARY KEY, doc TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS rejected (id TEXT PRIMARY KEY, reason TEXT NOT NULL)",
)


class StoreError(UserError):
    """A state file that cannot be used (another format, unreadable, not seeded)."""


class Store:
    """One SQLite database file; methods are safe to call from several threads (one lock)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            for statement in _SCHEMA:
                self._db.execute(statement)
        except sqlite3.Error as exc:
            raise StoreError(f"--state: {self.path}: cannot open ({exc})") from None
        self._lock = threading.RLock()
        found = self._meta("format")
        if found is not None and found != str(STORE_FORMAT):
            raise StoreError(
                f"--state: {self.path}: state format {found} (this version reads {STORE_FORMAT})"
            )

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic, durable change: committed when the block ends, rolled back if it raises."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # --- the seed ------------------------------------------------------------------------------
    def seeded(self) -> bool:
        return self._meta("seed") is not None

    def seed(self, document: Mapping[str, Any]) -> None:
        """Store a snapshot document once: its VMs become rows, the rest the seed."""
        base = {k: v for k, v in document.items() if k != "vms"}
        with self.transaction() as db:
            db.execute("INSERT INTO meta VALUES ('format', ?)", (str(STORE_FORMAT),))
            db.execute("INSERT INTO meta VALUES ('seed', ?)", (json.dumps(base),))
            for entry in document.get("vms", []):
                vm = {k: v for k, v in entry.items() if k != "placement"}
                placement = entry.get("placement")
                db.execute(
                    "INSERT INTO vms (id, entry, placement) VALUES (?, ?, ?)",
                    (vm["id"], json.dumps(vm), None if placement is None else json.dumps(placement)),
                )

    def document(self) -> dict[str, Any]:
        """The stored state as a snapshot document: the seed with every VM row, in arrival order."""
        seed = self._meta("seed")
        if seed is None:
            raise StoreError(f"--state: {self.path}: no state yet (give --from SNAPSHOT.json to seed it)")
        doc = json.loads(seed)
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
    def put_plan(db: sqlite3.Connection, plan_id: int, doc: Mapping[str, Any]) -> None:
        db.execute("INSERT OR REPLACE INTO plans (id, doc) VALUES (?, ?)", (plan_id, json.dumps(doc)))

    def plans(self) -> list[dict[str, Any]]:
        """Every stored plan, oldest first."""
        with self._lock:
            rows = self._db.execute("SELECT doc FROM plans ORDER BY id").fetchall()
        return [json.loads(doc) for (doc,) in rows]

    def _meta(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]
