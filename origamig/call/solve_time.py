"""How a solve spent its wall time: before the calls, in each phase of the calls, after them.

`origamig solve --time-limit S` bounds the whole command: the calls share one deadline (the first
calls take what they need, the last what is left; docs/solving.md#time-limit). `SolveTime` is the
account the command prints (`time:`) and writes (`time` in the solve document).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from origamig.call.successive import Call
from origamig.wording import count

# The phases of a call (`RegionSolution.timings` and the decision's `plan_s`), in order, with words.
CALL_PHASES = (
    ("build_s", "model"),
    ("compile_s", "compile"),
    ("bound_s", "LP bound"),
    ("primal_s", "repair"),
    ("solve_s", "solver"),
    ("decode_s", "decode"),
    ("plan_s", "plan"),
)


@dataclass(frozen=True)
class SolveTime:
    """Wall seconds of one solve, from its start (the process's start in `origamig solve`)."""

    limit_s: float | None  # the whole solve's wall-clock limit (None: none, or a deterministic budget)
    call_limit_s: float | None  # the most one call's solver could take (None: what was left)
    wall_s: float  # start → the outcome ready (the report is written after)
    before_calls_s: float  # start-up, reading the snapshot, building the state
    calls_s: float  # the calls, one after another
    after_calls_s: float  # one plan for the calls' end state, the verdicts, the independent check
    calls: int
    out_of_time: bool  # a call was not made because the time was (nearly) up
    phases_s: dict[str, float] = field(default_factory=dict)  # CALL_PHASES summed over the calls

    @classmethod
    def of(
        cls,
        calls: Sequence[Call],
        marks: tuple[float, float, float, float],
        limit_s: float | None,
        call_limit_s: float | None,
        out_of_time: bool,
    ) -> SolveTime:
        """The account of `calls` from four instants: start, calls begin, calls end, outcome ready."""
        start, begin, end, ready = marks
        phases: dict[str, float] = {}
        for c in calls:
            for phase, seconds in c.decision.timings.items():
                phases[phase] = phases.get(phase, 0.0) + seconds
        return cls(
            limit_s,
            call_limit_s,
            ready - start,
            begin - start,
            end - begin,
            ready - end,
            len(calls),
            out_of_time,
            {p: phases[p] for p, _ in CALL_PHASES if p in phases},
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "limit_s": self.limit_s,
            "call_limit_s": self.call_limit_s,
            "wall_s": self.wall_s,
            "before_calls_s": self.before_calls_s,
            "calls_s": self.calls_s,
            "after_calls_s": self.after_calls_s,
            "calls": self.calls,
            "out_of_time": self.out_of_time,
            "phases_s": dict(self.phases_s),
        }

    def describe(self, alongside: bool = False) -> str:
        """One sentence: `5.4 s of the 5 s limit: 0.5 s before the calls, 2 calls 4.6 s (...), …`.
        `alongside`: the LP bound ran beside the solver (its time overlaps the solver's)."""
        words = dict(CALL_PHASES)
        parts = []
        for phase, seconds in self.phases_s.items():
            if seconds >= 0.005:
                beside = " beside the solver" if alongside and phase == "bound_s" else ""
                parts.append(f"{words[phase]} {seconds:.2f} s{beside}")
        limit = f" of the {self.limit_s:g} s limit" if self.limit_s is not None else ""
        text = (
            f"{self.wall_s:.2f} s{limit}: {self.before_calls_s:.2f} s before the calls (start-up, reading), "
            f"{count(self.calls, 'call')} {self.calls_s:.2f} s"
            + (f" ({', '.join(parts)})" if parts else "")
            + f", {self.after_calls_s:.2f} s after them (one plan, verdicts, the independent check)"
        )
        if self.out_of_time:
            text += "; the time ran out: the calls after these were not made"
        return text
