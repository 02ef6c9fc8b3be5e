"""Run the typer app as the console script does: every error is one `error:` line on stderr, exit 2.

Typer's standalone mode draws usage errors (an unknown option, a value out of range, a missing
argument) as boxed panels; here the app runs with `standalone_mode=False`, so that those errors come
back as exceptions and are printed like every other user error: one line naming the option and the
value, then a pointer to `--help`. Typer vendors its own click (`typer._click`) since 0.2x; older
versions use click itself.

The console script (`run_script`) may end the process without Python's teardown of the interpreter
once the command has returned: a command that has written everything and holds nothing needing an
orderly end says so with `end_without_teardown`. Freeing a one-shot `solve`'s objects (a Pyomo
model, NumPy, the solver's modules) otherwise costs about 0.1 s after the answer is out.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from origamig.errors import UserError

USAGE_EXIT = 2


class _Ending:
    """How the console script ends this process (set by the command that runs), and when it started."""

    without_teardown = False
    started: float | None = None  # `time.perf_counter()` instant of the process's start (console script)


def command_started() -> float:
    """When the running command started, as a `time.perf_counter()` instant: the process's start when
    it runs as the console script (a time limit then counts the interpreter's start and imports),
    else now (a command run in process: tests, `main`)."""
    return _Ending.started if _Ending.started is not None else time.perf_counter()


def _process_started() -> float | None:
    """This process's start as a `time.perf_counter()` instant, read from /proc (None elsewhere)."""
    now = time.perf_counter()
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    age = uptime - ticks / os.sysconf("SC_CLK_TCK")
    return now - age if 0.0 <= age < 60.0 else None  # a reading that far off is not trusted


def end_without_teardown() -> None:
    """Let the console script end this process as soon as the running command returns, skipping the
    interpreter's teardown (atexit handlers, freeing every object). For a command whose outputs are
    written atomically before it returns and that starts nothing needing an orderly stop (no server,
    no cluster of workers); its solver helpers end when their pipes close. Run in process (tests,
    `main`), the command returns as always."""
    _Ending.without_teardown = True


def _click_exceptions() -> ModuleType:
    try:
        from typer._click import exceptions as vendored
    except ImportError:  # typer < 0.20 depends on click instead of vendoring it
        from click import exceptions

        return exceptions
    return vendored


def _abort_types() -> tuple[type[BaseException], ...]:
    """Click's `Abort` (Ctrl-C, EOF at a prompt): in typer.exceptions or click.exceptions by version."""
    import importlib

    found = []
    for name in ("typer.exceptions", _click_exceptions().__name__):
        try:
            found.append(getattr(importlib.import_module(name), "Abort", None))
        except ImportError:
            continue
    return tuple(dict.fromkeys(t for t in found if isinstance(t, type)))


def _one_line(text: str) -> str:
    return "; ".join(part.strip() for part in text.strip().splitlines() if part.strip())


def _raw_value(argv: list[str], param: Any) -> str | None:
    """The value given on the command line for option `param` (its last occurrence), if any."""
    opts = tuple(getattr(param, "opts", ()) or ()) + tuple(getattr(param, "secondary_opts", ()) or ())
    if not opts or getattr(param, "param_type_name", "") != "option":
        return None
    found = None
    for i, arg in enumerate(argv):
        name, eq, value = arg.partition("=")
        if name in opts:
            found = value if eq else (argv[i + 1] if i + 1 < len(argv) else None)
    return found


def run(app: Any) -> None:
    """Run `app` and exit: 0 on success, the command's own code (`typer.Exit`), 2 on any user error."""
    exc = _click_exceptions()
    aborts = _abort_types()
    try:
        code = app(standalone_mode=False, prog_name="origamig")
    except UserError as err:
        for line in err.problems:
            print(f"error: {line}", file=sys.stderr)
        sys.exit(err.exit_code)
    except exc.NoArgsIsHelpError as err:  # `origamig` alone (or a group without a command): its help
        print(err.format_message())
        sys.exit(0)
    except exc.ClickException as err:
        message = _one_line(err.format_message())
        raw = _raw_value(sys.argv[1:], getattr(err, "param", None))
        if raw is not None and repr(raw) not in message and raw not in message:
            message += f" (got {raw!r})"
        ctx = getattr(err, "ctx", None)
        where = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        print(f"error: {message}{where}", file=sys.stderr)
        sys.exit(USAGE_EXIT)
    except aborts:
        print("error: aborted", file=sys.stderr)
        sys.exit(1)
    except BrokenPipeError:  # `origamig ... | head`: the reader left; nothing more to say
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


def run_script(app: Any) -> None:
    """`run(app)` as the console script: when the command allowed it (`end_without_teardown`), the
    process ends with the command's exit code right after stdout and stderr are flushed."""
    _Ending.started = _process_started()
    try:
        run(app)
    except SystemExit as done:
        if not _Ending.without_teardown or not isinstance(done.code, int | None):
            raise
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BrokenPipeError:  # the reader left: as `run` reports it
            os._exit(1)
        os._exit(done.code or 0)


def package_version() -> str:
    """The installed distribution's version (the package's own `__version__` when not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("origamig")
    except PackageNotFoundError:
        from origamig import __version__

        return __version__
