"""argparse types for the CLI's numeric flags: a bad value is one paragraph, exit 2.

The type raises `BadNumber` (a BrainError), which argparse does not catch, so
`cli.main` prints it as a user's mistake instead of argparse's usage dump.
Ids and counts end up in SQLite, whose integers are signed 64-bit: a larger
number would be an OverflowError deep inside a query.
"""

from __future__ import annotations

from collections.abc import Callable

from cleo_tui.brain.errors import BrainError
from cleo_tui.safe_text import one_line

SQLITE_MIN = -(2**63)
SQLITE_MAX = 2**63 - 1


class BadNumber(BrainError):
    """A numeric flag got something that is not a whole number in range."""


def sqlite_int(flag: str, low: int = SQLITE_MIN, high: int = SQLITE_MAX,
               what: str = "a whole number") -> Callable[[str], int]:
    """A type for `flag`: a whole number (underscores allowed) within [low, high]; `what` names it."""
    def parse(value: str) -> int:
        try:
            number = int(str(value).strip().replace("_", ""))
        except ValueError:
            raise BadNumber(f"{flag} wants {what}, not {one_line(value, 40)!r}.") from None
        if not low <= number <= high:
            raise BadNumber(f"{flag} must be between {low:,} and {high:,}; got a number with "
                            f"{len(str(abs(number)))} digits." if abs(number) > 10**20 else
                            f"{flag} must be between {low:,} and {high:,}; got {number:,}.")
        return number

    parse.__name__ = "integer"  # argparse names the type in its own messages
    return parse
