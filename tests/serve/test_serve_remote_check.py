"""A check made in the service's worker process (`runtime/remote_check.py`): solving holds nothing —
an arrival meanwhile goes where the rule puts it, the call's PMs included, and is told to the policy
the check returns; its target is adopted on the live state as it is when the call ends; a check sent
as the changes since the worker's last one decides as one sent whole."""

from __future__ import annotations

import pickle
from pathlib import Path

from origamig.policies.base import make_policy
from origamig.runtime import remote_check
from origamig.runtime.remote_check import CheckRequest, Recording, run_check
from origamig.serve.live import Live
from origamig.serve.store import Store
from origamig.snapshot.document import load_snapshot
from tests.serve_helpers import EXAMPLES

SEED = EXAMPLES / "fragmented-a100.json"  # its pending 3g.20gb VM makes an admission call on both PMs


def live_state(tmp_path: Path) -> Live:
    store = Store.create(tmp_path / "state.db", load_snapshot(SEED).document)
    return Live(store, make_policy("origamig", deterministic=True, work_limit=100000))


def test_an_arrival_while_a_call_solves_may_take_its_pms_and_the_target_adapts(tmp_path: Path) -> None:
    live = live_state(tmp_path)
    runtime = live.runtime
    sent = remote_check.begin(runtime, 20.0)
    recording = live.recording = Recording()
    request = CheckRequest(sent.policy, sent.state, None, 1, 20.0, sent.locked)
    policy, works = pickle.loads(run_check(pickle.dumps(request)))
    assert works and works[0].applied and "vm5" in works[0].admitted
    # While the call solved, a VM arrived: it goes where the rule puts it, on the call's PMs too.
    small = {"id": "late", "cpu": 1, "ram_gb": 1, "gis": []}
    assert live.arrive(small).status == "placed"
    assert live.dc.placement["late"].pm in works[0].pms
    live.recording = None
    remote_check.adopt(runtime, policy, works, recording, 20.0)
    assert runtime.policy is policy and runtime.solving == works
    end = runtime.end_call(works[0], 21.0)  # adopted on the live state: the plan still runs on it
    assert end.plans and end.admitted == ("vm5",) and "vm5" not in live.dc.pending
    assert live.runtime.plans.reserves("vm5") == end.plans[0].id


def test_a_call_whose_target_no_longer_fits_leaves_its_vm_pending(tmp_path: Path) -> None:
    live = live_state(tmp_path)
    runtime = live.runtime
    sent = remote_check.begin(runtime, 20.0)
    request = CheckRequest(sent.policy, sent.state, None, 1, 20.0, sent.locked)
    policy, works = pickle.loads(run_check(pickle.dumps(request)))
    (work,) = works
    # The VM the call moves to make room for vm5: a VM placed by others takes its target slots while
    # the call solves, so that nothing of the target fits any more.
    moved = next(v for v in work.target if v in live.dc.vms)
    target = work.target[moved]
    spec = live.dc.vms[moved]
    gis = [p.name for p in spec.gis]
    taker = {"id": "taker", "cpu": 1, "ram_gb": 1, "gis": gis, "gpu_model": "A100-40GB"}
    slots = [{"gpu": s.gpu, "start": s.start} for s in target.gis]
    placement = {"pm": live.dc.pms[target.pm].id, "gis": slots}
    assert live.arrive({**taker, "placement": placement}).status == "placed"
    remote_check.adopt(runtime, policy, works, Recording(), 20.0)
    end = runtime.end_call(work, 21.0)
    assert "vm5" not in end.admitted and "vm5" in live.dc.pending  # not rejected: it keeps waiting


def test_a_check_sent_as_changes_decides_as_one_sent_whole(tmp_path: Path) -> None:
    """The worker keeps the state of its last check; the next comes as the changes since (the PMs the
    live journal names): its calls are those of the same check sent whole. Changes to a state the
    worker has not (a new worker) are answered None, and the service sends the whole state."""
    live = live_state(tmp_path)
    policy = pickle.dumps(live.policy)
    try:
        remote_check._BASE = None
        whole = CheckRequest(policy, live.dc.copy(), None, 1, 0.0, frozenset())
        pickle.loads(run_check(pickle.dumps(whole)))  # too early for a call: state kept
        read = len(live.dc.journal())
        for n, gis in enumerate([["1g.5gb"], ["2g.10gb"], []]):
            live.arrive({"id": f"late{n}", "cpu": 2, "ram_gb": 8, "gis": gis, "gpu_model": "A100-40GB"})
        live.depart("late1")
        dc = live.dc.copy()
        changes = dc.changes_on(live.dc.journal()[read:])
        by_changes = CheckRequest(policy, changes, 1, 2, 20.0, frozenset())
        _, works = pickle.loads(run_check(pickle.dumps(by_changes)))
        remote_check._BASE = None
        assert pickle.loads(run_check(pickle.dumps(by_changes))) is None
        again = CheckRequest(policy, dc, None, 3, 20.0, frozenset())
        _, expected = pickle.loads(run_check(pickle.dumps(again)))
        assert works and [w.plan for w in works] == [w.plan for w in expected]
        assert [(w.kind, w.pms, w.admitted, w.rejected) for w in works] == [
            (w.kind, w.pms, w.admitted, w.rejected) for w in expected
        ]
    finally:
        remote_check._BASE = None
