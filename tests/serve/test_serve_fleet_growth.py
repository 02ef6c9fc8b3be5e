"""A server added in place (`serve/fleet_growth.py`) leaves the live state exactly as a restart reads it
from the store: the same snapshot, PMs, VMs (pending ones read against the models now present, pinned
by the platform's rules), extender tables and cordons — on every example fleet, with servers of
models new to it or not, under both platforms (Hypothesis)."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.cluster.catalog import default_catalog
from origamig.serve.fleet import Fleet
from origamig.serve.live import Live
from origamig.serve.store import Store
from tests.paths import ROOT
from tests.profiles import examples
from tests.serve_helpers import in_process

EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
MODELS = sorted(default_catalog().gpus)


def state(live: Live) -> tuple[Any, ...]:
    """What the live state answers, for comparing two of them."""
    dc = live.dc
    return (
        live.snapshot_json(),
        dc.pms,
        dict(dc.placement),
        dict(dc.pending),
        dict(dc.vms),
        {k: v for k, v in dc.holds.items()},
        [(h, dc.gamma(h)) for h in dc.classes],
        [m.name for m in live.request_context.present],
        live.most_gis,
        live.class_members,
        live.move_rules,
        live.runtime.cordoned,
    )


servers = st.lists(
    st.tuples(st.sampled_from(MODELS), st.integers(0, 8), st.booleans()), min_size=1, max_size=3
)


@settings(max_examples=examples(30), deadline=None)
@given(st.sampled_from(EXAMPLES), servers, st.sampled_from([None, "kubevirt"]))
def test_a_server_added_in_place_is_what_a_restart_reads(
    example: Path, added: list[tuple[str, int, bool]], platform: str | None
) -> None:
    with TemporaryDirectory() as tmp:
        live, _ = in_process(Path(tmp), json.loads(example.read_text()), platform)
        fleet = Fleet(live)
        for n, (model, gpus, cordoned) in enumerate(added):
            entry = {"cpu": 64, "ram_gb": 512, "gpus": [model] * gpus} | (
                {"cordoned": True} if cordoned else {}
            )
            fleet.add(f"new-{n}", entry)
        again = Live(Store(live.store.path), pickle.loads(pickle.dumps(live.policy)))
        again.move_rules = live.move_rules  # `--platform` is the command line's, not the state's
        again.reload()
        assert state(again) == state(live)
        live.store.close()
        again.store.close()
