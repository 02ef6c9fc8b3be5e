"""Console output for people: ids printed literally, nothing cut when the output is piped.

Every command that draws tables prints through `operator_console`: rich's markup (`[red]`), emoji
codes (`:x:`) and highlighting are off, so a VM or PM id such as `[/bold]` is printed as written and
never raises. On a terminal, table cells wrap at the terminal's width instead of being cut with `…`;
when stdout is a pipe or a file (no width to respect), lines are never wrapped or cut at all.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from rich.console import Console

# The width used when stdout is not a terminal: wider than any line the commands print, so that
# nothing is wrapped or cut (a rich table is as wide as its content, never padded to this width).
PIPE_WIDTH = 100_000


def operator_console(stderr: bool = False) -> Console:
    """A console without markup, emoji or highlighting, as wide as the terminal (unbounded when piped)."""
    probe = Console(stderr=stderr)
    width = probe.width if probe.is_terminal else PIPE_WIDTH
    return Console(stderr=stderr, width=width, markup=False, emoji=False, highlight=False)


def render_text(renderables: Iterable[Any], stderr: bool = False) -> str:
    """What printing `renderables` would show (colours included on a terminal), as one string.

    A command renders its whole output this way before it writes any file, so that a failure while
    drawing can never leave a half-done command behind.
    """
    console = operator_console(stderr)
    with console.capture() as capture:
        for item in renderables:
            console.print(item)
    return capture.get()


def write_stdout(text: str) -> None:
    """Print already rendered text as it is (no newline added)."""
    sys.stdout.write(text)
    sys.stdout.flush()
