"""Run the `origamig` entry point in this process, as the console script would (errors → exit 2)."""

from __future__ import annotations

import io
import sys
from contextlib import redirect_stderr, redirect_stdout
from unittest import mock

from origamig.cli.app import main


def run_main(args: list[str]) -> tuple[int, str, str]:
    """`origamig ARGS` in process: exit code, stdout, stderr. Other exceptions propagate (= a traceback)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err), mock.patch.object(sys, "argv", ["origamig", *args]):
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()
