"""Start-up cost of the command line: no heavy import on the way to a command, commands load lazily."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from origamig.cli.app import COMMANDS, load_command

HEAVY = ("scipy", "scipy.stats", "pyomo", "pyomo.environ", "ortools", "highspy", "matplotlib", "dask")


def _loaded_after(code: str) -> set[str]:
    """The modules of HEAVY that a fresh interpreter has loaded after running `code`."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
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


@pytest.mark.parametrize("name", list(COMMANDS))
def test_listed_help_is_the_commands_own(name: str) -> None:
    command = load_command(name)
    assert command.name == name
    assert COMMANDS[name][1] == command.help.split("\n\n")[0].strip()
