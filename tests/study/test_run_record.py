"""`RunRecord`, a finished cell of a sweep: its JSON is the dict results files have always held (same
keys, same order, same bytes), and read back it is the same record — for drawn records and for every
run stored in benchmarks/results."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks import RESULTS
from origamig.study.sweep import RunRecord, sweep_runs
from origamig.study.sweep.records import differences
from tests.profiles import examples

TEXT = st.text(max_size=12)
NUMBER = st.one_of(st.integers(-(10**6), 10**6), st.floats(-1e6, 1e6, allow_nan=False))
VALUES = st.dictionaries(TEXT, st.one_of(st.none(), NUMBER), max_size=6)
# What `record` writes, in its order (the optional keys only when set).
KEYS = ["cell", "row", "col", "policy", "seed", "pms", "load", "variant", "policy_options", "metrics"]
KEYS += ["counters", "requests", "calls", "wall_s", "cpu_s", "code", "adopted_from"]

records = st.builds(
    RunRecord,
    cell=TEXT,
    row=TEXT,
    col=TEXT,
    policy=TEXT,
    seed=st.integers(0, 1000),
    load=st.floats(0, 2),
    variant=TEXT,
    policy_options=st.dictionaries(TEXT, st.one_of(st.booleans(), NUMBER, TEXT), max_size=3),
    metrics=VALUES,
    counters=st.dictionaries(TEXT, NUMBER, max_size=4),
    requests=st.integers(0, 10**6),
    calls=st.integers(0, 10**4),
    wall_s=st.floats(0, 1e5),
    pms=st.one_of(st.none(), st.integers(1, 4096)),
    cpu_s=st.one_of(st.none(), st.floats(0, 1e5)),
    code=st.one_of(st.none(), st.text("0123456789abcdef", min_size=16, max_size=16)),
    adopted_from=st.one_of(st.none(), TEXT),
    extra=st.dictionaries(
        st.sampled_from(["trace", "revision", "note"]), st.one_of(NUMBER, TEXT), max_size=2
    ),
)


@settings(max_examples=examples(200), deadline=None)
@given(records)
def test_json_reads_back_as_the_record(run: RunRecord) -> None:
    doc = run.to_json()
    known = [k for k in doc if k not in run.extra]
    assert known == [k for k in KEYS if k in known] and list(doc)[len(known) :] == list(run.extra)
    assert RunRecord.from_json(doc) == run
    assert RunRecord.from_json(json.loads(json.dumps(doc))) == run  # through a file too
    assert json.dumps(RunRecord.from_json(doc).to_json()) == json.dumps(doc)


@settings(max_examples=examples(100), deadline=None)
@given(records, st.permutations(KEYS[:4]))
def test_a_stored_order_is_written_back(run: RunRecord, first: list[str]) -> None:
    doc = run.to_json()
    shuffled = {k: doc[k] for k in first} | doc  # keys as some earlier code may have written them
    assert json.dumps(RunRecord.from_json(shuffled).to_json()) == json.dumps(shuffled)


def test_a_fresh_record_writes_what_record_wrote() -> None:
    run = RunRecord(
        cell="ff|0.85|ff|1|abc", row="ff", col="0.85", policy="ff", seed=1, load=0.85, variant="default",
        policy_options={}, metrics={"active_pms": 3.0}, counters={"calls": 2}, requests=10, calls=2,
        wall_s=1.5, pms=32, cpu_s=1.2, code="0123456789abcdef",
    )  # fmt: skip
    assert list(run.to_json()) == KEYS[:-1]
    assert "adopted_from" not in run.to_json() and "pms" not in replace(run, pms=None).to_json()


def test_differences_compare_the_recomputed_fields_only() -> None:
    run = RunRecord("c", "ff", "x", "ff", 1, 0.85, "default", {}, {"a": 1.0}, {"wall_s": 2.0}, 5, 0, 1.0)
    assert differences(run, replace(run, wall_s=9.0, code="other", counters={"wall_s": 3.0})) == []
    assert differences(run, replace(run, requests=6)) == ["requests: 5 stored, 6 now"]


def _sweep_files() -> list[tuple[str, dict[str, Any]]]:
    """Every stored results document with runs of sweep cells."""
    out = []
    for path in sorted(RESULTS.rglob("*.json")):
        doc = json.loads(path.read_text())
        if isinstance(doc, dict) and isinstance(doc.get("runs"), list) and sweep_runs(doc):
            out.append((str(path.relative_to(RESULTS)), doc))
    return out


def test_every_stored_run_reads_back_and_writes_the_same_bytes() -> None:
    found = 0
    for path, doc in _sweep_files():
        runs = [r for r in doc["runs"] if r.get("cell")]
        for stored, run in zip(runs, sweep_runs(doc), strict=True):
            assert json.dumps(run.to_json()) == json.dumps(stored), path
            assert RunRecord.from_json(run.to_json()) == run, path
            assert not run.extra, (path, sorted(run.extra))  # every stored key is a field of the record
            found += 1
        assert json.dumps([RunRecord.from_json(r).to_json() for r in runs]) == json.dumps(runs), path
    assert found > 400  # the paper's sweeps, the studies', rev4's
