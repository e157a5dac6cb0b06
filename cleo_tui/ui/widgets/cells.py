"""Fitting text into terminal cells, not code points.

A CJK character or an emoji takes two cells, and so does an emoji ZWJ sequence
(👨‍👩‍👧: three emoji joined, one grapheme cluster) as terminals draw it; cutting or
padding by `len`, or by code point, would push every later column of a table to the
right and clip the last one. Every place in the UI that fits text to a width goes
through these functions, which measure and cut by grapheme cluster (Rich's `cell_len`,
`set_cell_size` and `split_graphemes`; rich is pinned for them in pyproject.toml).
"""

from __future__ import annotations

import re

from rich.cells import cell_len, set_cell_size, split_graphemes

from cleo_tui.safe_text import one_line

ELLIPSIS = "…"


def cut_cells(text: object, width: int) -> str:
    """`text` printable on one line, at most `width` cells, an ellipsis where it was cut."""
    out = one_line(text)
    if width <= 0:
        return ""
    if cell_len(out) <= width:
        return out
    # set_cell_size never splits a wide character: it pads with a space instead
    return set_cell_size(out, width - 1).rstrip(" ") + ELLIPSIS if width > 1 else ELLIPSIS


def fit_cells(text: object, width: int, right: bool = False, middle: bool = False) -> str:
    """`text` cut to `width` cells (see cut_cells; `middle`: cut_cells_middle) and padded to exactly `width` cells.

    A right-aligned grouped number ("1,665,023") that does not fit is rounded instead ("1.67M"):
    cut, it would read as a number a thousand times smaller."""
    rounded = rounded_number(text, width) if right else None
    out = rounded or (cut_cells_middle(text, width) if middle else cut_cells(text, width))
    pad = " " * max(0, width - cell_len(out))
    return pad + out if right else out + pad


_GROUPED = re.compile(r"-?\d{1,3}(?:,\d{3})+")
_UNITS = (("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3))


def rounded_number(text: object, width: int) -> str | None:
    """A grouped integer too wide for `width` cells, to the most significant figures (3 at most)
    that fit, with k, M, G or T ("338,801,234" in 5 cells: "339M"); None when `text` is not
    such a number, already fits, or fits in no rounding."""
    if not isinstance(text, str) or len(text) <= width or not _GROUPED.fullmatch(text):
        return None
    number = int(text.replace(",", ""))
    for figures in (3, 2, 1):
        out = _with_unit(number, figures)
        if len(out) <= width:
            return out
    return None


def _with_unit(number: int, figures: int) -> str:
    """`number` to `figures` significant figures in the largest unit it reaches (a rounding up
    to 1000 of a unit moves to the next one: 999,999 is "1.00M", not "1000k")."""
    sign, size = ("-" if number < 0 else ""), abs(number)
    k = next((k for k, (_, scale) in enumerate(_UNITS) if size >= scale), len(_UNITS) - 1)
    value = size / _UNITS[k][1]
    if round(value, max(0, figures - len(str(int(value))))) >= 1000 and k > 0:
        k -= 1
        value = size / _UNITS[k][1]
    whole = len(str(int(round(value, max(0, figures - len(str(int(value))))))))  # 9.999 rounds to 10.0
    return f"{sign}{value:.{max(0, figures - whole)}f}{_UNITS[k][0]}"


def cut_cells_start(text: object, width: int) -> str:
    """Like cut_cells, but the start gives way: "…" and the last `width - 1` cells (paths)."""
    out = one_line(text)
    if width <= 0:
        return ""
    if cell_len(out) <= width:
        return out
    # Whole grapheme clusters from the end: a ZWJ sequence (👨‍👩‍👧, two cells) is never split.
    spans, _ = split_graphemes(out)
    room = width - 1
    start = len(out)
    for begin, _end, cells in reversed(spans):
        if cells > room:
            break
        room -= cells
        start = begin
    return ELLIPSIS + out[start:]


def cut_cells_middle(text: object, width: int) -> str:
    """Like cut_cells, but the middle gives way: ids keep their start and their distinct tail.

    CLEO's ids (`O-<time in base 36>-<sequence>`) written close together differ only at
    the end: cut at the end, they all read the same. The tail keeps three fifths of the room.
    """
    out = one_line(text)
    if width <= 0:
        return ""
    if cell_len(out) <= width:
        return out
    if width < 4:
        return cut_cells(out, width)
    room = width - 1
    tail = cut_cells_start(out, room - room * 2 // 5 + 1)[1:]  # without its own "…"
    head = set_cell_size(out, room - cell_len(tail)).rstrip(" ")
    return head + ELLIPSIS + tail
