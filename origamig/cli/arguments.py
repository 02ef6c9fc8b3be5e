"""What several commands parse and offer alike: durations, comma-separated lists, loads, policy
options (`KEY=VALUE`) and the typer options `simulate` and `study` share. No command of its own."""

from __future__ import annotations

import json
import re
from typing import Any

import typer

from origamig.errors import UserError
from origamig.files import MAX_DEPTH, nesting_depth
from origamig.policies.base import option_names, policy_factory, policy_names

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str, option: str) -> float:
    """'48h', '30m', '2d', '90s' or plain seconds → seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([smhd]?)\s*", text)
    if not m:
        raise UserError(f"{option}: {text!r} is not a duration (e.g. 48h, 30m, 2d, 3600)")
    return float(m.group(1)) * _UNITS[m.group(2) or "s"]


def split_list(values: list[str]) -> list[str]:
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def parse_loads(values: list[str]) -> list[float]:
    loads = []
    for v in split_list(values):
        try:
            loads.append(float(v))
        except ValueError:
            raise UserError(f"--load: {v!r} is not a number") from None
    return loads


def parse_settings(
    items: list[str], name: str, accepted: set[str] | None = None, owners: str = ""
) -> tuple[tuple[str, Any], ...]:
    """`KEY=VALUE` strings → (key, value) pairs; a value is read as JSON when it parses (numbers,
    true/false, null), else kept as a string. With `accepted`, a key not in it is an error naming
    `owners`; every problem is told, in the order of `items` (`name` is the option's)."""
    out: list[tuple[str, Any]] = []
    problems = []
    known = ", ".join(sorted((accepted or set()) - {"weights"})) or "none"
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            problems.append(f"{name}: {item!r} is not KEY=VALUE")
            continue
        if accepted is not None and key not in accepted:
            problems.append(f"{name}: {key!r} is not an option of {owners} (known: {known})")
            continue
        try:
            value: Any = json.loads(raw)
        except (json.JSONDecodeError, RecursionError):
            value = raw
        if nesting_depth(value, MAX_DEPTH) > MAX_DEPTH:
            problems.append(f"{name}: {key}: value nested deeper than {MAX_DEPTH} levels")
            continue
        out.append((key, value))
    if problems:
        raise UserError(problems)
    return tuple(out)


def parse_options(items: list[str], policies: list[str]) -> tuple[tuple[str, Any], ...]:
    """`--option KEY=VALUE` strings → (key, value) pairs (`parse_settings`); a key that none of
    `policies` accepts is an error."""
    accepted: set[str] = set()
    for name in policies:
        accepted |= option_names(policy_factory(name)) or set()
    return parse_settings(items, "--option", accepted, ", ".join(policies))


# Options `simulate` and `study` share.
POLICY_HELP = f"{', '.join(policy_names())} (repeat or comma-separate)."
LOADS = typer.Option("--load", help="Offered load ρ (repeat or comma-separate; 0.85).")
SEEDS_HELP = "Seeds: N (seeds 1..N), A..B, or a list such as 1,2,3"
SCHEDULER = typer.Option("--scheduler", help="Dask scheduler address tcp://HOST:PORT.")
OPTIONS = typer.Option(
    "--option",
    "-o",
    help="Policy option KEY=VALUE (repeatable), e.g. m_max=8, delta=20, theta=2, timer_s=900, "
    "random_neighborhoods=true, admission_calls=false, time_limit_s=5, tc_rule=literal, period_s=3600.",
)
