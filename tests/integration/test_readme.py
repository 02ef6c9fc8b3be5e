"""The README's promises hold: its Python tour runs, and its check command is what CI runs."""

from __future__ import annotations

import re

import pytest

from tests.paths import ROOT

README = (ROOT / "README.md").read_text()


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def test_the_python_tour_runs_as_written(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tour,) = _blocks("python")
    monkeypatch.chdir(ROOT)
    exec(compile(tour, "README.md", "exec"), {"__name__": "readme"})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("improved ('vm5',)")
    assert printed[1].endswith("migrations/h")


def test_the_two_set_up_commands_are_the_main_job_and_the_check_command_ci_runs() -> None:
    setup = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    commands = [b.strip() for b in re.findall(r"```bash\n(.*?)```", setup, flags=re.S)]
    assert commands == [
        "python -m pip install . && origamig solve examples/fragmented-a100.json",
        "scripts/check",
    ]
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^exec scripts/check$", ci, flags=re.M)
