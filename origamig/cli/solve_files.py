"""The files `origamig solve` writes (`--out`, `--script`): their destinations checked before any
work, their contents rendered before any is written."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from origamig.errors import UserError
from origamig.snapshot.document import Snapshot, json_text

if TYPE_CHECKING:
    from origamig.call.solve import Outcome


def check_destinations(snapshot: Path, out: Path | None, script: Path | None) -> None:
    """Refuse, before any work, destinations that cannot be written or that would overwrite one
    another (`--out` and `--script` naming one file) or the input (`--script` naming the snapshot)."""
    problems: list[str] = []
    if out is not None and script is not None and _same_file(out, script):
        problems.append(f"--script: {script} is also the --out file; give each its own file")
    if script is not None and _same_file(script, snapshot):
        problems.append(f"--script: {script} is the snapshot being solved; the script would overwrite it")
    for option, path in (("--out", out), ("--script", script)):
        problem = None if path is None else writable_problem(path)
        if problem is not None:
            problems.append(f"{option}: {path}: {problem}")
    if problems:
        raise UserError(problems)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist yet: compare where they would be
        return a.resolve() == b.resolve()


def writable_problem(path: Path) -> str | None:
    """Why a file cannot be written at `path` (atomically: a new file in its folder, then a rename),
    or None."""
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        return "is a folder"
    if not folder.is_dir():
        return f"no folder {folder}"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"cannot write in the folder {folder} (permission denied)"
    return None


def output_files(
    snap: Snapshot, outcome: Outcome, out: Path | None, script: Path | None
) -> dict[Path, tuple[str, int]]:
    """The files the command writes: path → (content, mode of a new file)."""
    from origamig.call.solve import output_document

    files: dict[Path, tuple[str, int]] = {}
    if out is not None:
        files[out] = (json_text(output_document(snap, outcome)), 0o666)
    if script is not None:
        files[script] = (_script(snap, outcome), 0o777)
    return files


def _script(snap: Snapshot, out: Outcome) -> str:
    """The dry-run shell script of the outcome's plan (no step when nothing is applied)."""
    from origamig.plan.render import render_shell

    steps = out.plan.steps if out.plan is not None else ()
    text = render_shell(steps, out.start_state, out.moves)
    head, _, rest = text.partition("\n")
    status = "".join(c if c.isprintable() else "?" for c in f"# origamig solve: {out.status}: {out.note}")
    return f"{head}\n{status}\n{rest}"
