"""Pyomo model → standard form (sparse rows, bounds, integrality, objective, start vector), and back.

`compile_model` walks the model's active constraints itself and fills numpy CSR arrays: the
production model (`model.py`) writes every row as a `LinearExpression` of `MonomialTermExpression`
terms, which are read directly; any other body (the literal-form test oracle) goes through Pyomo's
`generate_standard_repn`. Pyomo's own standard-form compiler is not used: it imports SciPy, whose
deferred finalisation in Pyomo costs seconds per process. Columns are the model's unfixed variables
in declaration order; fixed variables become constants (moved into row bounds and the offset).
`decode` turns a solution vector back into a placement of the region's VMs.
"""

from __future__ import annotations

import gc
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyomo.core as pyo  # not pyomo.environ: its solver/writer plugins cost ~0.2 s, unused here
from pyomo.core.expr.numeric_expr import LinearExpression, MonomialTermExpression

from origamig.bilp.configurations import cf_table, configuration_of
from origamig.bilp.model import BilpModel
from origamig.bilp.standard_form import Compiled, SparseRows
from origamig.cluster.records import GiSlot, Placement

_MAX_SCALE_DIGITS = 6


def compile_model(model: Any) -> Compiled:
    """The standard form of `model.pyomo` (a maximization) with the variables' values as the hint."""
    paused = gc.isenabled()
    gc.disable()  # as in build_model: no cyclic GC passes over the model's objects meanwhile
    try:
        return _compile(model.pyomo)
    finally:
        if paused:
            gc.enable()


def _terms(expr: Any) -> tuple[list[tuple[float, Any]], float]:
    """(coefficient, variable) terms and the constant of a linear expression."""
    if type(expr) is LinearExpression and all(type(t) is MonomialTermExpression for t in expr.args):
        return [t.args for t in expr.args], 0.0
    from pyomo.repn.standard_repn import generate_standard_repn

    repn = generate_standard_repn(expr, compute_values=True, quadratic=False)
    if not repn.is_linear():
        raise ValueError(f"not a linear expression: {expr}")
    return list(zip(repn.linear_coefs, repn.linear_vars, strict=True)), float(repn.constant or 0.0)


def _compile(m: Any) -> Compiled:
    col_of: dict[int, int] = {}
    cols: list[Any] = []
    for var in m.component_data_objects(pyo.Var, descend_into=True, sort=False):
        if not var.fixed:
            col_of[id(var)] = len(cols)
            cols.append(var)
    indptr = [0]
    indices: list[int] = []
    data: list[float] = []
    row_lo: list[float] = []
    row_hi: list[float] = []
    for con in m.component_data_objects(pyo.Constraint, active=True, descend_into=True, sort=False):
        terms, const = _terms(con.body)
        lo, hi = con.lb, con.ub
        for coef, var in terms:
            n = col_of.get(id(var))
            if n is None:  # fixed: a constant
                const += coef * var.value
            elif coef:
                indices.append(n)
                data.append(coef)
        if len(indices) == indptr[-1]:  # no free variable left: must hold as it is
            if (lo is not None and const < lo - 1e-9) or (hi is not None and const > hi + 1e-9):
                raise ValueError(f"constraint {con.name} is violated by the fixed variables")
            continue
        indptr.append(len(indices))
        row_lo.append(-np.inf if lo is None else lo - const)
        row_hi.append(np.inf if hi is None else hi - const)
    objectives = list(m.component_data_objects(pyo.Objective, active=True, descend_into=True))
    if len(objectives) != 1:
        raise ValueError(f"the model has {len(objectives)} active objectives, not one")
    if objectives[0].sense != pyo.maximize:
        raise ValueError("the model's objective must be maximized")
    n = len(cols)
    c = np.zeros(n)
    terms, offset = _terms(objectives[0].expr)
    for coef, var in terms:
        k = col_of.get(id(var))
        if k is None:
            offset += coef * var.value
        else:
            c[k] += coef
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
    A = SparseRows(
        np.asarray(indptr, dtype=np.int64),
        np.asarray(indices, dtype=np.int32),
        np.asarray(data, dtype=float),
        (len(row_lo), n),
    )
    return Compiled(
        A,
        np.asarray(row_lo, dtype=float),
        np.asarray(row_hi, dtype=float),
        col_lo,
        col_hi,
        integer,
        c,
        float(offset),
        hint,
        tuple(cols),
        _scale(c, offset),
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


def start_of(model: BilpModel, compiled: Compiled, target: Mapping[str, Placement]) -> np.ndarray | None:
    """The column vector of placement `target` of the region (every running VM, the admitted pending
    ones): the inverse of `decode`, to hand a placement found elsewhere to a solver as its start.

    Each GPU takes the configuration of its GIs' slots, or, where pruning dropped it, the kept one
    with the same GIs per profile that holds the most staying GIs' slots and then the highest CF (it
    is worth at least as much: configurations.py). None when the placement has no column (a VM on a
    PM or GPU the model leaves out); the caller checks the rows (`Compiled.holds`)."""
    m, region = model.pyomo, model.region
    ones: list[Any] = []
    multi_class = {(i, j) for i, j, _ in m.z}
    try:
        for i, pl in target.items():
            ones.append(m.x[(i, pl.pm)])
            ones.extend(m.y[(i, v, pl.pm, slot.gpu)] for v, slot in enumerate(pl.gis))
            if pl.gis and (i, pl.pm) in multi_class:
                h = model.gpu_models[(pl.pm, pl.gis[0].gpu)].gpu_class
                ones.append(m.z[(i, pl.pm, h)])
        ones.extend(m.phi[j] for j in {pl.pm for pl in target.values()})
    except KeyError:
        return None
    chosen = _configurations_of(model, target)
    if chosen is None:
        return None
    ones.extend(m.q[(*g, c)] for g, c in chosen.items())
    ones.extend(m.gamma[g] for g in chosen)
    for i, before in region.previous.items():
        now = target.get(i)
        moved = now is None or now.pm != before.pm
        stays = [
            not moved and now is not None and now.gis[v].gpu == slot.gpu and _holds_slot(model, chosen, i, v)
            for v, slot in enumerate(before.gis)
        ]
        ones.extend(m.stay[(i, v)] for v, kept in enumerate(stays) if kept)
        if moved:
            ones.append(m.mig[i])
        if moved or not all(stays):
            ones.append(m.omega[i])
    value = {id(var): 1.0 for var in ones}
    for h in m.ngpu:
        value[id(m.ngpu[h])] = sum(1 for g in chosen if model.gpu_models[g].gpu_class == h)
        hosts = {j for j, k in model.gpu_models if model.gpu_models[(j, k)].gpu_class == h}
        value[id(m.npm[h])] = len(hosts & {pl.pm for pl in target.values()})
    return np.asarray([value.get(id(var), 0.0) for var in compiled.columns], dtype=float)


def _holds_slot(model: BilpModel, chosen: Mapping[tuple[int, int], int], i: str, v: int) -> bool:
    """Whether GI v of running VM i finds its previous slot in the configuration chosen for its GPU."""
    before = model.region.previous[i]
    gpu = (before.pm, before.gis[v].gpu)
    c = chosen.get(gpu)
    if c is None:
        return False
    md = model.gpu_models[gpu]
    slot = (md.profile(model.region.vms[i].gis[v].name).index, before.gis[v].start)
    return slot in model.configuration(gpu, c).slots


def _configurations_of(
    model: BilpModel, target: Mapping[str, Placement]
) -> dict[tuple[int, int], int] | None:
    """The configuration column of each GPU `target` uses (see `start_of`), None if one has none."""
    region = model.region
    slots: dict[tuple[int, int], set[tuple[int, int]]] = {}
    staying: dict[tuple[int, int], set[tuple[int, int]]] = {}
    for i, pl in target.items():
        before = region.previous.get(i)
        for v, slot in enumerate(pl.gis):
            g = (pl.pm, slot.gpu)
            s = (model.gpu_models[g].profile(region.vms[i].gis[v].name).index, slot.start)
            slots.setdefault(g, set()).add(s)
            if before is not None and before.pm == pl.pm and before.gis[v] == slot:
                staying.setdefault(g, set()).add(s)
    by_gpu: dict[tuple[int, int], list[int]] = {}
    for j, k, c in model.pyomo.q:
        by_gpu.setdefault((j, k), []).append(c)
    chosen: dict[tuple[int, int], int] = {}
    for g, used in slots.items():
        md = model.gpu_models[g]
        exact = configuration_of(md, frozenset(used))
        if (*g, exact) in model.pyomo.q:
            chosen[g] = exact
            continue
        counts = model.configuration(g, exact).counts
        cf = cf_table(md, model.weights)
        same = [c for c in by_gpu.get(g, ()) if model.configuration(g, c).counts == counts]
        if not same:
            return None
        stay = staying.get(g, set())
        chosen[g] = max(
            same, key=lambda c: (len(stay.intersection(model.configuration(g, c).slots)), cf[c], -c)
        )
    return chosen
