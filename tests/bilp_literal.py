"""The paper's literal Eq. (4)–(16) in Pyomo — a test oracle for the production configuration form.

Start slices are explicit (y_ivjkz over the static start sets), f_jkpz marks free permissible
starts, rows (10), (11), (13) are written as in docs/model.md#constraints. Linearizations: (14) as written
(Σ_j over PMs the VM did not run on is ≤ 1), (15) per GI: ω_i ≥ Σ_jkz (1 − y')·y over the positions of that
GI. A VM without GIs has no (15) row, so the literal form charges δ_i, not 2δ_i, when it changes PM;
use it on VMs with GIs only.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyomo.environ as pyo

from origamig.bilp.restrict import Region
from origamig.cluster.records import GiSlot, Placement, Weights


@dataclass(frozen=True)
class LiteralModel:
    pyomo: pyo.ConcreteModel


def build_literal(region: Region, w: Weights) -> LiteralModel:
    m = pyo.ConcreteModel()
    r = region
    gpus = [(j, k) for j in r.pms for k in range(len(r.pm_specs[j].gpus))]
    X = [(i, j) for i in r.vms for j in r.pms]
    Y = []
    for i, vm in r.vms.items():
        for v, prof in enumerate(vm.gis):
            for j, k in gpus:
                g = r.pm_specs[j].gpus[k]
                if g.gpu_class == prof.gpu_class and g.has_profile(prof.name):
                    Y += [(i, v, j, k, z) for z in g.profile(prof.name).starts]
    F = [(j, k, p.index, z) for j, k in gpus for p in r.pm_specs[j].gpus[k].profiles for z in p.starts]
    prev = r.previous
    y_prev = {(i, v, pl.pm, s.gpu, s.start) for i, pl in prev.items() for v, s in enumerate(pl.gis)}
    m.x = pyo.Var(X, domain=pyo.Binary)
    m.y = pyo.Var(Y, domain=pyo.Binary)
    m.phi = pyo.Var(list(r.pms), domain=pyo.Binary)
    m.gamma = pyo.Var(gpus, domain=pyo.Binary)
    m.f = pyo.Var(F, domain=pyo.Binary)
    m.mig = pyo.Var(list(prev), domain=pyo.Binary)
    m.omega = pyo.Var(list(prev), domain=pyo.Binary)
    m.rows = pyo.ConstraintList()

    def add(row) -> None:
        if not isinstance(row, bool):  # an empty sum compared with a number is trivially true
            m.rows.add(row)

    for j in r.pms:
        pm = r.pm_specs[j]
        add(sum(r.vms[i].cpu_m * m.x[i, j] for i in r.vms) <= pm.cpu_m)  # (6)
        add(sum(r.vms[i].ram_mb * m.x[i, j] for i in r.vms) <= pm.ram_mb)  # (7)
    for i in r.vms:
        total = sum(m.x[i, j] for j in r.pms)
        add(total == 1 if i in prev else total <= 1)  # (8)
        for v in range(len(r.vms[i].gis)):
            for j in r.pms:  # (9)
                add(sum(m.y[key] for key in Y if key[:3] == (i, v, j)) == m.x[i, j])
    covering = {}
    for key in Y:
        i, v, j, k, z = key
        for u in range(z, z + r.vms[i].gis[v].memory_slices):
            covering.setdefault((j, k, u), []).append(m.y[key])
    for j, k in gpus:
        model = r.pm_specs[j].gpus[k]
        for u in range(model.memory_slices):
            add(sum(covering.get((j, k, u), [])) <= m.gamma[j, k])  # (10)
        for p in model.profiles:
            for z in p.starts:
                add(m.f[j, k, p.index, z] <= m.gamma[j, k])  # (11)
                for u in range(z, z + p.memory_slices):
                    add(m.f[j, k, p.index, z] + sum(covering.get((j, k, u), [])) <= 1)  # (11)
        add(m.gamma[j, k] <= sum(m.y[key] for key in Y if key[2:4] == (j, k)))  # (13)
    for i, j in X:
        add(m.x[i, j] <= m.phi[j])  # (12)
    for i, pl in prev.items():
        add(m.mig[i] >= sum(m.x[i, j] for j in r.pms if j != pl.pm))  # (14)
        for v in range(len(r.vms[i].gis)):  # (15)
            add(m.omega[i] >= sum(m.y[key] for key in Y if key[:2] == (i, v) and key not in y_prev))
    obj = sum(w.a(r.vms[i]) * m.x[i, j] for i, j in X)
    obj -= sum(w.b(r.pm_specs[j]) * m.phi[j] for j in r.pms) + sum(w.gpu * m.gamma[g] for g in gpus)
    obj -= sum(w.delta(r.vms[i]) * (m.mig[i] + m.omega[i]) for i in prev)
    obj += sum(w.w(r.pm_specs[j].gpus[k].profiles[p].name) * m.f[j, k, p, z] for j, k, p, z in F)
    m.obj = pyo.Objective(expr=obj, sense=pyo.maximize)
    for (i, j), var in m.x.items():  # start: the current placement, pending VMs rejected
        var.value = int(i in prev and prev[i].pm == j)
    for key, var in m.y.items():
        var.value = int(key in y_prev)
    for j, var in m.phi.items():
        var.value = int(any(pl.pm == j for pl in prev.values()))
    for (j, k), var in m.gamma.items():
        var.value = int(any(pl.pm == j and any(s.gpu == k for s in pl.gis) for pl in prev.values()))
    for var in [*m.mig.values(), *m.omega.values()]:
        var.value = 0
    for var in m.f.values():
        var.value = 0
    return LiteralModel(m)


def literal_placement(lit: LiteralModel, region: Region, values: dict[int, float]) -> dict[str, Placement]:
    """The placement a literal solution describes (`values`: id(var) → value)."""
    m = lit.pyomo

    def on(var) -> bool:
        return values.get(id(var), var.value or 0) > 0.5

    pm_of = {i: j for (i, j), var in m.x.items() if on(var)}
    slot = {(i, v): GiSlot(k, z) for (i, v, j, k, z), var in m.y.items() if on(var)}
    return {
        i: Placement(pm_of[i], tuple(slot[(i, v)] for v in range(len(region.vms[i].gis))))
        for i in region.vms
        if i in pm_of
    }
