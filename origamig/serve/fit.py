"""The live policy's arrival rule on one PM: where a request goes on a node it is asked about
(`/k8s/filter`, `/k8s/prioritize`) or bound to (`POST /v1/vms` with `"pm"`).

The rule is the OrigaMIG policy's own (`arrival`: TC's best fit, first fit or FGD's,
docs/policies.md), PM by PM, over every GPU model of that PM that offers the request's profiles: the
exact, start-slice-aware fit on the live state, no solver.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import MILLI, Placement, VmSpec
from origamig.policies.arrival_rule import class_gpus, first_fit_on_pm, gi_order, variants_on
from origamig.policies.tc.rule import tc_fit_on_pm

PmFit = Callable[[DataCenter, int, VmSpec, tuple[int, ...]], "tuple[Any, Placement] | None"]


# The per-PM fit of each arrival rule of the OrigaMIG policy (`arrival`): key (lower is preferred,
# ties to the lower PM) and placement, or None.
ARRIVAL_FITS: dict[str, PmFit] = {"ff": first_fit_on_pm, "tc": tc_fit_on_pm}


def arrival_fit(policy: Any) -> PmFit:
    """The per-PM fit of `policy`'s arrival rule (first fit for a policy without `arrival`); FGD's
    (`arrival="fgd"`) is the policy's own, with the typical VMs it has read so far."""
    rule = getattr(policy, "fgd_rule", None)
    return rule.fit if rule is not None else ARRIVAL_FITS[getattr(policy, "arrival", "ff")]


def start_problems(dc: DataCenter, vm: VmSpec, placement: Placement) -> list[str]:
    """Each GI of `placement` set at a start slice its profile never takes on that GPU's model, with
    the starts it takes (`placement.gis[0]: 3g.40gb cannot start at slice 2 of an H100-80GB (its
    starts: 0, 4)`); [] when every start is a permitted one."""
    if not 0 <= placement.pm < len(dc.pms):
        return []
    gpus = dc.pms[placement.pm].gpus
    out = []
    for n, slot in enumerate(placement.gis):
        if not 0 <= slot.gpu < len(gpus) or n >= len(vm.gis):
            continue
        model = gpus[slot.gpu]
        name = vm.gis[n].name
        if model.has_profile(name) and slot.start not in (starts := model.profile(name).starts):
            allowed = ", ".join(map(str, starts))
            out.append(
                f"placement.gis[{n}]: {name} cannot start at slice {slot.start} of an {model.name} "
                f"(its starts: {allowed})"
            )
    return out


def fit_on_pm(dc: DataCenter, j: int, vm: VmSpec, fit: PmFit) -> tuple[Any, Placement] | str:
    """The rule's best (key, placement) for `vm` on PM j over the GPU models of j that offer its
    profiles, or why it does not fit there."""
    variants = [v for v in variants_on(dc, j, vm) if not v.gis or class_gpus(dc, j, v.gpu_class)]
    if vm.gis and not variants:
        models = " or ".join(dict.fromkeys(c[0].gpu_model for c in vm.gi_choices))
        here = " and ".join(dict.fromkeys(g.name for g in dc.pms[j].gpus)) or "no GPU"
        return f"no {models} GPU ({dc.pms[j].id} has {here})"
    if not dc.fits_resources(vm, j):
        free = f"{dc.free_cpu_m(j) / MILLI:g} cores and {dc.free_ram_mb(j) / MILLI:g} GB"
        return f"needs {vm.cpu:g} cores and {vm.ram_gb:g} GB; free {free}"
    if not vm.gis:  # a VM without GIs needs only the CPU and RAM
        return (), Placement(j, ())
    hits = [hit for v in variants if (hit := fit(dc, j, v, gi_order(v))) is not None]
    if not hits:
        return f"no free permitted start slices for every GI ({', '.join(p.name for p in vm.gis)})"
    return min(hits, key=lambda h: h[0])
