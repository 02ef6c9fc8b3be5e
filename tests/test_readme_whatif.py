"""The README's "What would it save on my fleet?" Python example runs as printed and says something true."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SECTION = "## What would it save on my fleet?"


def readme_example() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index(SECTION) :]
    section = section[: section.index("\n## ", len(SECTION))]
    blocks = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    assert len(blocks) == 1, "the section has one Python example"
    return blocks[0]


def test_readme_python_example_runs(monkeypatch) -> None:
    monkeypatch.chdir(ROOT)  # the example names files relative to the repository
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(readme_example(), "README.md", "exec"), {"__name__": "readme"})
    lines = out.getvalue().splitlines()
    assert lines[0] == "6 servers, 56 VMs running, 2 pending"
    rows = {line.split(":")[0].strip(): line for line in lines[1:]}
    assert set(rows) == {"ff", "origamig"}
    servers = {p: float(re.search(r"([\d.]+) servers on", line).group(1)) for p, line in rows.items()}
    assert all(0 < v <= 6 for v in servers.values())
    assert " 0.0 migrations per hour" in rows["ff"]  # first fit never migrates
