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
        payload = pickle.dumps((pickle.dumps(live.policy), live.dc.copy(), 20.0, frozenset()))
        policy, works = pickle.loads(optimizer.run_check(payload))
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
