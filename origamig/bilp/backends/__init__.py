"""Solver backends behind one Protocol (see base.py)."""
