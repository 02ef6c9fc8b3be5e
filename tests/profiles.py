"""How many examples the property tests draw: one Hypothesis profile per kind of run, picked by
`HYPOTHESIS_PROFILE` (docs/development.md#tests).

- `dev` (the default): half of CI's counts, for a quick loop while working;
- `ci`: the counts written in the tests (`scripts/check` sets it);
- `thorough`: ten times CI's (`scripts/check --thorough`, e.g. nightly).

A test writes its CI count as `max_examples=examples(n)`, so every profile scales it.
"""

from __future__ import annotations

import os

SCALES = {"dev": 0.5, "ci": 1.0, "thorough": 10.0}
DEFAULT = "dev"
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", DEFAULT)
if PROFILE not in SCALES:
    raise SystemExit(f"HYPOTHESIS_PROFILE: {PROFILE!r} is not a profile ({', '.join(SCALES)})")


def examples(n: int) -> int:
    """The examples a test whose CI count is `n` draws under the active profile (at least 1)."""
    return max(1, round(n * SCALES[PROFILE]))
