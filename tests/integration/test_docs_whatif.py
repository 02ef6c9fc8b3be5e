"""The Python example of docs/what-if.md runs as printed and says something true."""

from __future__ import annotations

import contextlib
import io
import re

from tests.paths import ROOT

PAGE = ROOT / "docs" / "what-if.md"


def page_example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.DOTALL)
    assert len(blocks) == 1, "the page has one Python example"
    return blocks[0]


def test_the_what_if_python_example_runs(monkeypatch) -> None:
    monkeypatch.chdir(ROOT)  # the example names files relative to the repository
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(page_example(), "docs/what-if.md", "exec"), {"__name__": "readme"})
    lines = out.getvalue().splitlines()
    assert lines[0] == "6 servers, 56 VMs running, 2 pending"
    rows = {line.split(":")[0].strip(): line for line in lines[1:]}
    assert set(rows) == {"ff", "origamig"}
    servers = {p: float(re.search(r"([\d.]+) servers on", line).group(1)) for p, line in rows.items()}
    assert all(0 < v <= 6 for v in servers.values())
    assert " 0.0 migrations per hour" in rows["ff"]  # first fit never migrates
