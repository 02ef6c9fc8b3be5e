"""Ended plans are kept for a while, not for ever (docs/service.md#plans): the newest ones in memory and
in the state, every running plan, every plan whose orphan GIs still hold slices, and the newest plan of
all (ids are never given twice); `GET /v1/status` counts the dropped ones as before."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from origamig.call.kinds import CallKind
from origamig.policies.base import make_policy
from origamig.runtime.plan_run import AbortCause, PlanRun, PlanStatus, StepStatus
from origamig.serve.live import Live
from origamig.serve.plan_desk import PlanDesk
from origamig.serve.plan_retention import retire_ended_plans, with_retired
from origamig.serve.plans import to_store
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


def bare_plan(n: int, status: PlanStatus, cause: AbortCause) -> PlanRun:
    """A plan of no steps that ended as `status` (or runs), for the counts alone."""
    return PlanRun(n, CallKind.ADMISSION, float(n), [], [], [], [], [], [], status=status, cause=cause)


def state_with_plans(path: Path, ends: list[tuple[PlanStatus, AbortCause]]) -> Store:
    store = Store.create(path, load_snapshot(SEED).document)
    dc = load_snapshot(SEED).datacenter()
    with store.transaction() as db:
        for n, (status, cause) in enumerate(ends, start=1):
            store.put_plan(db, n, to_store(bare_plan(n, status, cause), dc))
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
    assert again.runtime.plans.next_id == (max(kept) + 1 if kept else 1)  # no id is given twice
    store.close()


def made_plan(live: Live, now: float) -> PlanRun:
    """The plan of the optimizer's next call, made in this process (the seed's pending VM needs it)."""
    with live.writing, live.lock:
        (work,) = live.runtime.check(now)
        (plan,) = live.runtime.end_call(work, now).plans
        live.commit()
    return plan


def test_a_plan_that_ends_drops_the_oldest_ended_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import origamig.serve.plan_retention as retention

    monkeypatch.setattr(retention, "KEEP_ENDED_PLANS", 2)
    store = state_with_plans(tmp_path / "state.db", [ENDS[0], ENDS[1]])
    live = Live(store, make_policy("origamig", deterministic=True, work_limit=100000))
    plan = made_plan(live, 20.0)
    assert set(live.plans) == {1, 2, plan.id} and plan.running
    answer = PlanDesk(live).acknowledge(plan.id, plan.next_steps()[0], StepStatus.FAILED)
    assert answer["status"] == "failed"  # the answer is the plan that ended, read before any drop
    assert set(live.plans) == {2, plan.id} and {p["id"] for p in store.plans()} == {2, plan.id}
    assert with_retired(store, live.counts())["plans"]["done"] == 1
    store.close()


def test_a_plan_whose_orphan_gis_hold_slices_is_kept_until_they_are_confirmed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import origamig.serve.plan_retention as retention

    monkeypatch.setattr(retention, "KEEP_ENDED_PLANS", 0)
    store = Store.create(tmp_path / "state.db", load_snapshot(SEED).document)
    live = Live(store, make_policy("origamig", deterministic=True, work_limit=100000))
    desk = PlanDesk(live)
    plan = made_plan(live, 20.0)
    desk.acknowledge(plan.id, plan.next_steps()[0], StepStatus.DONE)  # a GI made on a host
    (orphan,) = desk.cancel(plan.id)["orphan_gis"]  # cancelled: the GI is left there, held
    later = bare_plan(plan.id + 1, PlanStatus.DONE, AbortCause.NONE)
    with live.writing, live.lock:
        live.plans[later.id] = later
        live.dirty.plans.add(later.id)
        live.commit()  # a newer plan ended: the older one stays, its orphan unconfirmed
    assert plan.id in live.plans and live.counts()["held"]["orphan_gis"] == 1
    desk.confirm_orphan(plan.id, orphan["step"])  # gone: its slices are free, and the plan may go
    assert plan.id not in live.plans and {p["id"] for p in store.plans()} == {later.id}
    assert live.counts()["held"]["orphan_gis"] == 0 and not live.dc.holds
    store.close()
