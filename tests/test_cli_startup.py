"""Start-up cost of the command line: no heavy import on the way to a command, commands load lazily."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from origamig.cli.app import COMMANDS, load_command

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
    snapshot = Path(__file__).resolve().parents[1] / "examples" / "fragmented-a100.json"
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
