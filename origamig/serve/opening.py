"""Open the state a server runs on: made from `--from` when it does not exist yet, locked (one server
per state, `state_lock.py`), checked (`state_file.py`), marked running and read into the live cluster.

`--state` is resolved once, here: a symbolic link names its target, and every later step — the
lock, SQLite, the `-wal` beside it — works on that one file. Nothing is half-written: a new state is
built under a temporary name and moved into place whole, and removed again when the start fails
after it was made. A state the process cannot write (a read-only file, folder or file system) is
refused; one on a full disk (or that SQLite cannot extend for another reason) is served read-only:
reads and the extender answer, every change is `503`, `/readyz` says why, until a change can be
stored again (`state_watch.py`).
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from origamig.errors import UserError
from origamig.policies.base import make_policy
from origamig.serve.live import PLATFORM, Live
from origamig.serve.platform import Platform, apply_platform
from origamig.serve.state_file import RUNNING, wal_of
from origamig.serve.state_lock import StateLock
from origamig.serve.store import Store, StoreError, StoreWriteError
from origamig.snapshot.document import load_snapshot

POLICY = "origamig"  # the policy the service drives (its options come from `--option`)
DEFAULT_STEP_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class OpenState:
    """A state a server runs on: the live cluster, the lock it holds, and why it is read-only (or "")."""

    live: Live
    lock: StateLock
    read_only: str = ""

    def close(self) -> None:
        self.live.store.close()
        self.lock.release()


def open_state(
    state: Path,
    seed: Path | None,
    options: tuple[tuple[str, Any], ...] | dict[str, Any] = (),
    step_timeout_s: float | None = DEFAULT_STEP_TIMEOUT_S,
    intra_pm_moves: bool | None = None,
    holder: str = "",
    controller: str = PLATFORM,
    platform: Platform | None = None,
) -> OpenState:
    """The live cluster of `state` (resolved), or of a new state seeded from `seed` when `state` does
    not exist (an existing state is never seeded anew: `--from` is then not read), locked for this
    server (`holder` says who it is), its steps carried out by `controller`, under the rules of
    `platform` (None: the seed's). Everything is checked before a new state file is written."""
    policy = make_policy(POLICY, **dict(options))
    state = state.resolve()
    new = _create(state, seed)
    lock = StateLock(state)
    try:
        store = Store(state)
        if seed is not None and not new:
            print(f"origamig serve: {state} is already seeded; --from {seed} is not read", file=sys.stderr)
        try:
            read_only = _mark_running(store, holder)
            live = Live(store, policy, step_timeout_s, controller)
            apply_platform(live, platform)
            live.retire_ended_plans()  # a state of an earlier version may hold more
        except BaseException:
            store.close()
            raise
    except BaseException:
        if new:
            _remove_state(state)  # ours alone: the lock is held
        lock.release()
        raise
    if intra_pm_moves is not None:  # kept by Live: a state read back anew (a server removed) keeps it
        live.intra_pm_moves = live.dc.intra_pm_moves = intra_pm_moves
    return OpenState(live, lock, read_only)


def _create(state: Path, seed: Path | None) -> bool:
    """Make the state from `seed` when it does not exist; True when this call made it."""
    if state.exists():
        return False
    if seed is None:
        raise UserError(f"--from: {state} does not exist yet: give --from SNAPSHOT.json to seed it")
    if not seed.is_file():
        raise UserError(f"--from: {seed}: no such file")
    document = load_snapshot(seed).document
    try:
        Store.create(state, document).close()
    except StoreError:
        if state.exists():
            return False  # another server made it meanwhile: it is opened (or refused) as any state
        raise
    return True


def _mark_running(store: Store, holder: str) -> str:
    """Mark the state running; why it is served read-only ("" when it is not). A state that cannot be
    written at all (read-only) is refused: the service stores every change it reports."""
    try:
        store.mark(RUNNING, holder)
    except StoreWriteError:
        why = store.refusal or "unknown"
        if store.refused_read_only:
            raise StoreError(
                f"--state: {store.path}: cannot be written ({why}); the service stores every change"
            ) from None
        print(
            f"origamig serve: {store.path}: a change cannot be stored ({why}): serving reads and the "
            "extender only — every change answers 503 and /readyz says why — until one can be stored "
            "again (free space on its disk)",
            file=sys.stderr,
            flush=True,
        )
        return why
    return ""


def _remove_state(state: Path) -> None:
    """A state file this start created, with its SQLite side files."""
    for path in (state, wal_of(state), state.with_name(state.name + "-shm")):
        with contextlib.suppress(OSError):
            path.unlink()
