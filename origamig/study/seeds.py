"""`--seeds`, one meaning everywhere: `N` is seeds 1..N, `A..B` a range, `1,4,6..8` a list."""

from __future__ import annotations

import re
from typing import NoReturn

from origamig.errors import UserError

_PART = re.compile(r"\s*(\d+)\s*(?:\.\.\s*(\d+)\s*)?")


def parse_seeds(text: str, option: str = "--seeds") -> tuple[int, ...]:
    """The seeds `text` names, in its order without repeats: `5` → 1..5, `3..3` → 3, `6,7,8`."""
    spec = f"1..{int(text)}" if re.fullmatch(r"\s*\d+\s*", text) else text
    seeds: list[int] = []
    for part in spec.split(","):
        m = _PART.fullmatch(part)
        if m is None or (m.group(2) is not None and int(m.group(2)) < int(m.group(1))):
            _refuse(text, option)
        lo = int(m.group(1))
        seeds.extend(range(lo, int(m.group(2) or lo) + 1))
    if not seeds or min(seeds) < 1:
        _refuse(text, option)
    return tuple(dict.fromkeys(seeds))


def _refuse(text: str, option: str) -> NoReturn:
    raise UserError(
        f"{option}: {text!r} is not N (seeds 1..N), A..B or a list such as 1,2,3 of seeds of at least 1"
    )
