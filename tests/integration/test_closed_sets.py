"""Closed sets are compared by member, never by spelling (docs/design.md#origamig-options).

A StrEnum equals its value, so `work.kind == "admission"` works today — and keeps compiling after the
member is renamed, or compares false for ever after a typo. Every module under origamig/ is parsed
with `ast`; a string literal that spells a member of one of `CLOSED_SETS` fails the test when it is
compared: `==` or `!=`, `in` / `not in` a tuple, list or set literal, a `match` case, or a key of a
dict literal looked up on the spot (`{"placed": 201}[status]`).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from enum import StrEnum

from origamig.bilp.backends.base import Feature
from origamig.call.decision import Status
from origamig.call.kinds import CallKind
from origamig.plan.steps import StepOp
from origamig.policies.base import CallOutcome
from origamig.runtime.plan_run import AbortCause, MoveState, PlanStatus, StepStatus
from origamig.serve.arrivals import ArrivalStatus
from tests.paths import ROOT

PACKAGE = ROOT / "origamig"

# The sets that cross module boundaries as a call's, a plan's or a request's vocabulary. Left out on
# purpose: `ScopeMode` ("auto", "all", "list") and a solve's `Termination`, `Guard` and `SolutionStatus`
# ("optimal", "error", "none", ...), whose values are common words with other meanings in the code
# ("none" is the class of PMs without GPUs, "error" a key of the service's replies); and the options'
# enums (`Goal`, `Bound`, ...), read once at the edge.
CLOSED_SETS: tuple[type[StrEnum], ...] = (
    CallKind,
    CallOutcome,
    Status,
    StepOp,
    Feature,
    PlanStatus,
    StepStatus,
    AbortCause,
    MoveState,
    ArrivalStatus,
)


def spellings(enums: tuple[type[StrEnum], ...] = CLOSED_SETS) -> dict[str, list[str]]:
    """Each member's value → the members it spells (`AbortCause.NONE`, the empty string, spells none)."""
    out: defaultdict[str, list[str]] = defaultdict(list)
    for enum in enums:
        for member in enum:
            if member.value:
                out[member.value].append(f"{enum.__name__}.{member.name}")
    return dict(out)


def _strings(node: ast.expr) -> list[ast.Constant]:
    return [node] if isinstance(node, ast.Constant) and isinstance(node.value, str) else []


def _compared(node: ast.AST) -> list[ast.Constant]:
    """The string literals `node` compares a value with."""
    if isinstance(node, ast.Compare):
        found: list[ast.Constant] = []
        left = node.left
        for op, right in zip(node.ops, node.comparators, strict=True):
            if isinstance(op, ast.Eq | ast.NotEq):
                found += _strings(left) + _strings(right)
            elif isinstance(op, ast.In | ast.NotIn) and isinstance(right, ast.Tuple | ast.List | ast.Set):
                found += [c for element in right.elts for c in _strings(element)]
            left = right
        return found
    if isinstance(node, ast.MatchValue):
        return _strings(node.value)
    table = None
    if isinstance(node, ast.Subscript):
        table = node.value
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        table = node.func.value
    if isinstance(table, ast.Dict):
        return [c for key in table.keys if key is not None for c in _strings(key)]
    return []


def spelled_comparisons(source: str, name: str, values: dict[str, list[str]]) -> list[str]:
    """One line per comparison in `source` with a literal that spells a member of `values`."""
    problems = []
    for node in ast.walk(ast.parse(source, name)):
        for literal in _compared(node):
            if literal.value in values:
                members = " or ".join(values[literal.value])
                problems.append(
                    f"{name}:{literal.lineno}: {literal.value!r} spells {members}: name the member"
                )
    return sorted(problems)


def test_no_module_compares_with_the_spelling_of_a_member() -> None:
    values = spellings()
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = str(path.relative_to(PACKAGE.parent))
        problems += spelled_comparisons(path.read_text(), name, values)
    assert problems == []


def test_every_kind_of_comparison_is_caught() -> None:
    source = (
        "if work.kind == 'admission': pass\n"
        "if 'consolidation' != nb.kind: pass\n"
        "ok = result not in ('done', 'failed')\n"
        "ok = 0 < n == 'applied'\n"
        "code = {'placed': 201}[arrival.status]\n"
        "code = {'pending': 202}.get(arrival.status)\n"
        "match op:\n    case 'migrate' | 'start': pass\n"
    )
    found = spelled_comparisons(source, "m.py", spellings())
    spelled = [line.split("'")[1] for line in found]
    assert sorted(spelled) == sorted(
        ["admission", "consolidation", "done", "failed", "applied", "placed", "pending", "migrate", "start"]
    )
    assert "m.py:1: 'admission' spells CallKind.ADMISSION: name the member" in found
    assert any("StepStatus.DONE" in line and "PlanStatus.DONE" in line for line in found)


def test_other_strings_are_left_alone() -> None:
    source = (
        "if kind == 'arrive': pass\n"  # not a member of any closed set
        "if cause == '': pass\n"  # AbortCause.NONE: the empty string names nothing
        "if 'start' in step: pass\n"  # a key of a step, not a comparison with a closed set
        "if spec == 'all': pass\n"  # ScopeMode is left out
        "labels = {'done': 1}\n"  # a dict literal that is not looked up on the spot
        "x = f'{status}' + 'pending'\n"
    )
    assert spelled_comparisons(source, "m.py", spellings()) == []
