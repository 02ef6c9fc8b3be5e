"""The state's watch while the service runs (every `WATCH_S`, in a thread of its own):

- `--state` must still name the file the server opened. A state file deleted or replaced meanwhile
  is not written to any more (`Store.transaction` refuses), what the server holds is saved beside it
  (`STATE.saved-PID`, a consistent copy: start on it to go on from there) and the server stops.
- While changes are refused (a full disk, an I/O error), it tries to store one again — marking the
  state running — so that the service is ready for writes as soon as there is room, without waiting
  for a client to try (a readiness probe that fails keeps clients away).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from pathlib import Path

from origamig.serve.state_file import RUNNING
from origamig.serve.store import Store, StoreError, StoreWriteError

WATCH_S = 1.0


def saved_copy(store: Store, pid: int) -> Path | None:
    """A consistent copy of what `store` holds beside its (lost) path, or None when none can be made."""
    target = store.path.with_name(f"{store.path.name}.saved-{pid}")
    try:
        store.backup(target)
    except StoreError:
        return None
    return target


class StateWatch:
    """Checks the state every `every_s` seconds; `on_lost(reason)` once when its file is gone."""

    def __init__(
        self, store: Store, on_lost: Callable[[str], None], pid: int, every_s: float = WATCH_S
    ) -> None:
        self.store = store
        self.on_lost = on_lost
        self.pid = pid
        self.every_s = every_s
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="origamig-state-watch", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        if self.thread.is_alive():
            self.thread.join(timeout=10)

    def _run(self) -> None:
        while not self.stopping.wait(self.every_s):
            if self.check():
                return

    def check(self) -> bool:
        """One look; True once the state's file is gone (the watch ends)."""
        store = self.store
        gone = store.moved()
        if gone is not None:
            saved = saved_copy(store, self.pid)  # under the store's lock: no change is under way
            where = (
                f"what it held is saved in {saved}: start on it (--state {saved}) to go on from there"
                if saved is not None
                else "what it held could not be saved"
            )
            self.on_lost(f"{gone}; {where}")
            return True
        if store.refusal is not None:
            with contextlib.suppress(StoreWriteError):
                store.mark(RUNNING, store.holder)
        return False
