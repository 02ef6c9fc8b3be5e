"""Ended plans are kept for a while, not for ever (docs/service.md#plans): the newest ones in memory and
in the state, every running plan and the newest plan of all (ids are never given twice), and
`GET /v1/status` counts the dropped ones as before."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from origamig.call.kinds import CallKind
from origamig.policies.base import make_policy
from origamig.serve.live import Live
from origamig.serve.plan_retention import retire_ended_plans, with_retired
from origamig.serve.plans import AbortCause, LivePlan, PlanStatus
from origamig.serve.store import Store
from origamig.snapshot.document import load_snapshot
from tests.profiles import examples
from tests.serve.test_serve_faults import SEED

ENDS = [
    (PlanStatus.DONE, AbortCause.NONE),
    (PlanStatus.FAILED, AbortCause.NONE),
    (PlanStatus.CANCELLED, AbortCause.NONE),
    (PlanStatus.ABORTED, AbortCause.TIMEOUT),
    (PlanStatus.ABORTED, AbortCause.STALE),
    (PlanStatus.RUNNING, AbortCause.NONE),
]


def state_with_plans(path: Path, ends: list[tuple[PlanStatus, AbortCause]]) -> Store:
    store = Store.create(path, load_snapshot(SEED).document)
    dc = load_snapshot(SEED).datacenter()
    with store.transaction() as db:
        for n, (status, cause) in enumerate(ends, start=1):
            plan = LivePlan(n, CallKind.ADMISSION, float(n), (), {}, status=status, cause=cause)
            store.put_plan(db, n, plan.to_store(dc))
    return store


@settings(
    max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ends=st.lists(st.sampled_from(ENDS), max_size=25), keep=st.integers(0, 8))
def test_the_newest_ended_plans_are_kept_and_the_counts_stay(
    tmp_path_factory: pytest.TempPathFactory, ends: list[tuple[PlanStatus, AbortCause]], keep: int
) -> None:
    store = state_with_plans(tmp_path_factory.mktemp("plans") / "state.db", ends)
    live = Live(store, make_policy("origamig", check_interval_s=1e9))
    before = live.counts()
    retire_ended_plans(live.plans, store, keep)
    kept = set(live.plans)
    ended = [n for n, (status, _) in enumerate(ends, start=1) if status != PlanStatus.RUNNING]
    running = {n for n, (status, _) in enumerate(ends, start=1) if status == PlanStatus.RUNNING}
    assert running <= kept and (not ends or len(ends) in kept)  # never running ones, nor the newest
    assert set(ended[len(ended) - keep :] if keep else []) <= kept  # the newest `keep` ended ones
    assert len(kept - running) <= max(keep, 1)
    assert {p["id"] for p in store.plans()} == kept  # the state as memory
    assert with_retired(store, live.counts()) == before  # the status counts every plan still
    again = Live(store, make_policy("origamig", check_interval_s=1e9))  # and after a restart
    assert set(again.plans) == kept and with_retired(store, again.counts()) == before
    store.close()


def test_a_plan_that_ends_drops_the_oldest_ended_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import origamig.serve.plan_retention as retention

    monkeypatch.setattr(retention, "KEEP_ENDED_PLANS", 2)
    store = state_with_plans(tmp_path / "state.db", [ENDS[0], ENDS[1], ENDS[5]])
    live = Live(store, make_policy("origamig", check_interval_s=1e9))
    assert set(live.plans) == {1, 2, 3}
    live.cancel(3)  # the running plan ends: three ended, two kept
    assert set(live.plans) == {2, 3} and {p["id"] for p in store.plans()} == {2, 3}
    assert with_retired(store, live.counts())["plans"]["done"] == 1
    store.close()
