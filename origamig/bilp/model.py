"""The BILP of paper Eq. (4)–(16) for one region — the only place its equations are written.

Production form: the exact, position-free *configuration form* (docs/model.md#configuration-form).
Instead of a start slice per GI (y_ivjkz) and free-start indicators f_jkpz, each active GPU picks
one configuration c (a set of (profile, start) placements, `configurations.py`) whose weighted CF
replaces Σ_pz w_p f_jkpz, and the GIs are assigned to GPUs only (y_ivjk). Variables:

    x[i,j]       VM i runs on PM j                          (paper x_ij)
    y[i,v,j,k]   GI v of VM i runs on GPU k of PM j         (paper Σ_z y_ivjkz)
    q[j,k,c]     GPU jk uses configuration c                (replaces f_jkpz via CF(c))
    gamma[j,k], phi[j]   GPU / PM active                    (paper γ_jk, φ_j)
    mig[i], omega[i]     running VM i changes PM / any GI slot (paper m_i, ω_i)
    stay[i,v]    GI v of running VM i keeps its previous GPU and start
    npm[h], ngpu[h]      integer counts of active PMs carrying class h / active GPUs of class h

Rows (paper numbers where one exists):
    (6)(7)  Σ_i cpu_i x_ij ≤ CPU_j φ_j,  Σ_i ram_i x_ij ≤ RAM_j φ_j   (also (12) in aggregate)
    (8)     Σ_j x_ij = 1 for a running VM, ≤ 1 for a pending one
    (9)     Σ_k y_ivjk = x_ij
    (10)(11)(13)  Σ_c q_jkc = γ_jk and, per profile p, Σ_{GIs of p} y_ivjk = Σ_c n_c(p) q_jkc:
            the GIs on a GPU are exactly the GIs of its configuration, which places them without
            overlap; the empty configuration is not a column, so γ_jk = 1 needs a GI on jk
    (12)    x_ij ≤ φ_j; and γ_jk ≤ φ_j (valid, and the row that makes the LP bound useful)
    (14)    mig_i ≥ 1 − x_{i,prevPM}
    (15)    stay_iv ≤ y_{iv,prevGPU}, stay_iv ≤ Σ_{c ∋ prev slot} q_{prevGPU,c}, omega_i ≥ 1 − stay_iv;
            a VM without GIs has omega_i ≥ mig_i (the referee counts m_i + ω_i = 2 for any PM change)
    cuts    rounded capacity cuts on the integer counts npm[h], ngpu[h]

Objective (maximize) = Σ a_i x_ij − Σ b_j φ_j − Σ e γ_jk − Σ δ_i (m_i + ω_i) + Σ CF_w(c) q_jkc, which is
exactly `objective.evaluate` of the decoded placement over the region's PMs and VMs (relative to the
current placement) at every solution whose m, ω, φ are at their least feasible values — in
particular at every optimum. Exactness vs the literal Eq. (4)–(16): given the GIs per profile on a
GPU, staying GIs keep their slot (it lies in c) and the others take c's remaining placements of
their profile in any order; that is how `compile.decode` assigns start slices.
"""

from __future__ import annotations

import gc
import itertools
import math
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

import pyomo.core as pyo  # not pyomo.environ: its solver/writer plugins cost ~0.2 s, unused here
from pyomo.core.expr.numeric_expr import LinearExpression, MonomialTermExpression

from origamig.bilp.configurations import (
    Configuration,
    cf_table,
    configuration_of,
    enumerate_configurations,
    fitting_configurations,
    usable_configurations,
)
from origamig.bilp.restrict import Region
from origamig.cluster.catalog import GpuModel
from origamig.cluster.records import Weights

Gpu = tuple[int, int]  # (PM index, GPU index on it)


@dataclass(frozen=True)
class BilpModel:
    """A built region model: the Pyomo model plus the tables needed to decode its solutions."""

    pyomo: pyo.ConcreteModel
    region: Region
    weights: Weights
    gpu_models: dict[Gpu, GpuModel]
    configs: dict[Gpu, tuple[Configuration, ...]]  # all configurations of each GPU's model

    def configuration(self, gpu: Gpu, c: int) -> Configuration:
        return self.configs[gpu][c]


def build_model(
    region: Region, weights: Weights, symmetry: bool = False, unpruned: Collection[Gpu] = ()
) -> BilpModel:
    """The configuration-form BILP of `region`, with the current placement as start values.

    `symmetry=True` adds order rows between interchangeable empty PMs (same spec, no VM now) and
    between empty GPUs of one model on one PM; they keep at least one optimum (see the benchmark
    for whether they pay). The GPUs in `unpruned` get every configuration, dominated ones included
    (`configurations.fitting_configurations`; for the GPUs a no-good cut names, `nogood.py`).
    """
    paused = gc.isenabled()
    gc.disable()  # Pyomo allocates ~10^5 small objects here; cyclic GC passes would double the time
    try:
        b = _Builder(region, weights, frozenset(unpruned))
        b.variables()
        b.rows()
        if symmetry:
            b.symmetry_rows()
        b.objective()
    finally:
        if paused:
            gc.enable()
    return BilpModel(
        b.m, region, weights, b.gpu_model, {g: enumerate_configurations(md) for g, md in b.gpu_model.items()}
    )


class _Builder:
    """Index sets, start values and rows of one region model (internal to `build_model`)."""

    def __init__(self, region: Region, weights: Weights, unpruned: frozenset[Gpu] = frozenset()) -> None:
        self.r = region
        self.w = weights
        self.m = pyo.ConcreteModel(name="origamig_bilp")
        self.gpu_model: dict[Gpu, GpuModel] = {
            (j, k): g for j in region.pms for k, g in enumerate(region.pm_specs[j].gpus)
        }
        self.prev_slots: dict[Gpu, set[tuple[int, int]]] = {g: set() for g in self.gpu_model}
        self.prev_gi: dict[tuple[str, int], tuple[Gpu, tuple[int, int]]] = {}
        for i, pl in region.previous.items():
            for v, (prof, slot) in enumerate(zip(region.vms[i].gis, pl.gis, strict=True)):
                gpu = (pl.pm, slot.gpu)
                s = (self.gpu_model[gpu].profile(prof.name).index, slot.start)
                self.prev_slots[gpu].add(s)
                self.prev_gi[(i, v)] = (gpu, s)
        self.gis_by_class: dict[tuple[str, str], int] = {}
        for vm in region.vms.values():
            for choice in vm.gi_choices:
                for prof in choice:
                    key = (prof.gpu_class, prof.name)
                    self.gis_by_class[key] = self.gis_by_class.get(key, 0) + 1
        self.usable: dict[Gpu, tuple[int, ...]] = {}
        for gpu, md in self.gpu_model.items():
            avail = tuple(self.gis_by_class.get((md.gpu_class, p.name), 0) for p in md.profiles)
            if gpu in unpruned:
                self.usable[gpu] = fitting_configurations(md, avail)
            else:
                self.usable[gpu] = usable_configurations(md, avail, frozenset(self.prev_slots[gpu]), weights)

    # --- candidates ----------------------------------------------------------------------------
    def _gi_gpus(self, prof_name: str, prof_class: str, j: int) -> list[int]:
        return [
            k
            for k, g in enumerate(self.r.pm_specs[j].gpus)
            if g.gpu_class == prof_class and g.has_profile(prof_name) and self.usable[(j, k)]
        ]

    def _candidates(self) -> None:
        """x and y columns: each VM on each PM with its CPU/RAM where every GI has a GPU (of one class
        the VM may run on); a pinned VM (`migratable` false) only where it runs, on its GPUs; without
        intra-PM moves, a running VM on its own PM only on its GPUs. `self.classes` lists, per (VM,
        PM), the classes it may take there when they are several (a choice row then keeps its GIs on
        one class)."""
        self.X: list[tuple[str, int]] = []
        self.Y: list[tuple[str, int, int, int]] = []
        self.classes: dict[tuple[str, int], list[tuple[str, list[list[int]]]]] = {}
        r = self.r
        for i, vm in r.vms.items():
            prev = r.previous.get(i)
            for j in r.pms:
                pm = r.pm_specs[j]
                if vm.cpu_m > pm.cpu_m or vm.ram_mb > pm.ram_mb:
                    continue
                at_home = prev is not None and prev.pm == j
                if prev is not None and not vm.migratable and not at_home:
                    continue
                if at_home and (not vm.migratable or not r.intra_pm_moves):
                    assert prev is not None
                    options = [(vm.gpu_class, [[slot.gpu] for slot in prev.gis])]
                else:
                    options = [
                        (choice[0].gpu_class, [self._gi_gpus(p.name, p.gpu_class, j) for p in choice])
                        for choice in vm.gi_choices
                        if choice
                    ]
                    options = [(h, per_gi) for h, per_gi in options if all(per_gi)] or (
                        [(vm.gpu_class, [self._gi_gpus(p.name, p.gpu_class, j) for p in vm.gis])]
                        if at_home
                        else []
                    )
                if vm.gis and not options:
                    continue
                self.X.append((i, j))
                gpus = {(v, k) for _, per_gi in options for v, ks in enumerate(per_gi) for k in ks}
                self.Y.extend((i, v, j, k) for v, k in sorted(gpus))
                if len(options) > 1:
                    self.classes[(i, j)] = options

    # --- variables with start values -----------------------------------------------------------
    def variables(self) -> None:
        """Variables without initial values (Pyomo then builds them ~4× faster); the start values —
        the current placement, pending VMs rejected — are set on the few variables that are 1."""
        self._candidates()
        r, m = self.r, self.m
        prev = r.previous
        self.Q = [(j, k, c) for (j, k), cs in self.usable.items() for c in cs]
        binary = pyo.Binary
        m.x = pyo.Var(self.X, domain=binary)
        m.y = pyo.Var(self.Y, domain=binary)
        m.q = pyo.Var(self.Q, domain=binary)
        m.gamma = pyo.Var(list(self.gpu_model), domain=binary)
        m.phi = pyo.Var(list(r.pms), domain=binary)
        m.mig = pyo.Var(list(prev), domain=binary)
        m.omega = pyo.Var(list(prev), domain=binary)
        m.stay = pyo.Var(list(self.prev_gi), domain=binary)
        self.Z = [(i, j, h) for (i, j), options in self.classes.items() for h, _ in options]
        m.z = pyo.Var(self.Z, domain=binary)
        self.vx, self.vy, self.vq = dict(m.x.items()), dict(m.y.items()), dict(m.q.items())
        self.vgamma, self.vphi = dict(m.gamma.items()), dict(m.phi.items())
        self.vmig, self.vomega, self.vstay = dict(m.mig.items()), dict(m.omega.items()), dict(m.stay.items())
        self.vz = dict(m.z.items())
        for var in self.vz.values():
            var.set_value(0, skip_validation=True)
        for var in [*self.vx.values(), *self.vy.values(), *self.vq.values(), *self.vgamma.values()]:
            var.set_value(0, skip_validation=True)
        for var in [*self.vphi.values(), *self.vmig.values(), *self.vomega.values()]:
            var.set_value(0, skip_validation=True)
        for i, pl in prev.items():
            self.vx[(i, pl.pm)].set_value(1, skip_validation=True)
            self.vphi[pl.pm].set_value(1, skip_validation=True)
        for (i, v), (gpu, _) in self.prev_gi.items():
            self.vy[(i, v, *gpu)].set_value(1, skip_validation=True)
            self.vstay[(i, v)].set_value(1, skip_validation=True)
        for g, md in self.gpu_model.items():
            if self.prev_slots[g]:
                self.vq[(*g, configuration_of(md, frozenset(self.prev_slots[g])))].set_value(
                    1, skip_validation=True
                )
                self.vgamma[g].set_value(1, skip_validation=True)

    # --- rows ----------------------------------------------------------------------------------
    def _rows(
        self, name: str, rows: Iterable[tuple[Sequence[tuple[float, object]], float | None, float | None]]
    ) -> None:
        """Add rows given as (terms [(coef, var)], lower, upper)."""
        cl = pyo.ConstraintList()
        self.m.add_component(name, cl)
        for terms, lo, hi in rows:
            cl.add((lo, LinearExpression([MonomialTermExpression(t) for t in terms]), hi))

    def rows(self) -> None:
        r = self.r
        x, y, q, phi, gamma = self.vx, self.vy, self.vq, self.vphi, self.vgamma
        mig, omega, stay = self.vmig, self.vomega, self.vstay
        x_of_vm: dict[str, list[int]] = {}
        x_on_pm: dict[int, list[str]] = {j: [] for j in r.pms}
        for i, j in self.X:
            x_of_vm.setdefault(i, []).append(j)
            x_on_pm[j].append(i)
        y_of: dict[tuple[str, int, int], list[int]] = {}
        y_on: dict[tuple[int, int, str], list[tuple[str, int]]] = {}
        for i, v, j, k in self.Y:
            y_of.setdefault((i, v, j), []).append(k)
            y_on.setdefault((j, k, r.vms[i].gis[v].name), []).append((i, v))
        vms = r.vms
        self._rows("cpu", self._capacity_rows(x_on_pm, "cpu_m"))
        self._rows("ram", self._capacity_rows(x_on_pm, "ram_mb"))
        self._rows(
            "assign",
            (([(1, x[i, j]) for j in js], 1 if i in r.previous else None, 1) for i, js in x_of_vm.items()),
        )
        self._rows(
            "gi",
            (
                ([(1, y[i, v, j, k]) for k in y_of.get((i, v, j), ())] + [(-1, x[i, j])], 0, 0)
                for i, j in self.X
                if (i, j) not in self.classes
                for v in range(len(vms[i].gis))
            ),
        )
        self._rows("class_choice", self._class_rows())
        self._rows("host", (([(1, x[i, j]), (-1, phi[j])], None, 0) for i, j in self.X))
        self._rows("gpu_pm", (([(1, gamma[j, k]), (-1, phi[j])], None, 0) for j, k in self.gpu_model))
        self._rows(
            "conf",
            (
                ([(1, q[j, k, c]) for c in cs] + [(-1, gamma[j, k])], 0, 0)
                for (j, k), cs in self.usable.items()
            ),
        )
        self._rows("count", self._count_rows(y_on))
        self._rows("mig_row", (([(1, mig[i]), (1, x[i, pl.pm])], 1, None) for i, pl in r.previous.items()))
        self._rows(
            "stay_gpu",
            (
                ([(1, stay[i, v]), (-1, y[i, v, g[0], g[1]])], None, 0)
                for (i, v), (g, _) in self.prev_gi.items()
            ),
        )
        self._rows("stay_slot", self._stay_slot_rows())
        self._rows("omega_gi", (([(1, omega[i]), (1, stay[i, v])], 1, None) for i, v in self.prev_gi))
        self._rows(
            "omega_nogi", (([(1, omega[i]), (-1, mig[i])], 0, None) for i in r.previous if not vms[i].gis)
        )
        self._rows("pinned", self._pinned_rows())
        self._count_cuts(x_of_vm)

    def _class_rows(self) -> Iterable[tuple]:
        """A VM that may take several classes on PM j takes one (z) and puts each GI on its GPUs:
        Σ_h z_ijh = x_ij and, per GI v and class h, Σ_{k of h} y_ivjk = z_ijh."""
        x, y, z = self.vx, self.vy, self.vz
        for (i, j), options in self.classes.items():
            yield [(1, z[i, j, h]) for h, _ in options] + [(-1, x[i, j])], 0, 0
            for h, per_gi in options:
                for v, ks in enumerate(per_gi):
                    yield [(1, y[i, v, j, k]) for k in ks] + [(-1, z[i, j, h])], 0, 0

    def _pinned_rows(self) -> Iterable[tuple]:
        """GIs that keep their slot whenever their VM stays on its PM: every GI of a pinned VM
        (`migratable` false, which has no other PM either), and, without intra-PM moves, every GI of
        a VM that stays on its PM (stay_iv ≥ x_{i,prevPM})."""
        r, x, stay = self.r, self.vx, self.vstay
        for (i, v), _ in self.prev_gi.items():
            pl = r.previous[i]
            if not r.vms[i].migratable:
                yield [(1, stay[i, v])], 1, None
            elif not r.intra_pm_moves:
                yield [(1, stay[i, v]), (-1, x[i, pl.pm])], 0, None

    def _capacity_rows(self, x_on_pm: dict[int, list[str]], field: str) -> Iterable[tuple]:
        """(6)/(7) as Σ_i c_i x_ij ≤ C_j φ_j, divided by the gcd of the coefficients and C_j rounded
        down (exact for binary φ; keeps the coefficient range small for the LP)."""
        r, x, phi = self.r, self.vx, self.vphi
        for j, ids in x_on_pm.items():
            if not ids:
                continue
            need = [getattr(r.vms[i], field) for i in ids]
            g = math.gcd(*need) or 1
            cap = getattr(r.pm_specs[j], field) // g
            yield [(c // g, x[i, j]) for c, i in zip(need, ids, strict=True)] + [(-cap, phi[j])], None, 0

    def _count_rows(self, y_on: dict[tuple[int, int, str], list[tuple[str, int]]]) -> Iterable[tuple]:
        y, q = self.vy, self.vq
        for (j, k), cs in self.usable.items():
            md = self.gpu_model[(j, k)]
            confs = enumerate_configurations(md)
            for p in md.profiles:
                terms = [(1, y[i, v, j, k]) for i, v in y_on.get((j, k, p.name), ())]
                terms += [(-confs[c].counts[p.index], q[j, k, c]) for c in cs if confs[c].counts[p.index]]
                if terms:
                    yield terms, 0, 0

    def _stay_slot_rows(self) -> Iterable[tuple]:
        q, stay = self.vq, self.vstay
        for (i, v), ((j, k), slot) in self.prev_gi.items():
            confs = enumerate_configurations(self.gpu_model[(j, k)])
            holding = [(-1, q[j, k, c]) for c in self.usable[(j, k)] if slot in confs[c].slots]
            yield [(1, stay[i, v]), *holding], None, 0

    def _count_cuts(self, x_of_vm: dict[str, list[int]]) -> None:
        """Integer counts of active PMs / GPUs per class and rounded capacity cuts on them."""
        r, m, x = self.r, self.m, self.vx
        classes = sorted({md.gpu_class for md in self.gpu_model.values()})
        slices = {md.gpu_class: md.memory_slices for md in self.gpu_model.values()}
        gpus_of = {h: [g for g, md in self.gpu_model.items() if md.gpu_class == h] for h in classes}
        pms_of = {h: sorted({j for j, _ in gpus_of[h]}) for h in classes}
        per_pm = {
            h: max(sum(1 for jj, _ in gpus_of[h] if jj == j) for j in pms_of[h]) * slices[h] for h in classes
        }
        m.ngpu = pyo.Var(classes, domain=pyo.NonNegativeIntegers, bounds=lambda _, h: (0, len(gpus_of[h])))
        m.npm = pyo.Var(classes, domain=pyo.NonNegativeIntegers, bounds=lambda _, h: (0, len(pms_of[h])))
        rows: list[tuple] = []
        for h in classes:
            m.ngpu[h].set_value(sum(self.vgamma[g].value for g in gpus_of[h]))
            m.npm[h].set_value(sum(self.vphi[j].value for j in pms_of[h]))
            rows.append(([(1, m.ngpu[h])] + [(-1, self.vgamma[g]) for g in gpus_of[h]], 0, 0))
            rows.append(([(1, m.npm[h])] + [(-1, self.vphi[j]) for j in pms_of[h]], 0, 0))
            run = sum(r.vms[i].memory_slices for i in r.previous if r.vms[i].gpu_class == h)
            pend = [  # a VM that may run on several classes is left out (the cuts stay valid)
                i
                for i in r.pending
                if r.vms[i].gpu_class == h
                and not r.vms[i].alternatives
                and r.vms[i].memory_slices
                and i in x_of_vm
            ]
            for count, cap in ((m.ngpu[h], slices[h]), (m.npm[h], per_pm[h])):
                # cap·count ≥ slices of the admitted VMs of class h
                accepted = [(-r.vms[i].memory_slices, x[i, j]) for i in pend for j in x_of_vm[i]]
                rows.append(([(cap, count), *accepted], run, None))
                # count ≥ ⌈S/cap⌉ − Σ_pending ⌈s_i/cap⌉ (1 − admitted_i), and count ≥ ⌈S_running/cap⌉
                up = {i: math.ceil(r.vms[i].memory_slices / cap) for i in pend}
                total = math.ceil((run + sum(r.vms[i].memory_slices for i in pend)) / cap)
                rounded = [(-up[i], x[i, j]) for i in pend for j in x_of_vm[i]]
                rows.append(([(1, count)], math.ceil(run / cap), None))
                if pend:
                    rows.append(([(1, count), *rounded], total - sum(up.values()), None))
        self._rows("capacity_cut", rows)

    def symmetry_rows(self) -> None:
        """Order rows among interchangeable empty PMs and among empty same-model GPUs of a PM."""
        r, phi, gamma = self.r, self.vphi, self.vgamma
        hosts = {pl.pm for pl in r.previous.values()}
        groups: dict[tuple, list[int]] = {}
        for j in r.pms:
            if j not in hosts:
                s = r.pm_specs[j]
                groups.setdefault((s.cpu_m, s.ram_mb, tuple(g.name for g in s.gpus), s.weight), []).append(j)
        rows = [
            ([(1, phi[a]), (-1, phi[b])], 0, None)
            for js in groups.values()
            for a, b in itertools.pairwise(js)
        ]
        for j in r.pms:
            by_model: dict[str, list[int]] = {}
            for k, g in enumerate(r.pm_specs[j].gpus):
                if not self.prev_slots[(j, k)]:
                    by_model.setdefault(g.name, []).append(k)
            rows += [
                ([(1, gamma[j, a]), (-1, gamma[j, b])], 0, None)
                for ks in by_model.values()
                for a, b in itertools.pairwise(ks)
            ]
        self._rows("symmetry", rows)

    # --- objective -----------------------------------------------------------------------------
    def objective(self) -> None:
        r, w = self.r, self.w
        terms = [(w.a(r.vms[i]), var) for (i, _), var in self.vx.items()]
        terms += [(-w.b(r.pm_specs[j]), var) for j, var in self.vphi.items()]
        terms += [(-w.gpu, var) for var in self.vgamma.values()]
        terms += [(-w.delta(r.vms[i]), var) for i, var in [*self.vmig.items(), *self.vomega.items()]]
        cf_of = {md.name: cf_table(md, w) for md in self.gpu_model.values()}
        for (j, k, c), var in self.vq.items():
            cf = cf_of[self.gpu_model[(j, k)].name][c]
            if cf:
                terms.append((cf, var))
        self.m.obj = pyo.Objective(
            expr=LinearExpression([MonomialTermExpression(t) for t in terms]), sense=pyo.maximize
        )
