"""How long the service keeps plans that have ended (docs/service.md#plans): the newest
`KEEP_ENDED_PLANS` ended plans, in memory and in the state; older ones are dropped from both when a
plan ends and at start. A running plan is never dropped, nor one whose orphan GIs still hold slices
(a client confirms them gone through the plan), nor the newest plan of all (plan ids continue from
it, so an id is never given twice). `GET /v1/plans/{id}` of a dropped plan is `404`, and so is a
late acknowledgement of one of its steps; `GET /v1/status` still counts it (the counts of dropped
plans are kept in the state).
"""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any

from origamig.runtime.plan_run import PlanRun
from origamig.serve.plans import end_counts
from origamig.serve.store import Store, StoreWriteError

KEEP_ENDED_PLANS = 1000
RETIRED = "retired_plans"  # meta: the counts of the plans dropped, by state and by abort cause


def retire_ended_plans(
    plans: MutableMapping[int, PlanRun],
    store: Store,
    keep: int | None = None,
    shown: MutableMapping[int, dict[str, Any]] | None = None,
) -> list[int]:
    """Drop the ended plans beyond the newest `keep` (`KEEP_ENDED_PLANS`) from `plans` (the plan
    book's, by id) and `shown` (ended plans kept as last shown: they touched a server removed since,
    `serve/live_load.py`) and from `store` (module doc); the ids dropped (none when the state cannot
    take the change: they are dropped at a later end). Call with the live state's lock held (or
    before it serves)."""
    keep = KEEP_ENDED_PLANS if keep is None else keep
    shown = shown if shown is not None else {}
    ended = sorted([i for i, p in plans.items() if not p.running] + list(shown))
    newest = max([*plans, *shown], default=None)
    drop = [
        i for i in ended[: max(0, len(ended) - keep)] if i != newest and (i in shown or not plans[i].orphans)
    ]
    if not drop:
        return []
    states, causes = end_counts(
        (plans[i] for i in drop if i in plans), (shown[i] for i in drop if i in shown)
    )
    total = retired_counts(store)
    for group, counts in (("plans", {str(k): n for k, n in states.items()}), ("aborted_causes", causes)):
        for key, n in counts.items():
            total[group][key] = total[group].get(key, 0) + n
    try:
        with store.transaction() as db:
            db.executemany("DELETE FROM plans WHERE id = ?", [(i,) for i in drop])
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (RETIRED, json.dumps(total)))
    except StoreWriteError:
        return []
    for i in drop:
        if i in plans:
            del plans[i]
        else:
            del shown[i]
    return drop


def retired_counts(store: Store) -> dict[str, dict[str, int]]:
    """The counts of the plans dropped so far: `{"plans": {state: n}, "aborted_causes": {cause: n}}`."""
    raw = store.meta(RETIRED)
    found: Any = json.loads(raw) if raw else {}
    return {"plans": dict(found.get("plans", {})), "aborted_causes": dict(found.get("aborted_causes", {}))}


def with_retired(store: Store, counts: dict[str, Any]) -> dict[str, Any]:
    """`Live.counts()` with the plans dropped from `store` counted in."""
    retired = retired_counts(store)
    out = dict(counts)
    for key in ("plans", "aborted_causes"):
        out[key] = {k: n + retired[key].get(str(k), 0) for k, n in counts[key].items()}
    return out
