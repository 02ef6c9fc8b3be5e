"""The options of the OrigaMIG policy: one frozen record, validated in one place.

Every parameter of the paper's Table 11 and every extension is a field (docs/policies.md). The
record is what `OrigaMIG` keeps; the CLI (`simulate --option`), the study runner and the benchmarks
pass the same keywords, as JSON values. Closed sets of values are str enums, so that `"fill"` from a
JSON file and `Consolidation.FILL` are one value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from enum import StrEnum
from typing import Any

from origamig.bilp.backends.base import SAFETY_NET_S
from origamig.call.consolidation_neighborhood import Consolidation
from origamig.call.goals import Goal
from origamig.call.neighborhood_bounds import Bound
from origamig.errors import UserError
from origamig.solver_registry import DEFAULT_BACKEND, NOT_DETERMINISTIC, backend_names


class Arrival(StrEnum):
    """How an arriving VM is placed at once (docs/policies.md#arrival-rule)."""

    FF = "ff"  # first fit, the paper's rule
    TC = "tc"  # TC's best fit by joint GPU utilization (the default: fewer PMs and migrations)
    FGD = "fgd"  # FGD's steepest descent of fragmentation (a hybrid: FGD's rule with OrigaMIG's calls)


# The effort budget of a deterministic call (docs/bilp.md#effort-budget): with the repair's answer as
# its start, HiGHS reached the unbudgeted solve's optimum on 54 of 60 recorded 128-PM calls.
DEFAULT_EFFORT_LIMIT = 10
DEFAULT_ARRIVAL = Arrival.TC.value  # a plain string: it is written into stored sweep options
# Options that change how a run is carried out, never its results: a run's stored key leaves them out.
EXECUTION_ONLY = frozenset({"solve_workers"})
_BOOLEAN = (
    "deterministic",
    "random_neighborhoods",
    "admission_calls",
    "consolidation_calls",
    "rotate",
    "spill",
    "reuse_unchanged",
    "gpu_order",
    "primal",
)


@dataclass(frozen=True)
class OrigaMIGOptions:
    """Every option of OrigaMIG; building one checks them all and names each bad one."""

    solver: str = DEFAULT_BACKEND
    time_limit_s: float = 10.0
    threads: int | None = None
    deterministic: bool = False
    work_limit: float | None = None
    # Deterministic HiGHS calls: at most this many of the solver's progress checks (Limits.effort_limit).
    effort_limit: int | None = DEFAULT_EFFORT_LIMIT
    safety_net_s: float | None = SAFETY_NET_S
    m_max: int = 16
    n_max: int = 64
    bound: Bound = Bound.PMS
    theta: int = 1
    timer_s: float | None = None
    random_neighborhoods: bool = False
    seed: int = 0
    admission_calls: bool = True
    consolidation_calls: bool = True
    delta: float | None = None  # the migration penalty δ, replacing the weights' own
    delta_per_gb: float | None = None  # δ_i per GB a move of VM i copies (the paper's §7 suggestion)
    check_interval_s: float = 10.0
    consolidation: Consolidation = Consolidation.FILL
    rotate: bool = False
    spill: bool = False
    reuse_unchanged: bool = True
    arrival: Arrival = Arrival.TC
    grow_to: int | None = None
    calls_per_step: int = 1
    solve_workers: int = 1  # processes that solve a check's side-by-side calls together (same results)
    goal: Goal = Goal.PAPER  # the weights each call decides with (docs/solving.md#goals); serve: balanced
    gpu_order: bool = False  # number a started or moved VM's GIs in GPU order (serve: on; see decide)
    primal: bool = True  # the fast primal answer as each call's start (bilp/primal.py)
    call_time_scale: float = 1.0  # each call lasts its modeled time × this (deterministic runs only)

    def __post_init__(self) -> None:
        problems = _problems(self)
        if problems:
            raise UserError(problems)
        kinds = (("bound", Bound), ("consolidation", Consolidation), ("arrival", Arrival), ("goal", Goal))
        for name, kind in kinds:
            object.__setattr__(self, name, kind(getattr(self, name)))

    @classmethod
    def names(cls) -> frozenset[str]:
        """The option names (the record's fields)."""
        return frozenset(f.name for f in fields(cls))

    @classmethod
    def of(cls, options: Mapping[str, Any], base: OrigaMIGOptions | None = None) -> OrigaMIGOptions:
        """`base` (default: the defaults) with keyword `options` changed; an unknown name is a
        `UserError` naming the known ones."""
        unknown = sorted(set(options) - cls.names())
        if unknown:
            known = ", ".join(sorted(cls.names()))
            raise UserError([f"{k}: not an option of origamig (known: {known})" for k in unknown])
        return replace(base, **options) if base is not None else cls(**options)


def _problems(o: OrigaMIGOptions) -> list[str]:
    """One line per bad option, naming the option, its value and what it may be."""
    problems = []

    def need(ok: bool, key: str, what: str) -> None:
        if not ok:
            problems.append(f"{key}: {getattr(o, key)!r} {what}")

    def number(value: Any) -> bool:
        return isinstance(value, int | float) and not isinstance(value, bool)

    def integer(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    def one_of(key: str, values: Any) -> None:
        need(getattr(o, key) in list(values), key, f"is not one of {', '.join(values)}")

    one_of("solver", backend_names())
    need(
        not (o.deterministic is True and o.solver in NOT_DETERMINISTIC),
        "solver",
        "races on the wall clock, so it cannot solve deterministically: choose highs or cpsat",
    )
    one_of("bound", Bound)
    for key in ("m_max", "n_max"):
        need(integer(getattr(o, key)) and getattr(o, key) >= 1, key, "must be a positive integer")
    need(o.threads is None or (integer(o.threads) and o.threads >= 1), "threads",
         "must be a positive integer or null")  # fmt: skip
    need(integer(o.theta) and o.theta >= 0, "theta", "must be an integer ≥ 0")
    need(o.effort_limit is None or (integer(o.effort_limit) and o.effort_limit >= 1), "effort_limit",
         "must be a positive integer or null")  # fmt: skip
    need(integer(o.seed), "seed", "must be an integer")
    for key in ("time_limit_s", "work_limit", "timer_s", "safety_net_s"):
        value = getattr(o, key)
        need(value is None or (number(value) and value > 0), key, "must be a positive number or null")
    need(
        number(o.check_interval_s) and o.check_interval_s > 0, "check_interval_s", "must be a positive number"
    )
    need(o.delta is None or (number(o.delta) and o.delta >= 0), "delta", "must be a number ≥ 0 or null")
    need(
        o.delta_per_gb is None or (number(o.delta_per_gb) and o.delta_per_gb >= 0),
        "delta_per_gb",
        "must be a number ≥ 0 or null",
    )
    need(number(o.call_time_scale) and o.call_time_scale > 0, "call_time_scale", "must be a positive number")
    need(
        o.call_time_scale == 1 or o.deterministic is True,
        "call_time_scale",
        "scales modeled call times, which only a deterministic run takes (deterministic=true)",
    )
    for key in _BOOLEAN:
        need(isinstance(getattr(o, key), bool), key, "must be true or false")
    need(o.grow_to is None or (integer(o.grow_to) and (not integer(o.m_max) or o.grow_to >= o.m_max)),
         "grow_to", "must be an integer ≥ m_max or null")  # fmt: skip
    for key in ("calls_per_step", "solve_workers"):
        need(integer(getattr(o, key)) and getattr(o, key) >= 1, key, "must be a positive integer")
    if integer(o.calls_per_step) and o.calls_per_step > 1:
        need(
            o.grow_to is None and not o.rotate,
            "calls_per_step",
            "cannot be combined with grow_to or rotate yet",
        )
    one_of("arrival", Arrival)
    one_of("consolidation", Consolidation)
    one_of("goal", Goal)
    return problems
