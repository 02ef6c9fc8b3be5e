"""Test-wide set-up: the Hypothesis profiles of `tests/profiles.py`, one loaded per run."""

from __future__ import annotations

from hypothesis import settings

from tests.profiles import PROFILE, SCALES

for _name in SCALES:
    # Tests without their own count draw Hypothesis's default of 100, scaled like the others. CI draws
    # the same examples on every run (a red CI is a change's doing, not the draw's); `dev` and
    # `thorough` draw new ones each time, to find what CI's never will.
    settings.register_profile(
        _name,
        max_examples=max(1, round(100 * SCALES[_name])),
        print_blob=True,
        derandomize=_name == "ci",
    )
settings.load_profile(PROFILE)
