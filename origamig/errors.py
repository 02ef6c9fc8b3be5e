"""The one catalogue of user errors: each renders as one line, and the CLI exits with code 2."""

from __future__ import annotations


class UserError(Exception):
    """A problem with the user's input. `str(err)` is one line (or one line per problem)."""

    exit_code = 2

    def __init__(self, problems: str | list[str]) -> None:
        self.problems: list[str] = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


class CatalogError(UserError):
    """A malformed hardware-catalog file: names the file, the field and the value."""


class SnapshotError(UserError):
    """A malformed or inconsistent snapshot: one line per problem, each naming the JSON path."""


class PlacementError(UserError):
    """A placement that breaks a constraint (overlap, unknown start, capacity overrun)."""
