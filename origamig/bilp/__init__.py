"""The BILP optimizer: restrict to a region, build (Pyomo), compile, LP bound, solve (HiGHS / CP-SAT), decode.

`solve_region(dc, region_pms, pending, weights)` optimizes Eq. (5) over the running VMs of
`region_pms` plus the given pending VMs, everything else fixed. The solver objective is
`objective.evaluate(dc.pms, region VMs, target, dc.placement, weights, region_pms, region VMs)`,
i.e. Eq. (5) over the region's PMs and VMs only (for an unproved incumbent it is that value of the
returned placement, which can exceed the solver's own figure); the rest of the data center adds a constant
(`restrict.fixed_constant`). With region_pms = every PM and every pending VM it is OPT.

Names load on first use (as in the `origamig` package), so that importing a submodule — a solver's
helper process imports `bilp.backends` and `bilp.standard_form` — does not import Pyomo.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# Imported at once (no Pyomo behind it): the function `restrict` has the name of its module, which
# a later submodule import would otherwise leave in its place.
from origamig.bilp.restrict import Region, fixed_constant, restrict
from origamig.lazy import lazy_names

if TYPE_CHECKING:
    from origamig.bilp.backends.base import Limits, SolveResult, available
    from origamig.bilp.bound import NoChangeProof, no_change_proof
    from origamig.bilp.compile import compile_model, decode
    from origamig.bilp.model import BilpModel, build_model
    from origamig.bilp.nogood import NoGood
    from origamig.bilp.region_solve import RegionSolution, solve_region
    from origamig.bilp.standard_form import Compiled
    from origamig.solver_registry import backend_names

# Public name → the module that defines it (imported when the name is first read).
_HOMES: dict[str, str] = {
    "BilpModel": "origamig.bilp.model",
    "Compiled": "origamig.bilp.standard_form",
    "Limits": "origamig.bilp.backends.base",
    "NoChangeProof": "origamig.bilp.bound",
    "NoGood": "origamig.bilp.nogood",
    "RegionSolution": "origamig.bilp.region_solve",
    "SolveResult": "origamig.bilp.backends.base",
    "available": "origamig.bilp.backends.base",
    "backend_names": "origamig.solver_registry",
    "build_model": "origamig.bilp.model",
    "compile_model": "origamig.bilp.compile",
    "decode": "origamig.bilp.compile",
    "no_change_proof": "origamig.bilp.bound",
    "solve_region": "origamig.bilp.region_solve",
}
__all__ = [
    "BilpModel",
    "Compiled",
    "Limits",
    "NoChangeProof",
    "NoGood",
    "Region",
    "RegionSolution",
    "SolveResult",
    "available",
    "backend_names",
    "build_model",
    "compile_model",
    "decode",
    "fixed_constant",
    "no_change_proof",
    "restrict",
    "solve_region",
]


__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals())
