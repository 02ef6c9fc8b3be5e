"""What the service checks of every request before any work, so that nothing it keeps can break a
later read: every number in a body finite and bounded, every string valid Unicode, ids no longer than
a Kubernetes name, path parameters plain ASCII integers of bounded length.
"""

from __future__ import annotations

import math
from typing import Any

MAX_NUMBER = 1e15  # the largest magnitude of a number in a request body
MAX_NAME = 253  # a Kubernetes object name (DNS subdomain), and so a VM id
MAX_NAMESPACE = 63  # a Kubernetes namespace (DNS label): a pod's VM id is `namespace/name`
MAX_INT_DIGITS = 18  # a plan id or step number


def body_problems(doc: Any, where: str = "body", limit: int = 20) -> list[str]:
    """Every number that is not finite or exceeds `MAX_NUMBER`, and every string (key or value) that
    is not valid Unicode (a lone surrogate), each named by its path; at most `limit`."""
    problems: list[str] = []
    todo: list[tuple[Any, str]] = [(doc, where)]
    while todo and len(problems) < limit:
        node, path = todo.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if not _valid_text(key):
                    problems.append(f"{path}: a key holds a lone surrogate ({key!r}), not valid Unicode")
                todo.append((value, f"{path}.{key}" if _valid_text(key) else path))
        elif isinstance(node, list):
            todo.extend((value, f"{path}[{n}]") for n, value in enumerate(node))
        elif isinstance(node, float) and not (math.isfinite(node) and abs(node) <= MAX_NUMBER):
            problems.append(f"{path}: {node!r} is out of range (at most {MAX_NUMBER:g} in magnitude)")
        elif isinstance(node, int) and not isinstance(node, bool) and abs(node) > MAX_NUMBER:
            problems.append(f"{path}: {node} is out of range (at most {MAX_NUMBER:g} in magnitude)")
        elif isinstance(node, str) and not _valid_text(node):
            problems.append(f"{path}: {node[:40]!r} holds a lone surrogate, not valid Unicode")
    return problems


def _valid_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def id_problem(vm_id: str, where: str = "id") -> str | None:
    """Why `vm_id` is too long for an id, or None: at most `MAX_NAME` characters, or a pod's
    `namespace/name` (namespace at most `MAX_NAMESPACE`, name at most `MAX_NAME`)."""
    if len(vm_id) <= MAX_NAME:
        return None
    namespace, sep, name = vm_id.partition("/")
    if sep and len(namespace) <= MAX_NAMESPACE and len(name) <= MAX_NAME:
        return None
    return (
        f"{where}: {len(vm_id)} characters is too long (at most {MAX_NAME}, a Kubernetes name, "
        f"or namespace/name of at most {MAX_NAMESPACE}/{MAX_NAME})"
    )


def plain_int(raw: str, digits: int = MAX_INT_DIGITS) -> int | None:
    """`raw` as a non-negative integer when it is plain ASCII digits (at most `digits`), else None."""
    if raw.isascii() and raw.isdigit() and len(raw) <= digits:
        return int(raw)
    return None
