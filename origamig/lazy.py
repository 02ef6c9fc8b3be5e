"""A package's public names that load on first use (PEP 562), so that importing the package is cheap."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(
    package: str, homes: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of `package`, whose public names are defined in the modules
    `homes` maps them to; a name read once is kept in `namespace` (the package's globals)."""

    def get(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value  # later reads skip this function
        return value

    def names() -> list[str]:
        return sorted(set(namespace) | set(homes))

    return get, names
