"""A bound that sees whole PMs: the region model decomposed by PM and priced by column generation.

The LP relaxation's gap is VMs split fractionally over PMs, with PMs and GPUs partly switched on
(docs/model.md#pm-pattern-bound). Here every PM's columns (its VMs' x and y, its configurations,
γ and φ, and the migration columns of the VMs it now hosts) form a block whose rows are kept whole and
integral; only the rows that join PMs — each VM placed once, the class counts and their cuts — are
relaxed. A *pattern* is an integer solution of one block: a set of VMs with their GIs placed on that
PM. The bound is Dantzig–Wolfe's: the best convex combination of patterns per PM, which no LP
relaxation of the compact model can beat.

It is computed by stabilized column generation: a master LP over the patterns found so far, and for
each PM a pricing MIP (HiGHS, no presolve, started from that PM's last pattern) for the pattern of
largest reduced value at multipliers smoothed between the master's duals and the best multipliers so
far (Wentges), starting from the LP relaxation's duals. At any multipliers π on the joining rows the value

    π·side + Σ_PM max over its patterns of (c − Aᵀπ)·x + max over the class counts' box of (c − Aᵀπ)·z

bounds the optimum (weak Lagrangian duality), with each PM's maximum taken as its pricing MIP's dual
bound, so the bound never trusts a solver's report; it is the smallest such value seen. The current
placement is a pattern of every PM, so the master starts feasible.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from origamig.bilp.bound import lagrangian_terms, lp_duals, lp_multipliers
from origamig.bilp.standard_form import Compiled, SparseRows

if TYPE_CHECKING:
    from origamig.bilp.model import BilpModel

# Pattern columns whose reduced value is at most this are not added (the master's own tolerance).
_TOLERANCE = 1e-6


@dataclass(frozen=True)
class PatternBound:
    """The PM-pattern bound of one region model, and what computing it took."""

    bound: float  # proved upper bound on the optimum
    lp_bound: float  # the LP relaxation's bound (bilp/bound.py), for comparison
    master: float  # the master LP's value over the patterns found (≤ bound; equal when converged)
    converged: bool  # no pattern with a positive reduced value was left: bound = Dantzig–Wolfe's
    integral: bool  # the master's last solution is integral: a placement of the region, of value `master`
    iterations: int
    patterns: int
    pricing_mips: int
    wall_s: float
    pricing_s: float


def column_pms(model: BilpModel, compiled: Compiled) -> np.ndarray:
    """The PM whose block holds each column; −1 for the columns joining PMs (the class counts).

    A running VM's migration columns (mig, omega, stay) belong to the PM it runs on now: its rows
    there compare the VM's new place with the old one on that PM only."""
    previous = model.region.previous
    pms = np.full(len(compiled.columns), -1, dtype=np.int64)
    for n, var in enumerate(compiled.columns):
        family, index = var.parent_component().local_name, var.index()  # type: ignore[attr-defined]
        if family == "x":
            pms[n] = index[1]
        elif family == "y":
            pms[n] = index[2]
        elif family in ("q", "gamma"):
            pms[n] = index[0]
        elif family == "phi":
            pms[n] = index
        elif family in ("mig", "omega"):
            pms[n] = previous[index].pm
        elif family == "stay":
            pms[n] = previous[index[0]].pm
    return pms


@dataclass
class _Block:
    """One PM's columns, its own rows, its pricing MIP, how many patterns it has in the master, and
    its last priced pattern (the next pricing's start)."""

    cols: np.ndarray
    rows: np.ndarray
    pricing: Any = None
    patterns: int = 0
    last: np.ndarray | None = None


@dataclass
class _Joining:
    """The rows joining PMs, column by column (sorted by column), with their sides."""

    rows: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    pos: np.ndarray  # position of the entry's row among `rows`
    val: np.ndarray
    start: np.ndarray  # entries of column n: start[n]:start[n+1]

    def coefficients(self, cols: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The joining rows' activity of a block solution `x` over `cols` (nonzeros only)."""
        acc = np.zeros(len(self.rows))
        for n, value in zip(cols[x != 0], x[x != 0], strict=True):
            a, b = self.start[n], self.start[n + 1]
            acc[self.pos[a:b]] += self.val[a:b] * value
        nz = np.flatnonzero(acc)
        return nz.astype(np.int32), acc[nz]


def _decompose(compiled: Compiled, pms: np.ndarray) -> tuple[list[_Block], _Joining]:
    A = compiled.A
    row_of = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
    low = np.full(A.shape[0], np.iinfo(np.int64).max)
    high = np.full(A.shape[0], np.iinfo(np.int64).min)
    np.minimum.at(low, row_of, pms[A.indices])
    np.maximum.at(high, row_of, pms[A.indices])
    joining = np.flatnonzero((low != high) | (low < 0))
    blocks = [
        _Block(np.flatnonzero(pms == j), np.flatnonzero((low == j) & (high == j)))
        for j in sorted(set(pms.tolist()) - {-1})
    ]
    pos = np.full(A.shape[0], -1)
    pos[joining] = np.arange(len(joining))
    keep = pos[row_of] >= 0
    col, at, val = A.indices[keep], pos[row_of[keep]], A.data[keep]
    order = np.argsort(col, kind="stable")
    col, at, val = col[order], at[order], val[order]
    start = np.searchsorted(col, np.arange(A.shape[1] + 1))
    return blocks, _Joining(joining, compiled.row_lo[joining], compiled.row_hi[joining], at, val, start)


def _block_form(compiled: Compiled, block: _Block) -> Compiled:
    """The block's own rows and columns as a standard form (costs zero: they are set at each pricing)."""
    A = compiled.A
    local = np.full(A.shape[1], -1, dtype=np.int64)
    local[block.cols] = np.arange(len(block.cols))
    spans = [np.arange(A.indptr[r], A.indptr[r + 1]) for r in block.rows]
    entries = np.concatenate(spans) if spans else np.zeros(0, dtype=np.int64)
    indptr = np.concatenate([[0], np.cumsum([len(e) for e in spans])]).astype(np.int64)
    rows = SparseRows(indptr, local[A.indices[entries]], A.data[entries], (len(block.rows), len(block.cols)))
    return Compiled(
        A=rows,
        row_lo=compiled.row_lo[block.rows],
        row_hi=compiled.row_hi[block.rows],
        col_lo=compiled.col_lo[block.cols],
        col_hi=compiled.col_hi[block.cols],
        integer=compiled.integer[block.cols],
        c=np.zeros(len(block.cols)),
        offset=0.0,
        hint=compiled.hint[block.cols],
        columns=(),
        objective_scale=0,
    )


def _pricing_mip(highspy: Any, compiled: Compiled, block: _Block) -> Any:
    """The block's rows and columns as a HiGHS MIP (its costs are set at each pricing)."""
    from origamig.bilp.backends.highs import highs_lp, new_highs

    h = new_highs(highspy)
    for option, setting in (
        ("output_flag", False),
        ("threads", 1),
        ("random_seed", 0),
        ("mip_rel_gap", 0.0),
        ("presolve", "off"),  # ten times faster on these small MIPs, measured
    ):
        h.setOptionValue(option, setting)
    h.passModel(highs_lp(highspy, _block_form(compiled, block)))
    return h


def pattern_bound(
    model: BilpModel,
    compiled: Compiled,
    *,
    max_iterations: int = 200,
    stop_below: float | None = None,
    smoothing: float = 0.9,
    seeds: Sequence[np.ndarray] = (),
    warm: bool = True,
) -> PatternBound:
    """The PM-pattern bound of a region model (`compiled` is `compile_model(model)`).

    Stops when converged, after `max_iterations` pricing rounds, or as soon as the bound falls below
    `stop_below` (a no-change proof needs no more). `smoothing` is the weight of the best multipliers
    so far against the master's duals; it halves whenever a round finds no improving pattern. Each of
    `seeds` (integer solutions of the whole model, e.g. an earlier call's answer) adds its pattern on
    every PM to the master's first patterns. `warm=False` prices without the last pattern as a start
    (for measuring what the start saves)."""
    import highspy

    t0 = time.perf_counter()
    pms = column_pms(model, compiled)
    blocks, joining = _decompose(compiled, pms)
    count_cols = np.flatnonzero(pms < 0)
    block_cols = np.flatnonzero(pms >= 0)
    inf = highspy.kHighsInf
    master = _master(highspy, compiled, blocks, joining, count_cols)

    def pattern_column(b: int, x: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """A pattern's objective and its activity on the joining rows (nonzeros)."""
        return (float(compiled.c[blocks[b].cols] @ x), *joining.coefficients(blocks[b].cols, x))

    def add_pattern(
        b: int, x: np.ndarray, column: tuple[float, np.ndarray, np.ndarray] | None = None
    ) -> None:
        cost, rows, vals = column or pattern_column(b, x)
        rows = np.append(rows, len(joining.rows) + b).astype(np.int32)  # and the PM's convexity row
        master.addCol(cost, 0.0, inf, len(rows), rows, np.append(vals, 1.0))
        blocks[b].patterns += 1

    for b, block in enumerate(blocks):
        block.last = np.round(compiled.hint[block.cols])
        add_pattern(b, block.last)
        for seed in seeds:
            add_pattern(b, np.round(np.asarray(seed, dtype=float)[block.cols]))
        block.pricing = _pricing_mip(highspy, compiled, block)

    pricing_s = 0.0
    mips = 0

    def lagrangian(pi: np.ndarray) -> tuple[float, list[np.ndarray]]:
        """The bound at multipliers `pi` on the joining rows, and each PM's best pattern there."""
        nonlocal pricing_s, mips
        on_rows = np.zeros(compiled.A.shape[0])
        on_rows[joining.rows] = pi
        # The LP bound's Lagrangian at these multipliers, with each PM's columns maximized over its
        # patterns (below) instead of over their box: take their box terms (binaries: finite) out.
        value, reduced, box = lagrangian_terms(compiled, on_rows)
        value -= float(np.sum(box[block_cols]))
        t = time.perf_counter()
        best: list[np.ndarray] = []
        for block in blocks:
            h = block.pricing
            h.changeColsCost(len(block.cols), np.arange(len(block.cols), dtype=np.int32), reduced[block.cols])
            if warm and block.last is not None:  # a pattern is feasible for its PM's rows at any costs
                start = highspy.HighsSolution()
                start.col_value = block.last.tolist()
                start.value_valid = True
                h.setSolution(start)
            h.run()
            mips += 1
            info = h.getInfo()
            if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
                value = np.inf  # no proved maximum for this PM: these multipliers prove nothing
            else:
                value += info.mip_dual_bound
            if info.primal_solution_status == 2:  # feasible: a pattern (else the last one stays)
                block.last = np.round(np.asarray(h.getSolution().col_value, dtype=float))
            assert block.last is not None
            best.append(block.last)
        pricing_s += time.perf_counter() - t
        return value, best

    lp_bound = np.inf
    center = np.zeros(len(joining.rows))
    duals, _ = lp_duals(compiled, None)
    if duals is not None:
        multipliers = lp_multipliers(compiled, duals)
        lp_bound = lagrangian_terms(compiled, multipliers)[0]
        center = multipliers[joining.rows]
    bound, patterns = lagrangian(center)
    for b, x in enumerate(patterns):
        add_pattern(b, x)
    converged = False
    rounds = 0
    alpha = smoothing
    while True:
        master.run()
        master_value = master.getInfo().objective_function_value + compiled.offset
        duals_now = np.asarray(master.getSolution().row_dual, dtype=float)
        pi, mu = duals_now[: len(joining.rows)], duals_now[len(joining.rows) :]
        if bound - master_value <= _TOLERANCE * max(1.0, abs(bound)):
            converged = True
            break
        if rounds >= max_iterations or (stop_below is not None and bound < stop_below):
            break
        rounds += 1
        trial = alpha * center + (1 - alpha) * pi
        at_trial, patterns = lagrangian(trial)
        added = 0
        for b, x in enumerate(patterns):
            cost, rows, vals = column = pattern_column(b, x)
            if cost - float(pi[rows] @ vals) - mu[b] > _TOLERANCE:
                add_pattern(b, x, column)
                added += 1
        if at_trial < bound:
            bound, center = at_trial, trial
        if not added:
            if alpha == 0.0:  # priced at the master's own duals and nothing improves it: converged
                converged = True
                break
            alpha = 0.0 if alpha < 0.2 else alpha / 2
    solution = np.asarray(master.getSolution().col_value, dtype=float)
    return PatternBound(
        bound=float(bound),
        lp_bound=float(lp_bound),
        master=float(master_value),
        converged=converged,
        integral=bool(np.all(np.abs(solution - np.round(solution)) <= _TOLERANCE)),
        iterations=rounds,
        patterns=sum(b.patterns for b in blocks),
        pricing_mips=mips,
        wall_s=time.perf_counter() - t0,
        pricing_s=pricing_s,
    )


def _master(
    highspy: Any, compiled: Compiled, blocks: list[_Block], joining: _Joining, count_cols: np.ndarray
) -> Any:
    """The master LP without patterns: the joining rows, one convexity row per PM, the class counts."""
    from origamig.bilp.backends.highs import new_highs

    inf = highspy.kHighsInf
    h = new_highs(highspy)
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.changeObjectiveSense(highspy.ObjSense.kMaximize)
    n = len(blocks)
    lo = np.concatenate([np.where(np.isfinite(joining.lo), joining.lo, -inf), np.ones(n)])
    hi = np.concatenate([np.where(np.isfinite(joining.hi), joining.hi, inf), np.ones(n)])
    h.addRows(len(lo), lo, hi, 0, np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0))
    for col in count_cols:
        a, b = joining.start[col], joining.start[col + 1]
        h.addCol(
            float(compiled.c[col]),
            float(compiled.col_lo[col]),
            float(compiled.col_hi[col]),
            b - a,
            joining.pos[a:b].astype(np.int32),
            joining.val[a:b],
        )
    return h
