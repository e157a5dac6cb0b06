"""Make untrusted text safe to show: no terminal control ever reaches the screen."""

from __future__ import annotations

import re

# C0 controls except tab and newline, DEL, and C1 controls (0x80-0x9f, which some
# terminals treat as escape introducers), plus bidi overrides that reorder text.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


# For `Input(restrict=NO_CONTROLS)`: an Input draws its value raw, so typed or pasted
# text holding ESC or another control character would reach the terminal; refuse it.
NO_CONTROLS = "[^\x00-\x08\x0b-\x1f\x7f-\x9f]*"


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if code < 0x20:
        return chr(0x2400 + code)  # the Unicode "control picture": ␛ for ESC, ␀ for NUL
    if code == 0x7F:
        return "\u2421"
    return f"<U+{code:04X}>"


def printable(text: object, keep_newlines: bool = True) -> str:
    """`text` with every control character replaced by a visible stand-in.

    ESC becomes ␛, so an ANSI or OSC sequence shows as plain characters.
    Newlines are kept (or shown as ␊ with keep_newlines=False); tabs stay.
    """
    if text is None:
        return ""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    out = _CONTROL.sub(_visible, str(text))
    if not keep_newlines:
        out = out.replace("\r", "\u240d").replace("\n", "\u240a")
    return out


def one_line(text: object, width: int | None = None) -> str:
    """Printable, on one line (newlines and tabs as spaces), cut to `width` with an ellipsis."""
    out = printable(text, keep_newlines=True).replace("\r", " ").replace("\n", " ").replace("\t", " ")
    if width is not None and len(out) > width:
        out = out[: max(0, width - 1)] + "…"
    return out


NO_ID = "(no id)"


def shown_id(value: object, width: int | None = None) -> str:
    """A memory's id on one line, or "(no id)" for a row whose id is NULL or empty (nothing can name it)."""
    return one_line(value, width) if value not in (None, "") else NO_ID


SHOWN_NAMES = 20  # names a report lists of one kind; --json lists them all


def titled_lines(title: str, lines: list[str], shown: int = SHOWN_NAMES) -> list[str]:
    """A titled list of at most `shown` lines, each cut to one safe line; nothing when `lines` is empty."""
    if not lines:
        return []
    out = [title, *(f"  {one_line(line, 200)}" for line in lines[:shown])]
    if len(lines) > shown:
        out.append(f"  … and {len(lines) - shown:,} more (--json lists them all)")
    return out


def safe_text(text: object, width: int = 400) -> str:
    """An exception's text or any message part: printable, one line, at most `width` characters."""
    return one_line(text, width)


def safe_path(path: object) -> str:
    """A path as it may be shown: printable, on one line (a name may hold ESC or a newline)."""
    return one_line(str(path), 300)


def sql_text_prefix(column_sql: str, chars: int) -> str:
    """SQL for the first `chars` characters of a TEXT column, NULs included.

    SQLite's substr() and length() stop at a NUL inside TEXT; cast to BLOB they
    see every byte. 4 bytes per character is the UTF-8 worst case; `cut_text`
    decodes and cuts the result in Python.
    """
    return f"CASE WHEN typeof({column_sql}) = 'text' THEN substr(CAST({column_sql} AS BLOB), 1, {chars * 4}) " \
           f"ELSE {column_sql} END"


def cut_text(value: object, chars: int) -> str:
    """`value` as text (bytes decoded leniently), at most `chars` characters, NULs kept.

    A UTF-8 sequence cut by a byte-wise prefix (see `sql_text_prefix`) is dropped
    rather than shown as a replacement character.
    """
    if value is None:
        return ""
    if isinstance(value, bytes):
        text = value.decode("utf-8", "replace")
        if text.endswith("\ufffd") and not value.endswith(b"\xef\xbf\xbd"):
            text = text.rstrip("\ufffd")  # the last character was cut mid-sequence
    else:
        text = str(value)
    return text[:chars]


_IRREGULAR = {"was": "were", "reason": "reasons", "match": "matches", "its": "their"}


def plural(count: int, word: str, many: str | None = None) -> str:
    """`count` and `word` as a person writes them: "1 observation", "2 observations", "1,024 rows".

    `many` is the plural when adding "s" is wrong ("1 entry", "3 entries").
    """
    if count == 1:
        return f"{count:,} {word}"
    return f"{count:,} {many or _IRREGULAR.get(word) or word + 's'}"
