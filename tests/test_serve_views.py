"""The service's kept copies: the encoded snapshot equals the document the snapshot writer makes, after
any arrivals and departures; the extender's verdict cache stays within its bound and never answers
with a verdict made on another version of a PM."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.policies.base import make_policy
from origamig.serve.live import Live
from origamig.serve.store import Store
from origamig.serve.verdicts import VerdictCache
from origamig.snapshot.document import load_snapshot, snapshot_document
from tests.serve_helpers import EXAMPLES

PROFILES = ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb")


def reference(live: Live) -> dict:
    """The snapshot as the writer (`snapshot_document`) makes it from the live records."""
    doc = {**live.seed.document, "vms": [dict(e) for e in live.entries.values()]}
    return snapshot_document(dataclasses.replace(live.seed, document=doc), live.dc.placement)


def test_the_encoded_snapshot_is_the_writers_document_after_any_changes(tmp_path: Path) -> None:
    seed = load_snapshot(EXAMPLES / "mixed-h100-a100.json")
    live = Live(Store.create(tmp_path / "s.db", seed.document), make_policy("origamig", check_interval_s=1e9))
    rng = random.Random(7)
    assert json.loads(live.snapshot_json()) == reference(live)
    for n in range(60):
        if rng.random() < 0.6 or not live.dc.vms:
            gis = [rng.choice(PROFILES)]
            live.arrive({"id": f"new{n}", "cpu": 4, "ram_gb": 16, "gis": gis, "gpu_model": "A100-80GB"})
        else:
            live.depart(rng.choice(sorted(live.entries)))
        if n % 7 == 0:
            assert json.loads(live.snapshot_json()) == reference(live)
    assert json.loads(live.snapshot_json()) == reference(live)
    live.store.close()


ops = st.lists(
    st.tuples(st.integers(0, 5), st.integers(0, 9), st.integers(0, 3), st.booleans()), max_size=200
)


@settings(max_examples=60, deadline=None)
@given(ops, st.integers(1, 25))
def test_the_verdict_cache_is_bounded_and_never_stale(steps: list, bound: int) -> None:
    cache = VerdictCache(max_verdicts=bound)
    truth: dict[tuple[int, int], tuple[int, str]] = {}
    for shape, pm, version, write in steps:
        if write:
            verdict = f"{shape}/{pm}@{version}"
            cache.put(shape, pm, version, verdict)
            truth[(shape, pm)] = (version, verdict)
        else:
            got = cache.get(shape, pm, version)
            if got is not None:  # a hit is exactly the last verdict put for that shape, PM and version
                assert truth[(shape, pm)] == (version, got)
        assert len(cache) <= bound
