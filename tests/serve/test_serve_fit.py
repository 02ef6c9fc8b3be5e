"""The live policy's arrival rule on one PM (`serve/fit.py`), for each of OrigaMIG's arrival rules."""

from __future__ import annotations

from origamig.cluster.records import VmSpec
from origamig.policies.arrival_rule import gi_order
from origamig.policies.base import make_policy
from origamig.serve.fit import arrival_fit, fit_on_pm
from tests.builders import A100, at, datacenter, pm, vm


def test_the_extender_s_fit_follows_the_policy_s_arrival_rule_fgd_s_with_what_it_has_read() -> None:
    dc = datacenter([pm("pm0", gpus=[A100])])
    small = vm("small", ["1g.5gb"])
    policy = make_policy("origamig", arrival="fgd")
    big = vm("big", ["4g.20gb"])
    for n in range(7):  # the workload FGD reads from the arrivals: 4g.20gb VMs
        policy.arrive(dc, VmSpec(f"seen{n}", big.cpu_m, big.ram_mb, big.gis), 0.0, frozenset())
    # FGD keeps 4g.20gb's window 0–3 free: start 4; TC's rule and first fit take the default start 6.
    fit = fit_on_pm(dc, 0, small, arrival_fit(policy))
    assert not isinstance(fit, str) and fit[1] == at(0, (0, 4))
    assert fit == policy.fgd_rule.fit(dc, 0, small, gi_order(small))
    for rule in ("tc", "ff"):
        other = fit_on_pm(dc, 0, small, arrival_fit(make_policy("origamig", arrival=rule)))
        assert not isinstance(other, str) and other[1] == at(0, (0, 6))
