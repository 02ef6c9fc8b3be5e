"""The paper's tables and figures as thin scripts over the package, run as `python -m benchmarks.<name>`
from the repository root (benchmarks/README.md lists them). Results land in benchmarks/results/."""

from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
