"""The reference docs hold together: every `docs/*.md#anchor` cited anywhere exists, every relative
link of the README and the docs reaches a file (and its anchor), and the anchors the code cites exist.

Anchors are what GitHub renders: explicit `<a id="...">` / `<a name="...">` tags, and heading slugs
(lower case, punctuation other than `-` and `_` dropped, spaces to `-`, `-1`, `-2`, ... on repeats).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from tests.paths import ROOT

DOCS = ROOT / "docs"
# Where code, schemas, help texts, benchmarks and hardware files may cite the docs.
SCANNED = ("README.md", "REPRODUCTION.md", "docs", "origamig", "benchmarks", "models", "examples", "tests")
TEXT_SUFFIXES = {".md", ".py", ".json", ".toml", ".txt", ".yaml", ".yml", ".cfg", ".sh"}
# The sections the code points at: they must keep existing (rename one only together with its citations).
REQUIRED_ANCHORS = {
    "model.md": (
        "domain",
        "objective",
        "constraints",
        "configuration-form",
        "restriction",
        "solvers",
        "configuration-space",
    ),
    "policies.md": (
        "arrival-rule",
        "triggers",
        "algorithm-1",
        "decision",
        "executor",
        "ff",
        "mfi",
        "dra",
        "tc",
        "opt",
        "guarantees",
    ),
    "simulator.md": ("data-center", "workload", "variants", "alibaba-trace", "energy", "metrics"),
    "formats.md": ("snapshot", "plan", "replay", "solve-document"),
}
# Files that must stand on their own: no citations of scratch material outside the repository.
SELF_CONTAINED = ("README.md", "REPRODUCTION.md", "docs", "models")
SCRATCH_CITATION = re.compile(r"SPEC ?§|SPEC\.md|\.\./shared|issue [0-9]")
DOC_REFERENCE = re.compile(r"docs/([\w.-]+\.md)#([\w-]+)")
EXPLICIT_ANCHOR = re.compile(r"""<a\s+[^>]*?\b(?:id|name)\s*=\s*["']([^"']+)["']""", re.IGNORECASE)
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INLINE_CODE = re.compile(r"`[^`]*`")


def slug(heading: str) -> str:
    """GitHub's id for a heading text."""
    text = re.sub(r"<[^>]+>", "", heading)  # inline HTML
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links keep their text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def prose_lines(text: str) -> Iterator[str]:
    """The lines of a markdown text outside fenced code blocks."""
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield line


@cache
def anchors(path: Path) -> frozenset[str]:
    """Every anchor a markdown file defines."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in prose_lines(path.read_text(encoding="utf-8")):
        found.update(EXPLICIT_ANCHOR.findall(line))
        m = HEADING.match(line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return frozenset(found)


def scanned_files(names: tuple[str, ...] = SCANNED) -> Iterator[Path]:
    for name in names:
        top = ROOT / name
        paths = [top] if top.is_file() else sorted(top.rglob("*")) if top.is_dir() else []
        for path in paths:
            if path.is_file() and path.suffix in TEXT_SUFFIXES and "__pycache__" not in path.parts:
                yield path


def relative_links(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, target) of every relative markdown link of `path`, outside code."""
    fenced = False
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        for target in LINK.findall(INLINE_CODE.sub("", line)):
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # http:, mailto:, ...
                yield n, target


def test_slugs_follow_github() -> None:
    assert slug("The `solve --json` document") == "the-solve---json-document"
    assert slug("Algorithm 1: choosing the neighborhood") == "algorithm-1-choosing-the-neighborhood"
    assert slug("FF — first fit") == "ff--first-fit"
    assert slug("Counts and capacity cuts") == "counts-and-capacity-cuts"


@pytest.mark.parametrize("doc", sorted(REQUIRED_ANCHORS))
def test_cited_sections_exist(doc: str) -> None:
    path = DOCS / doc
    assert path.is_file(), f"docs/{doc} is missing"
    missing = [a for a in REQUIRED_ANCHORS[doc] if a not in anchors(path)]
    assert not missing, f"docs/{doc} lacks the anchors {missing}"


def test_every_docs_reference_resolves() -> None:
    broken = []
    for path in scanned_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            for doc, anchor in DOC_REFERENCE.findall(line):
                target = DOCS / doc
                where = f"{path.relative_to(ROOT)}:{n}"
                if not target.is_file():
                    broken.append(f"{where}: docs/{doc} does not exist")
                elif anchor not in anchors(target):
                    broken.append(f"{where}: docs/{doc} has no anchor #{anchor}")
    assert not broken, "\n".join(broken)


def test_every_relative_link_of_readme_and_docs_resolves() -> None:
    pages = [ROOT / "README.md", ROOT / "REPRODUCTION.md", *sorted(DOCS.glob("*.md"))]
    broken = []
    for page in pages:
        for n, target in relative_links(page):
            where = f"{page.relative_to(ROOT)}:{n}"
            file_part, _, anchor = target.partition("#")
            dest = (page.parent / file_part).resolve() if file_part else page
            if not dest.exists():
                broken.append(f"{where}: {target} does not exist")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{where}: {target}: no anchor #{anchor} in {dest.relative_to(ROOT)}")
    assert not broken, "\n".join(broken)


def test_docs_and_hardware_files_cite_only_public_sources() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in scanned_files(SELF_CONTAINED)
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if SCRATCH_CITATION.search(line)
    ]
    assert not found, "\n".join(found)


# A path in backticks (`call/solve.py`, `benchmarks/results/scale.json`) names a file of this
# repository, from its root, from the package or from the benchmarks' results; the upstream trace's
# own layout is the one exception.
CODE_PATH = re.compile(r"`([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+\.(?:py|toml|json|md|sh|csv|png))`")
PATH_ROOTS = (ROOT, ROOT / "origamig", ROOT / "benchmarks" / "results")
UPSTREAM_PATHS = ("cluster-trace-gpu-v2023/",)


def test_every_file_path_the_docs_name_exists() -> None:
    pages = [ROOT / "README.md", ROOT / "REPRODUCTION.md", ROOT / "benchmarks" / "README.md"]
    pages += sorted(DOCS.glob("*.md"))
    missing = [
        f"{page.relative_to(ROOT)}:{n}: {path}"
        for page in pages
        for n, line in enumerate(page.read_text().splitlines(), 1)
        for path in CODE_PATH.findall(line)
        if not path.startswith(UPSTREAM_PATHS) and not any((base / path).exists() for base in PATH_ROOTS)
    ]
    assert not missing, "\n".join(missing)
