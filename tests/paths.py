"""Where the tests find the repository's files, wherever a test module sits under tests/."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent  # the repository (or the unpacked sdist)
TEST_DATA = TESTS / "data"
