"""`memory.distinct` answers as `np.unique` does (which it stands in for, to spare numpy.ma's import)."""

from __future__ import annotations

import numpy as np
import pytest

from cleo_tui.memory.distinct import distinct_values, distinct_with_first


@pytest.mark.parametrize("size", [0, 1, 2, 7, 2_000])
def test_distinct_matches_np_unique(size):
    values = np.random.default_rng(size).integers(0, 40, size).astype(np.uint64)
    expected, first = np.unique(values, return_index=True)
    found, found_first = distinct_with_first(values)
    assert found.tolist() == expected.tolist() and found_first.tolist() == first.tolist()
    assert distinct_values(values).tolist() == expected.tolist()
