"""`origamig serve --optimizer off` and a state with VMs waiting (docs/service.md): no admission call
will ever place them, so they are rejected at the start, each with that reason, instead of waiting
for ever; posted again, the arrival rule places one at once (201) or refuses it (422).
"""

from __future__ import annotations

from origamig.serve.live import Live

OFF_REASON = (
    "the service runs with --optimizer off, so no admission call will place it; post it again "
    "(POST /v1/vms): the arrival rule places it now (201) or refuses it (422)"
)


def reject_waiting(live: Live) -> list[str]:
    """Reject every pending VM of `live` with `OFF_REASON` (stored first); their ids, oldest first."""
    with live.writing, live.lock:
        waiting = list(live.dc.pending)
        if not waiting:
            return []
        with live.store.transaction() as db:
            for v in waiting:
                live.store.reject_vm(db, v, OFF_REASON)
        for v in waiting:
            live.dc.drop_pending(v)
            live.view.remove(v)
            live.rejected[v] = OFF_REASON
    return waiting
