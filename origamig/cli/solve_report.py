"""What `origamig solve` reports: its exit code, the state's counts before and after, and the text
report (operator words first, paper symbols in brackets)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from origamig.judge.objective import Objective
from origamig.snapshot.document import Snapshot

if TYPE_CHECKING:
    from origamig.bilp import SolveResult
    from origamig.call.solve import Outcome
    from origamig.cluster.summary import StateSummary


def exit_code(status: str) -> int:
    """The exit code of a call's status (docs/cli.md's table of statuses); every `Status` has one."""
    from origamig.call.decision import Status  # the solver stack is imported by then; not at start-up

    codes = {
        Status.IMPROVED: 0,
        Status.UNCHANGED: 0,
        Status.STOPPED_AT_LIMIT: 3,
        Status.SOLVER_ERROR: 4,
        Status.PLAN_INFEASIBLE: 5,
    }
    return codes[Status(status)]


def summaries(snap: Snapshot, out: Outcome) -> tuple[StateSummary, StateSummary]:
    """The counts of the state before and after the plan; the after from the PMs the plan changed."""
    from origamig.cluster.summary import summarize

    before = summarize(out.start_state, snap.pms)
    return before, summarize(out.end_state, out.pms_out, since=(out.start_state, before))


def _terms_rows(before: Objective, after: Objective) -> list[tuple[str, str, str]]:
    b, a = before.as_dict(), after.as_dict()
    rows = [("objective (Eq. 5)", f"{b['value']:g}", f"{a['value']:g}")]
    for key, label in (
        ("acceptance", "  + admitted VMs"),
        ("consolidation", "  − servers and GPUs on"),
        ("migration", "  − moves"),
        ("free_starts", "  + free placements"),
    ):
        rows.append((label, f"{b[key]:g}", f"{a[key]:g}"))
    return rows


def _packing(summary: StateSummary) -> str:
    """Slices used over the slices of the GPUs in use, every class together."""
    used = active = 0
    for c in summary.gpu_classes().values():
        used += c.used_slices
        active += c.active_gpus * c.slices // c.gpus
    return f"{100 * used / active:.1f}%" if active else "—"


def report(path: Path, snap: Snapshot, out: Outcome, summary: tuple[StateSummary, StateSummary]) -> list[Any]:
    """The text report of a solve, from its outcome, in operator words first (paper symbols in
    brackets)."""
    from rich.text import Text

    from origamig.call.decision import Status
    from origamig.plan.render import plan_table, text_table

    code = exit_code(out.status)
    status = Text(
        f"status: {out.status}",
        style={Status.IMPROVED: "green", Status.UNCHANGED: "yellow"}.get(out.status, "red"),
    )
    status.append(
        f": objective {out.before.value:g} → {out.after.value:g} ({out.note})"
        + (f" (exit {code})" if code else "")
    )
    scope = out.scope
    lines: list[Any] = [
        f"{path}: {len(snap.pms)} servers, {len(snap.placement)} running VMs, {len(snap.pending)} pending",
        f"considered: {len(scope.pms)} servers, {len(scope.pending)} pending VMs ({scope.mode}"
        + (f"; {scope.note})" if scope.note else ")")
        + f"; goal {out.goal}",
        status,
        f"admitted: {', '.join(out.admitted) or '—'}",
    ]
    for label, vms in (("rejected", out.rejected), ("waiting", out.waiting)):
        lines.extend(f"{label}: {v} — {out.reasons[v]}" for v in vms)
    if out.dropped:
        lines.append(f"moves dropped (nobody needed them): {', '.join(out.dropped)}")
    before, after = summary
    rows = [
        ("servers on", str(before.active_pms), str(after.active_pms)),
        ("GPUs in use", str(before.active_gpus), str(after.active_gpus)),
        ("packing", _packing(before), _packing(after)),
        ("free placements (CF, every GPU)", str(before.cf), str(after.cf)),
        ("free placements on GPUs in use", str(before.cf_active), str(after.cf_active)),
        *_terms_rows(out.before, out.after),
    ]
    lines.append(text_table("before → after", [("", "left"), ("before", "right"), ("after", "right")], rows))
    lines.extend(_solver_lines(out))
    if out.time is not None:
        lines.append(f"time: {out.time.describe(alongside=True)}")
    if out.plan is not None:
        lines.append(plan_table(out.plan, out.moves))
    return lines


def _solver_lines(out: Outcome) -> list[str]:
    """One line for the solver, and one per call when there were several."""
    if not out.calls:
        return ["solver: not run (nothing to optimize)"]
    results = [c.decision.solution.result for c in out.calls]
    if len(out.calls) == 1:
        return [f"solver: {_solver_line(results[0])}"]
    proved = (
        "every call proved optimal"
        if all(r.proved_optimal for r in results)
        else "not every call proved optimal"
    )
    wall = sum(r.wall_s for r in results)
    lines = [f"solver: {results[0].solver}, {len(out.calls)} calls ({proved}), {wall:.2f} s"]
    for n, c in enumerate(out.calls):
        what = f"admitted {', '.join(c.admitted)}" if c.admitted else c.decision.status
        lines.append(
            f"  call {n + 1}: {c.neighborhood.kind} on {len(c.neighborhood.pms)} servers, "
            f"{len(c.neighborhood.pending)} pending: {what}; {_solver_line(c.decision.solution.result)}"
        )
    return lines


def _solver_line(res: SolveResult) -> str:
    gap = "—" if res.gap is None else f"{100 * res.gap:.2f}%"
    proved = "proved optimal" if res.proved_optimal else "not proved optimal"
    return f"{res.solver}, {res.termination} ({proved}), gap {gap}, {res.wall_s:.2f} s" + (
        f"; {res.reason}" if res.reason else ""
    )
