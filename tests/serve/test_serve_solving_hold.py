"""While a call solves in the service's worker process, the PMs of its neighborhood are held: an arrival
meanwhile keeps off them, as the simulator holds a call's PMs for its duration (docs/service.md#plans)."""

from __future__ import annotations

import pickle
import queue
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path

from origamig.policies.base import Placed, make_policy
from origamig.serve import optimizer
from origamig.serve.live import Live
from origamig.serve.store import Store
from origamig.snapshot.document import load_snapshot
from tests.serve_helpers import EXAMPLES

SEED = EXAMPLES / "fragmented-a100.json"  # its pending 3g.20gb VM makes an admission call on both PMs


def live_state(tmp_path: Path) -> Live:
    store = Store.create(tmp_path / "state.db", load_snapshot(SEED).document)
    return Live(store, make_policy("origamig", deterministic=True, work_limit=100000))


def test_the_worker_tells_the_pms_of_each_call_before_it_solves(tmp_path: Path) -> None:
    live = live_state(tmp_path)
    told: list[frozenset[int]] = []
    optimizer._SELECTED = type("Sink", (), {"put": staticmethod(told.append)})()
    try:
        policy = pickle.dumps(live.policy)
        request = optimizer.CheckRequest(policy, live.dc.copy(), None, 1, 20.0, frozenset())
        policy, works = pickle.loads(optimizer.run_check(pickle.dumps(request)))
    finally:
        optimizer._SELECTED = None
    assert works and told == [works[0].pms] and policy.on_select is None


def test_an_arrival_while_a_call_solves_keeps_off_its_pms(tmp_path: Path) -> None:
    live = live_state(tmp_path)
    opt = optimizer.Optimizer(live)
    try:
        opt.selected = queue.Queue()  # type: ignore[assignment]
        opt.selected.put(frozenset({0}))  # the worker chose a call on pm0 and solves
        future: Future[bytes] = Future()
        future.set_result(b"")
        opt._hold_while_solving(future)
        assert live.locked == frozenset({0})
        small = replace(live.dc.pending["vm5"], id="late", gis=())  # fits pm0 and pm1 alike
        decision = live.runtime.arrive(small, 20.0)
        assert isinstance(decision, Placed) and decision.placement.pm == 1
        live.runtime.release_solving()
        assert live.locked == frozenset()
    finally:
        opt.stop()


def test_a_check_sent_as_changes_decides_as_one_sent_whole(tmp_path: Path) -> None:
    """The worker keeps the state of its last check; the next comes as the changes since (the PMs the
    live journal names): its calls are those of the same check sent whole. Changes to a state the
    worker has not (a new worker) are answered None, and the service sends the whole state."""
    live = live_state(tmp_path)
    policy = pickle.dumps(live.policy)
    try:
        optimizer._BASE = None
        whole = optimizer.CheckRequest(policy, live.dc.copy(), None, 1, 0.0, frozenset())
        pickle.loads(optimizer.run_check(pickle.dumps(whole)))  # too early for a call: state kept
        read = len(live.dc.journal())
        for n, gis in enumerate([["1g.5gb"], ["2g.10gb"], []]):
            live.arrive({"id": f"late{n}", "cpu": 2, "ram_gb": 8, "gis": gis, "gpu_model": "A100-40GB"})
        live.depart("late1")
        dc = live.dc.copy()
        changes = dc.changes_on(live.dc.journal()[read:])
        by_changes = optimizer.CheckRequest(policy, changes, 1, 2, 20.0, frozenset())
        _, works = pickle.loads(optimizer.run_check(pickle.dumps(by_changes)))
        optimizer._BASE = None
        assert pickle.loads(optimizer.run_check(pickle.dumps(by_changes))) is None
        again = optimizer.CheckRequest(policy, dc, None, 3, 20.0, frozenset())
        _, expected = pickle.loads(optimizer.run_check(pickle.dumps(again)))
        assert works and [w.plan for w in works] == [w.plan for w in expected]
        assert [(w.kind, w.pms, w.admitted, w.rejected) for w in works] == [
            (w.kind, w.pms, w.admitted, w.rejected) for w in expected
        ]
    finally:
        optimizer._BASE = None
