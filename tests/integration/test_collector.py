"""`origamig/collector.py`: the collector is off inside `collector_paused` and as it was afterwards,
even after an error; `collector_frozen` keeps what was alive at its start out of the collector's
passes and hands it back."""

from __future__ import annotations

import gc

import pytest

from origamig.collector import collector_frozen, collector_paused


def test_paused_turns_the_collector_off_and_back_as_it_was() -> None:
    was = gc.isenabled()
    try:
        gc.enable()
        with collector_paused():
            assert not gc.isenabled()
        assert gc.isenabled()
        with pytest.raises(RuntimeError), collector_paused():
            raise RuntimeError("inside")
        assert gc.isenabled()
        gc.disable()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # it was off before: it stays off
    finally:
        (gc.enable if was else gc.disable)()


def test_frozen_holds_what_was_alive_and_hands_it_back() -> None:
    before = gc.get_freeze_count()
    alive = [[i] for i in range(1000)]  # containers the collector tracks
    with collector_frozen():
        assert gc.get_freeze_count() >= before + len(alive)
    assert gc.get_freeze_count() == 0
    with pytest.raises(RuntimeError), collector_frozen():
        raise RuntimeError("inside")
    assert gc.get_freeze_count() == 0
