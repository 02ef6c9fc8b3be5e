"""The arrival rule read from an index (`policies/arrival_index.py`) picks the PM a scan of every
candidate picks, for the scoring rules and for first fit as a per-PM fit: on random streams of
arrivals (some of VMs that may run on several GPU classes), departures, copies, locks and journals
started over."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from origamig.cluster import datacenter_ledger
from origamig.cluster.catalog import default_catalog
from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import Placement, PmSpec, VmSpec, cores_to_m, gb_to_mb
from origamig.policies import arrival_index
from origamig.policies.arrival_rule import choose_pm, first_fit_on_pm
from origamig.policies.base import Rejection
from origamig.policies.fgd import FgdFit, Workload
from origamig.policies.mfi import mfi_fit_on_pm
from origamig.policies.tc.rule import tc_fit_on_pm
from tests.profiles import examples
from tests.strategies import arrival_stream

CATALOG = default_catalog()
MODELS = ("A100-40GB", "A100-80GB", "H100-80GB", "A30-24GB")
# names offered by several classes: a VM asking for them without a model may run on each
SHARED = ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb")


@contextmanager
def constants(index_min_pms: int, journal_kept: int) -> Iterator[None]:
    saved = arrival_index.INDEX_MIN_PMS, datacenter_ledger.JOURNAL_KEPT
    arrival_index.INDEX_MIN_PMS, datacenter_ledger.JOURNAL_KEPT = index_min_pms, journal_kept
    try:
        yield
    finally:
        arrival_index.INDEX_MIN_PMS, datacenter_ledger.JOURNAL_KEPT = saved


@st.composite
def clusters(draw: st.DrawFn) -> DataCenter:
    pms = []
    for j in range(draw(st.integers(1, 12))):
        models = draw(st.lists(st.sampled_from(MODELS), min_size=0, max_size=2))
        cores = draw(st.sampled_from((16, 32, 80)))
        pms.append(PmSpec(f"p{j}", cores_to_m(cores), gb_to_mb(256), tuple(CATALOG.gpu(m) for m in models)))
    return DataCenter(pms)


@st.composite
def shapes(draw: st.DrawFn) -> VmSpec:
    """A VM of one model, or one naming shared profiles that may run on the 80 GB A100 and the H100."""
    if draw(st.booleans()):
        names = draw(st.lists(st.sampled_from(SHARED), min_size=1, max_size=2))
        choices = tuple(tuple(CATALOG.gpu(m).profile(n) for n in names) for m in ("H100-80GB", "A100-80GB"))
        if draw(st.booleans()):
            choices = choices[::-1]
        gis, alternatives = choices[0], choices[1:]
    else:
        model = CATALOG.gpu(draw(st.sampled_from(MODELS)))
        gis = tuple(draw(st.lists(st.sampled_from(model.profiles), min_size=0, max_size=2)))
        alternatives = ()
    compute = (sum(p.compute_slices for p in gis) or 1) * draw(st.sampled_from((1, 2)))  # two sizes per GIs
    return VmSpec("shape", cores_to_m(4 * compute), gb_to_mb(16 * compute), gis, alternatives=alternatives)


FITS = [tc_fit_on_pm, mfi_fit_on_pm, first_fit_on_pm]


def workload(kinds: list[VmSpec]) -> Workload:
    return Workload.of(Counter((v.gis, v.cpu_m, v.ram_mb) for v in kinds if v.gis))


@settings(max_examples=examples(150), deadline=None)
@given(clusters(), st.data(), st.sampled_from(range(len(FITS) + 1)), st.sampled_from([3, 10_000]))
def test_the_index_picks_the_pm_a_scan_picks(dc: DataCenter, data: st.DataObject, f: int, kept: int) -> None:
    kinds = data.draw(st.lists(shapes(), min_size=1, max_size=3))  # shapes arrive again and again
    fit: Any = FITS[f] if f < len(FITS) else FgdFit(workload(kinds))

    def choose(state: DataCenter, vm: VmSpec) -> Placement | Rejection:
        locked = frozenset(data.draw(st.lists(st.integers(0, len(state.pms) - 1), max_size=3)))
        with constants(index_min_pms=0, journal_kept=kept):
            indexed = choose_pm(state, vm, locked, fit)
        with constants(index_min_pms=1 << 30, journal_kept=kept):
            scanned = choose_pm(state, vm, locked, fit)
        assert indexed == scanned
        return indexed

    arrival_stream(data, dc, kinds, data.draw(st.integers(1, 30)), choose)


def test_a_copy_and_its_original_keep_their_own_journals() -> None:
    dc = DataCenter(
        [PmSpec(f"p{j}", cores_to_m(32), gb_to_mb(256), (CATALOG.gpu("A100-40GB"),)) for j in range(3)]
    )
    vm = VmSpec("v", cores_to_m(4), gb_to_mb(16), (CATALOG.gpu("A100-40GB").profile("1g.5gb"),))
    copy = dc.copy()
    placed = choose_pm(dc, vm, frozenset(), tc_fit_on_pm)
    assert not isinstance(placed, Rejection)
    dc.place(vm, placed)
    assert dc.journal()[-1] == placed.pm and copy.journal() == [] and copy.journal() is not dc.journal()
