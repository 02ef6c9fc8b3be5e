"""origamig: MIG-aware VM placement with a neighborhood-restricted BILP and live migration.

The public API (docs/design.md#public-api): read a snapshot, solve it, order or replay a migration
plan, judge a placement, and build or simulate a policy::

    import origamig

    snap = origamig.load_snapshot("examples/fragmented-a100.json")
    outcome = origamig.solve_snapshot(snap)

Names load on first use, so that `import origamig` stays cheap (no solver, no Pyomo).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from origamig.lazy import lazy_names

__version__ = "0.1.0"

if TYPE_CHECKING:
    from origamig.bilp.backends.base import Limits
    from origamig.call.solve import solve_snapshot
    from origamig.cluster.records import Weights
    from origamig.errors import UserError
    from origamig.judge.check import check_placement
    from origamig.judge.replay import replay_plan
    from origamig.plan.executor import plan_migrations
    from origamig.policies.base import make_policy
    from origamig.snapshot.document import load_snapshot
    from origamig.study.whatif import run_policy

# Public name → the module that defines it (imported when the name is first read).
_HOMES: dict[str, str] = {
    "load_snapshot": "origamig.snapshot.document",
    "solve_snapshot": "origamig.call.solve",
    "plan_migrations": "origamig.plan.executor",
    "replay_plan": "origamig.judge.replay",
    "check_placement": "origamig.judge.check",
    "make_policy": "origamig.policies.base",
    "run_policy": "origamig.study.whatif",
    "Limits": "origamig.bilp.backends.base",
    "Weights": "origamig.cluster.records",
    "UserError": "origamig.errors",
}

__all__ = [
    "Limits",
    "UserError",
    "Weights",
    "__version__",
    "check_placement",
    "load_snapshot",
    "make_policy",
    "plan_migrations",
    "replay_plan",
    "run_policy",
    "solve_snapshot",
]


__getattr__, __dir__ = lazy_names(__name__, _HOMES, globals())
