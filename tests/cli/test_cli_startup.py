"""Start-up cost of the command line: no heavy import on the way to a command, commands load lazily."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from origamig.cli.app import COMMANDS, load_command
from tests.paths import ROOT

HEAVY = ("scipy", "scipy.stats", "pyomo", "pyomo.environ", "ortools", "highspy", "matplotlib", "dask")
HEAVY_ON_SOLVE = ("scipy", "pyomo.environ", "ortools", "highspy", "matplotlib", "dask")


def _loaded_after(code: str, heavy: tuple[str, ...] = HEAVY) -> set[str]:
    """The modules of `heavy` that a fresh interpreter has loaded after running `code`."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_importing_the_app_loads_no_solver_stack() -> None:
    assert _loaded_after("import origamig.cli.app") == set()


def test_top_level_help_loads_no_command_module() -> None:
    code = (
        "import sys\nfrom origamig.cli.app import main\nsys.argv = ['origamig', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "assert not [m for m in sys.modules if m in ('origamig.cli.solve', 'origamig.cli.simulate')]"
    )
    assert _loaded_after(code) == set()


@pytest.mark.parametrize("module", ["check", "configs", "importer", "check_plan", "solve"])
def test_light_commands_import_no_solver(module: str) -> None:
    """Solvers (and Pyomo, SciPy) load only when a solve runs, not when its command is imported."""
    assert _loaded_after(f"import origamig.cli.{module}") == set()


def test_a_solve_loads_only_its_own_solver() -> None:
    """`origamig solve` with HiGHS works without SciPy, CP-SAT or Pyomo's plugin registry. (The
    solve is kept in this process: normally it runs in a forked child, which would hide its imports.)"""
    snapshot = ROOT / "examples" / "fragmented-a100.json"
    code = (
        "import contextlib, io, sys\nfrom origamig.cli.app import main\n"
        "from origamig.bilp.backends import base, deadline\n"
        "deadline.solve_in_child = lambda name, c, hint, limits, t0, meanwhile=None: "
        "base.get_backend(name).solve_in_process(c, hint, limits)\n"
        f"sys.argv = ['origamig', 'solve', {str(snapshot)!r}, '--json', '--deterministic']\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n        main()\n    except SystemExit as err:\n        assert not err.code, err.code\n"
        "assert 'highspy' in sys.modules and 'pyomo.core' in sys.modules"
    )
    assert _loaded_after(code, HEAVY_ON_SOLVE) == {"highspy"}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_listed_help_is_the_commands_own(name: str) -> None:
    command = load_command(name)
    assert command.name == name
    assert COMMANDS[name][1] == command.help.split("\n\n")[0].strip()


def test_a_solve_loads_neither_the_graph_library_nor_rich_before_its_solve() -> None:
    """The planner's graph library loads only for a blocked cycle; rich and the report tables while
    the solver's helper works (`base.Once` handed to the solve), not on the way to the solve."""
    code = "import origamig.cli.solve, origamig.call.solve"
    assert _loaded_after(code, ("networkx", "rich", "rich.console", "rich.table")) == set()


def _helpers_of(pid: int) -> list[str]:
    """The command lines of live solver helpers started by process `pid`."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"origamig.bilp.backends.solver_host" in argv and str(pid).encode() in argv:
            found.append(b" ".join(argv).decode())
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_the_console_script_ends_a_solve_without_teardown_and_its_output_whole(tmp_path: Path) -> None:
    """`solve` ends its process right after its output (no interpreter teardown: an atexit handler of
    the process does not run), with its exit code, its whole output and its files written, and its
    solver helper ends with it; another command (`check`) ends as usual."""
    snapshot = str(ROOT / "examples" / "fragmented-a100.json")
    probe = (
        "import atexit, sys\natexit.register(lambda: print('TEARDOWN', file=sys.stderr))\n"
        "from origamig.cli.app import script\nsys.argv = ['origamig', *sys.argv[1:]]\nscript()"
    )

    def script(*args: str) -> tuple[int, str, str, int]:
        proc = subprocess.Popen(
            [sys.executable, "-c", probe, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        out, err = proc.communicate(timeout=300)
        return proc.returncode, out, err, proc.pid

    written = tmp_path / "after.json"
    code, out, err, pid = script("solve", snapshot, "--json", "--out", str(written), "--time-limit", "30")
    assert code == 0 and "TEARDOWN" not in err, err
    doc = json.loads(out)  # the whole document came out before the process ended
    assert doc["status"] in ("improved", "unchanged")
    assert json.loads(written.read_text())["vms"]  # the new state, whole
    waited = 0.0
    while _helpers_of(pid) and waited < 20:
        time.sleep(0.1)
        waited += 0.1
    assert _helpers_of(pid) == []  # its helper saw its pipes close and ended
    code, _, err, _ = script("solve", str(tmp_path / "missing.json"))
    assert code == 2 and err.startswith("error: ") and "TEARDOWN" not in err
    code, _, err, _ = script("check", snapshot)
    assert code == 0 and "TEARDOWN" in err
