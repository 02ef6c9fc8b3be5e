"""The one catalogue of user errors: each renders as one line, and the CLI exits with code 2."""

from __future__ import annotations

import importlib


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


class MissingExtra(UserError):
    """A feature whose optional dependency is not installed: names the pip extra that installs it."""


def require_extra(module: str, extra: str, feature: str) -> None:
    """Import `module`, or raise `MissingExtra`: `feature` needs the `extra` of origamig installed."""
    try:
        importlib.import_module(module)
    except ImportError:
        package = module.split(".")[0]
        raise MissingExtra(
            f"{feature}: {package} is not installed; install it with: pip install 'origamig[{extra}]'"
        ) from None
