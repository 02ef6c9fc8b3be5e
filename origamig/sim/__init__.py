"""The discrete-event simulator, one run: workload, event loop, energy, metrics (many runs: `study/`)."""
