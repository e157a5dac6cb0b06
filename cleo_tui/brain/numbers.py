"""Numbers read from brain rows: finite, or None.

SQLite keeps whatever a writer put in a numeric column: REAL `inf`, `-inf`
and NaN (NULL when read back through Python's sqlite3), text, blobs. Every
place that reads a number from a row goes through these two functions, so a
non-finite or unreadable value is treated as "no value" instead of raising
(`int(inf)` → OverflowError) or poisoning sums and comparisons.
"""

from __future__ import annotations

import math
from typing import Any


def finite_or_none(value: Any) -> float | None:
    """`value` as a finite float; None for NULL, ±inf, NaN, booleans, blobs and unparsable text."""
    if value is None or isinstance(value, (bool, bytes, bytearray, memoryview)):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def finite_int_or_none(value: Any) -> int | None:
    """`value` as an int (a finite float is truncated toward zero); None where `finite_or_none` is."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    number = finite_or_none(value)
    return None if number is None else int(number)


def quality_text(value: Any, compact: bool = False) -> str:
    """A quality score as every view shows it: two decimals (`0.45`; compact `.45` for 4-cell
    columns), empty for no value. A stored 0.45499999999999996 never reaches the screen."""
    number = finite_or_none(value)
    if number is None:
        return ""
    text = f"{number:.2f}"
    if compact and 0 <= number < 0.995:
        return text[1:]
    if compact and text == "1.00":
        return "1.0"
    return text
