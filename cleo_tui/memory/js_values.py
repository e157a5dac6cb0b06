"""JavaScript's rules for the few value operations CLEO's memory bridge performs (it runs on Node).

CLEO builds each bridge line with template strings, `String.prototype.slice`,
`Number.prototype.toFixed`, `parseFloat` and `new Date(text)`. Python's nearest
equivalents differ at the edges that real brains reach (characters beyond U+FFFF,
halves in rounding, dates without a zone, NULLs), so each is written out here with
JavaScript's behaviour. A value JavaScript would throw on raises `JsTypeError`.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any


class JsTypeError(Exception):
    """What Node would throw (a TypeError) for this value, in words."""


def js_number_text(value: float | int) -> str:
    """`String(n)` for a JavaScript number: integers without ".0", NaN and Infinity by name."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    if "e" in text:  # Python writes 1e-07, JavaScript 1e-7 and 1e+21
        mantissa, exponent = text.split("e")
        sign = "-" if exponent.startswith("-") else "+"
        text = f"{mantissa}e{sign}{exponent.lstrip('+-').lstrip('0') or '0'}"
    return text


def js_text(value: Any) -> str:
    """`${value}` in a template string, for what node:sqlite or JSON.parse can hand back."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float)):
        return js_number_text(value)
    if isinstance(value, (bytes, bytearray, memoryview)):  # a BLOB arrives as a Uint8Array: "1,2,3"
        return ",".join(str(b) for b in bytes(value))
    if isinstance(value, list):
        return js_join(value, ",")
    if isinstance(value, dict):
        return "[object Object]"
    return str(value)


def js_join(values: list[Any], separator: str) -> str:
    """`Array.prototype.join`: null and undefined become empty strings."""
    return separator.join("" if v is None else js_text(v) for v in values)


def utf16_units(text: str) -> int:
    """`text.length` in JavaScript: UTF-16 code units (a character beyond U+FFFF counts twice)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def js_slice(value: Any, end: int, what: str = "the value") -> str:
    """`value.slice(0, end)` as Node runs it, the result written out as UTF-8.

    A string is cut in UTF-16 code units, so a cut through a character beyond U+FFFF
    leaves half a surrogate pair, which Node writes to a file as U+FFFD. A BLOB (a
    Uint8Array) is cut in bytes and written as its numbers. NULL and numbers have no
    `slice`: Node throws, which `JsTypeError` says.
    """
    if isinstance(value, str):
        if value.isascii():
            return value[:end]
        if utf16_units(value) <= end:
            return value
        units = value.encode("utf-16-le", "surrogatepass")[: 2 * end]
        return units.decode("utf-16-le", "replace")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return js_text(bytes(value)[:end])
    if isinstance(value, list):
        return js_text(value[:end])
    kind = "NULL" if value is None else f"a {type(value).__name__} ({js_text(value)})"
    raise JsTypeError(f"{what} is {kind}, which has no .slice() in JavaScript")


def js_truthy(value: Any) -> bool:
    """JavaScript truthiness: "", 0, NaN, null are false; every list and object is true."""
    if value is None or value is False:
        return False
    if isinstance(value, (int, float)):
        return not (value == 0 or (isinstance(value, float) and math.isnan(value)))
    if isinstance(value, str):
        return value != ""
    return True


_FLOAT_PREFIX = re.compile(r"[+-]?(?:Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")


def js_parse_float(value: Any) -> float:
    """`parseFloat(value)`: the longest number at the start of its text, else NaN."""
    if isinstance(value, bool):
        return math.nan
    if isinstance(value, (int, float)):
        return float(value)
    match = _FLOAT_PREFIX.match(js_text(value).lstrip(" \t\n\r\f\v\u00a0\ufeff"))
    if match is None:
        return math.nan
    text = match.group()
    return float(text.replace("Infinity", "inf"))


def js_to_fixed(value: float, digits: int) -> str:
    """`value.toFixed(digits)`: half away from zero on the exact binary value (Python's format rounds
    half to even: 0.625 is "0.62" there and "0.63" in JavaScript)."""
    if math.isnan(value) or math.isinf(value) or abs(value) >= 1e21:
        return js_number_text(value)
    quantum = Decimal(1).scaleb(-digits)
    return format(Decimal(value).quantize(quantum, rounding=ROUND_HALF_UP), "f")


_DATE = re.compile(
    r"\s*([+-]\d{6}|\d{4})-(\d{2})-(\d{2})"
    r"(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?"
    r"\s*(Z|z|[+-]\d{2}:?\d{2})?\s*")


def js_date_ms(value: Any) -> float:
    """`new Date(value).getTime()`, for the forms CLEO's timestamps take; NaN when unreadable.

    A date alone (`2026-05-01`) is UTC midnight; a date and time without a zone
    (`2026-05-01 10:00:00`, SQLite's `datetime('now')`) is local time, as V8 reads it;
    a `Z` or an offset is honoured. NULL is the epoch (`new Date(null)`); a number is
    milliseconds. Other free-form text V8 might still read (`May 1 2026`) counts as NaN.
    """
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) and abs(value) <= 8.64e15 else math.nan
    match = _DATE.fullmatch(js_text(value))
    if match is None:
        return math.nan
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    try:
        moment = datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0),
                          int((fraction or "0")[:6].ljust(6, "0")))
    except ValueError:
        return math.nan
    if hour is None and zone is None:
        aware = moment.replace(tzinfo=UTC)
    elif zone is None:
        aware = moment.astimezone()  # local time, as V8 reads a date-time without a zone
    else:
        aware = datetime.fromisoformat(moment.isoformat() + _iso_zone(zone))
    return float((aware - _EPOCH) // timedelta(milliseconds=1))  # whole milliseconds, as a Date holds them


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _iso_zone(zone: str) -> str:
    if zone in ("Z", "z"):
        return "+00:00"
    digits = zone[1:].replace(":", "")
    return f"{zone[0]}{digits[:2]}:{digits[2:]}"


def js_iso_seconds(moment: datetime) -> str:
    """`new Date().toISOString().slice(0, 19)`: UTC, to the second, with a `T`."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
