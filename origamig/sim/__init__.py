"""The discrete-event simulator: workload, event loop, energy, metrics and the multi-run runner."""
