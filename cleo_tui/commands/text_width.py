"""How wide the commands' text is: 80 columns where a command lays it out (`wrapped`), and on a
terminal no line wider than the terminal (`fitted_to_terminal`).

A terminal cuts a line wider than itself wherever its last column falls, mid-word; on an
80-column terminal `traces`, `prune`, `dedup` and `replay` printed most of their lines that way.
On a terminal, each such line is now broken at spaces and goes on a few columns in from its own
indent. In a pipe nothing changes: every record stays one line, for grep and scripts (and
`--json` is never touched).
"""

from __future__ import annotations

import io
import re
import shutil
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from rich.cells import cell_len

from cleo_tui.safe_text import one_line

WIDTH = 80  # the lines a command lays out itself (history, sweeps, the bridge)
HANG = 4    # a broken line goes on this many columns in from its own indent
_WORDS = re.compile(r"(\s*)(\S+)")


def wrapped(text: str, indent: str = "  ") -> list[str]:
    """`text` on one line, then in lines of at most WIDTH columns; the lines after the first two
    columns further in."""
    return textwrap.wrap(one_line(text), WIDTH, initial_indent=indent, subsequent_indent=indent + "  ") or [indent]


def fitted_lines(line: str, width: int) -> list[str]:
    """`line` in lines of at most `width` terminal cells, broken at spaces; each after the first
    starts HANG columns in from the line's own indent. A word wider than a line stays whole on a
    line of its own (a path or a URL stays one piece to copy; the terminal shows the rest of it)."""
    if cell_len(line) <= width:
        return [line]
    body = line.lstrip(" ")
    indent = len(line) - len(body)
    hang = " " * min(indent + HANG, width // 2)
    lines: list[str] = []
    row, used = line[:indent], indent
    fresh = True  # no word on the row yet
    for gap, word in _WORDS.findall(body):
        size = cell_len(word)
        if not fresh and used + cell_len(gap) + size > width:
            lines.append(row)
            row, used, gap = hang, len(hang), ""
        elif fresh:
            gap = ""
        row += gap + word
        used += cell_len(gap) + size
        fresh = False
    lines.append(row)
    return lines


class FittedOutput(io.TextIOBase):
    """A text stream that writes each line to `stream` fitted to `width` (`fitted_lines`)."""

    def __init__(self, stream: TextIO, width: int) -> None:
        super().__init__()
        self.stream, self.width = stream, width
        self._pending = ""  # the line written so far, not yet ended

    def write(self, text: str) -> int:
        *ended, self._pending = (self._pending + text).split("\n")
        if ended:
            self.stream.write("".join(f"{part}\n" for line in ended for part in fitted_lines(line, self.width)))
        return len(text)

    def flush(self) -> None:
        """Write the line begun too (a question waiting for its answer), then flush."""
        if self._pending:
            self.stream.write("\n".join(fitted_lines(self._pending, self.width)))
            self._pending = ""
        self.stream.flush()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]  # (the stream's, not TextIOBase's None)
        return self.stream.encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return self.stream.errors

    @property
    def buffer(self) -> Any:
        """The bytes beneath (JSON is written there), after the text written so far."""
        self.flush()
        return self.stream.buffer


@contextmanager
def fitted_to_terminal(enabled: bool = True) -> Iterator[None]:
    """While the block runs, standard output fits each line to the terminal's width, when it is a
    terminal and `enabled` (not for JSON)."""
    stream = sys.stdout
    if not enabled or stream is None or not stream.isatty():
        yield
        return
    fitted = FittedOutput(stream, max(20, shutil.get_terminal_size().columns))
    sys.stdout = fitted
    try:
        yield
    finally:
        sys.stdout = stream
        try:
            fitted.flush()
        except (OSError, ValueError):
            pass  # (the terminal went away: nothing left to show it on)
