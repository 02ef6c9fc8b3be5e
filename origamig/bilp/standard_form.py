"""The standard form a solver reads: sparse rows, bounds, integrality, objective and the start.

Kept apart from the Pyomo side (`compile.py`) so that a solver's helper process, which receives
these records pickled, imports numpy and its solver, not Pyomo.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)
class SparseRows:
    """A matrix in compressed sparse row form: row r holds `indices/data[indptr[r]:indptr[r+1]]`."""

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    shape: tuple[int, int]

    @property
    def nnz(self) -> int:
        return len(self.data)


@dataclass(frozen=True, eq=False)
class Compiled:
    """max c·x + offset  s.t.  row_lo ≤ A x ≤ row_hi,  col_lo ≤ x ≤ col_hi,  x_n integer where `integer`."""

    A: SparseRows
    row_lo: np.ndarray
    row_hi: np.ndarray
    col_lo: np.ndarray
    col_hi: np.ndarray
    integer: np.ndarray
    c: np.ndarray
    offset: float
    hint: np.ndarray  # the current placement, pending VMs rejected: always feasible
    columns: tuple[object, ...]  # the Pyomo variable of each column
    objective_scale: int  # smallest 10^k (k ≤ 6) that makes every c integral; 0 if none

    @property
    def size(self) -> dict[str, int]:
        return {"columns": int(self.A.shape[1]), "rows": int(self.A.shape[0]), "nonzeros": int(self.A.nnz)}

    @property
    def objective_step(self) -> float:
        """Objective values of integer solutions are multiples of this (0 when unknown)."""
        return 1.0 / self.objective_scale if self.objective_scale else 0.0

    def objective_of(self, x: np.ndarray) -> float:
        return float(self.c @ x) + self.offset

    def trivial_bound(self) -> float:
        """max c·x over the column bounds alone: a valid bound when a solver stops before it has one."""
        return float(np.sum(np.where(self.c > 0, self.c * self.col_hi, self.c * self.col_lo))) + self.offset

    def holds(self, x: np.ndarray, tolerance: float = 1e-6) -> bool:
        """Whether `x` is a solution: within the column bounds, integral where required, every row met."""
        if len(x) != self.A.shape[1]:
            return False
        if np.any(x < self.col_lo - tolerance) or np.any(x > self.col_hi + tolerance):
            return False
        if np.any(np.abs(x[self.integer] - np.round(x[self.integer])) > tolerance):
            return False
        A = self.A
        rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
        activity = np.bincount(rows, weights=A.data * x[A.indices], minlength=A.shape[0])
        low, high = self.row_lo - tolerance, self.row_hi + tolerance
        return bool(np.all(activity >= low) and np.all(activity <= high))
