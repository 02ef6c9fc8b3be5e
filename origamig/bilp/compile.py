"""Pyomo model → standard form (sparse rows, bounds, integrality, objective, start vector), and back.

`compile_model` runs Pyomo's `LinearStandardFormCompiler` once per call, in mixed form with the sense
kept (`mixed_form=True, set_sense=None`: without them `≥` rows and the maximize objective come out
negated). It drops fixed variables and columns without nonzeros, so every column is mapped through
`info.columns`; bounds, integrality and start values are read from the variables themselves.
`decode` turns a solution vector back into a placement of the region's VMs.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass

import numpy as np
from pyomo.repn.plugins.standard_form import LinearStandardFormCompiler
from scipy import sparse

from origamig.bilp.model import BilpModel
from origamig.records import GiSlot, Placement

_MAX_SCALE_DIGITS = 6


@dataclass(frozen=True, eq=False)
class Compiled:
    """max c·x + offset  s.t.  row_lo ≤ A x ≤ row_hi,  col_lo ≤ x ≤ col_hi,  x_n integer where `integer`."""

    A: sparse.csr_array
    row_lo: np.ndarray
    row_hi: np.ndarray
    col_lo: np.ndarray
    col_hi: np.ndarray
    integer: np.ndarray
    c: np.ndarray
    offset: float
    hint: np.ndarray  # the current placement, pending VMs rejected: always feasible
    columns: tuple[object, ...]  # the Pyomo variable of each column
    objective_scale: int  # smallest 10^k (k ≤ 6) that makes every c integral; 0 if none

    @property
    def size(self) -> dict[str, int]:
        return {"columns": int(self.A.shape[1]), "rows": int(self.A.shape[0]), "nonzeros": int(self.A.nnz)}

    @property
    def objective_step(self) -> float:
        """Objective values of integer solutions are multiples of this (0 when unknown)."""
        return 1.0 / self.objective_scale if self.objective_scale else 0.0

    def objective_of(self, x: np.ndarray) -> float:
        return float(self.c @ x) + self.offset

    def trivial_bound(self) -> float:
        """max c·x over the column bounds alone: a valid bound when a solver stops before it has one."""
        return float(np.sum(np.where(self.c > 0, self.c * self.col_hi, self.c * self.col_lo))) + self.offset


def compile_model(model: BilpModel) -> Compiled:
    """The standard form of `model.pyomo` with its start values as the hint vector."""
    paused = gc.isenabled()
    gc.disable()  # as in build_model: no cyclic GC passes over the model's objects meanwhile
    try:
        info = LinearStandardFormCompiler().write(model.pyomo, mixed_form=True, set_sense=None)
    finally:
        if paused:
            gc.enable()
    cols = info.columns
    n = len(cols)
    A = sparse.csr_array(info.A)
    rhs = np.asarray(info.rhs, dtype=float)
    sense = np.array([s for _, s in info.rows], dtype=int)
    row_lo = np.where(sense <= 0, rhs, -np.inf)  # sense: 1 means ≤, 0 means =, -1 means ≥
    row_hi = np.where(sense >= 0, rhs, np.inf)
    col_lo = np.empty(n)
    col_hi = np.empty(n)
    integer = np.empty(n, dtype=bool)
    hint = np.empty(n)
    for t, var in enumerate(cols):
        lo, hi = var.bounds
        col_lo[t] = -np.inf if lo is None else lo
        col_hi[t] = np.inf if hi is None else hi
        integer[t] = var.is_integer() or var.is_binary()
        hint[t] = var.value if var.value is not None else max(col_lo[t], 0.0)
    c = np.asarray(info.c.toarray()).ravel() if info.c.shape[0] else np.zeros(n)
    offset = float(info.c_offset[0]) if len(info.c_offset) else 0.0
    return Compiled(
        A, row_lo, row_hi, col_lo, col_hi, integer, c, offset, hint, tuple(cols), _scale(c, offset)
    )


def _scale(c: np.ndarray, offset: float) -> int:
    values = np.append(c, offset)
    for k in range(_MAX_SCALE_DIGITS + 1):
        scaled = values * 10**k
        if np.allclose(scaled, np.round(scaled), rtol=0, atol=1e-9):
            return 10**k
    return 0


def decode(model: BilpModel, compiled: Compiled, x: np.ndarray) -> dict[str, Placement]:
    """The placement of every VM of the region that solution `x` admits (running VMs always).

    Each GI goes to the GPU its y says; on that GPU the chosen configuration's placements of the
    GI's profile are handed out: a GI whose previous slot is among them keeps it, the others take
    the remaining ones in ascending start order (VMs in region order).
    """
    value = {id(var): float(v) for var, v in zip(compiled.columns, x, strict=True)}

    def on(var: object) -> bool:
        got = value.get(id(var))
        return (got if got is not None else (var.value or 0.0)) > 0.5  # type: ignore[attr-defined]

    m, region = model.pyomo, model.region
    pm_of = {i: j for (i, j), var in m.x.items() if on(var)}
    gpu_of = {(i, v): k for (i, v, j, k), var in m.y.items() if pm_of.get(i) == j and on(var)}
    chosen = {(j, k): c for (j, k, c), var in m.q.items() if on(var)}
    starts: dict[tuple[str, int], int] = {}
    for (j, k), c in chosen.items():
        starts.update(_hand_out(model, (j, k), c, pm_of, gpu_of))
    target: dict[str, Placement] = {}
    for i, vm in region.vms.items():
        if i not in pm_of:
            continue
        slots = tuple(GiSlot(gpu_of[(i, v)], starts[(i, v)]) for v in range(len(vm.gis)))
        target[i] = Placement(pm_of[i], slots)
    return target


def _hand_out(
    model: BilpModel, gpu: tuple[int, int], c: int, pm_of: dict[str, int], gpu_of: dict[tuple[str, int], int]
) -> dict[tuple[str, int], int]:
    j, k = gpu
    md = model.gpu_models[gpu]
    free: dict[int, list[int]] = {}
    for p, z in model.configuration(gpu, c).slots:
        free.setdefault(p, []).append(z)
    region = model.region
    here = [
        (i, v)
        for i, vm in region.vms.items()
        if pm_of.get(i) == j
        for v in range(len(vm.gis))
        if gpu_of.get((i, v)) == k
    ]
    out: dict[tuple[str, int], int] = {}
    for i, v in here:
        prev = region.previous.get(i)
        if prev is not None and prev.pm == j and prev.gis[v].gpu == k:
            p = md.profile(region.vms[i].gis[v].name).index
            z = prev.gis[v].start
            if z in free.get(p, ()):
                free[p].remove(z)
                out[(i, v)] = z
    for i, v in here:
        if (i, v) in out:
            continue
        p = md.profile(region.vms[i].gis[v].name).index
        if not free.get(p):
            raise RuntimeError(
                f"solution places more {md.profiles[p].name} GIs on GPU {gpu} than its configuration"
            )
        z = min(free[p])
        free[p].remove(z)
        out[(i, v)] = z
    return out
