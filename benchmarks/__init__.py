"""The paper's tables and figures and the package's speed as thin scripts over the package, grouped by
purpose (paper/, studies/, solver/, product/) and run as `python -m benchmarks.<group>.<name>` from the
repository root (benchmarks/README.md lists them). Results land in benchmarks/results/."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the repository's root
RESULTS = ROOT / "benchmarks" / "results"
