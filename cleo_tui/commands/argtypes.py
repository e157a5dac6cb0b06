"""argparse types for the CLI's flags (numbers, paths, dates): a bad value is one paragraph, exit 2.

The type raises `BadNumber` or `BadArgument` (BrainErrors), which argparse does not catch, so
`cli.main` prints it as a user's mistake instead of argparse's usage dump.
Ids and counts end up in SQLite, whose integers are signed 64-bit: a larger
number would be an OverflowError deep inside a query.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

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


class BadArgument(BrainError):
    """A flag got a value it cannot use (an empty path, a date that is no date)."""


def _not_blank(kind: str, refusal: str) -> Callable[[str], str]:
    """A type taking any text with a non-space in it, refusing a blank one with `refusal`
    (`kind` names the value in argparse's own messages)."""
    def parse(value: str) -> str:
        if not value.strip():
            raise BadArgument(refusal)
        return value

    parse.__name__ = kind
    return parse


def nonempty_path(flag: str, what: str = "a path") -> Callable[[str], str]:
    """A type for `flag`: any path but the empty one (which would quietly mean "look from here")."""
    return _not_blank("path", f"{flag} wants {what}, and got an empty one. Give the path, or leave {flag} out.")


def nonblank_text(flag: str) -> Callable[[str], str]:
    """A type for a value that names something (a session, a tenant, a source): a blank one names nothing."""
    return _not_blank("text", f"{flag} is blank; give a value, or leave {flag} out.")


def nonblank_filter(flag: str) -> Callable[[str], str]:
    """A type for a filter `flag`: any text with a non-space in it. A blank one would select as if
    the filter were left out (`evict --search "$WORDS" --yes` with WORDS empty: every observation)."""
    return _not_blank("filter", f"{flag} is blank, which would select as if it were left out; nothing was "
                                f"written. Give it a value, or leave {flag} out.")


def iso_time(flag: str) -> Callable[[str], str]:
    """A type for `flag`: an ISO date (2026-05-01) or date and time, as the text traces compare with.

    A date stays as typed; a date and time becomes UTC in the traces' own form
    (`2026-05-01T10:00:00.000Z`; a time without a zone is taken as UTC), so it
    compares as text with the `ts` column.
    """
    def parse(value: str) -> str:
        text = value.strip()
        try:
            when = datetime.fromisoformat(text)
        except ValueError:
            raise BadArgument(f"{flag} wants an ISO date or date and time, such as 2026-05-01 or "
                              f"2026-05-01T14:30Z; {one_line(value, 40)!r} is not one.") from None
        if len(text) == 10:  # a date alone: compares as text with every time of that day and after
            return when.date().isoformat()
        if when.tzinfo is not None:
            when = when.astimezone(UTC).replace(tzinfo=None)
        return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"

    parse.__name__ = "date"
    return parse
