"""The live policy's arrival rule on one PM: where a request goes on a node it is asked about
(`/k8s/filter`, `/k8s/prioritize`) or bound to (`POST /v1/vms` with `"pm"`).

The rule is the OrigaMIG policy's own (`arrival`: TC's best fit or first fit, docs/policies.md), PM by
PM, over every GPU model of that PM that offers the request's profiles: the exact, start-slice-aware
fit on the live state, no solver.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from origamig.cluster.datacenter import DataCenter
from origamig.cluster.records import MILLI, Placement, VmSpec
from origamig.policies.arrival_rule import first_fit_on_pm, gi_order, variants_on
from origamig.policies.tc.rule import tc_fit_on_pm

PmFit = Callable[[DataCenter, int, VmSpec, tuple[int, ...]], "tuple[Any, Placement] | None"]


# The per-PM fit of each arrival rule of the OrigaMIG policy (`arrival`): key (lower is preferred,
# ties to the lower PM) and placement, or None.
ARRIVAL_FITS: dict[str, PmFit] = {"ff": first_fit_on_pm, "tc": tc_fit_on_pm}


def arrival_fit(policy: Any) -> PmFit:
    """The per-PM fit of `policy`'s arrival rule (first fit for a policy without `arrival`)."""
    return ARRIVAL_FITS[getattr(policy, "arrival", "ff")]


def fit_on_pm(dc: DataCenter, j: int, vm: VmSpec, fit: PmFit) -> tuple[Any, Placement] | str:
    """The rule's best (key, placement) for `vm` on PM j over the GPU models of j that offer its
    profiles, or why it does not fit there."""
    if not dc.fits_resources(vm, j):
        free = f"{dc.free_cpu_m(j) / MILLI:g} cores and {dc.free_ram_mb(j) / MILLI:g} GB"
        return f"needs {vm.cpu:g} cores and {vm.ram_gb:g} GB; free {free}"
    if not vm.gis:  # a VM without GIs needs only the CPU and RAM
        return (), Placement(j, ())
    hits = [hit for v in variants_on(dc, j, vm) if (hit := fit(dc, j, v, gi_order(v))) is not None]
    if not hits:
        if vm.gis and not variants_on(dc, j, vm):
            models = " or ".join(dict.fromkeys(c[0].gpu_model for c in vm.gi_choices))
            return f"no {models} GPU"
        return f"no free permitted start slices for every GI ({', '.join(p.name for p in vm.gis)})"
    return min(hits, key=lambda h: h[0])
