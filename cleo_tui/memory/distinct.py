"""The distinct values of a numpy array, as `np.unique` gives them, without importing numpy.ma.

`np.unique` imports `numpy.ma` on its first call: 15-20 ms of CPU that a command or a first scan
pays for nothing (measured in `dedup`'s cold run). Sorting and keeping each run's first value is
all these callers need.
"""

from __future__ import annotations

import numpy as np


def distinct_values(values: np.ndarray) -> np.ndarray:
    """The distinct values, sorted: `np.unique(values)`."""
    ordered = np.sort(values)
    if len(ordered) < 2:
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


def distinct_with_first(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct values sorted, the index of each one's first occurrence): `np.unique(values,
    return_index=True)`."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    first = np.ones(len(ordered), dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    return ordered[first], order[first]
