"""Solver experiments still in use: recorded calls replayed, solvers side by side, limits and bounds."""
