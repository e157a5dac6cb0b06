"""How wide the commands' text is: 80 columns where a command lays it out (`wrapped`), and on a
terminal no line wider than the terminal (`fitted_to_terminal`).

A terminal cuts a line wider than itself wherever its last column falls, mid-word; on an
80-column terminal `traces`, `prune`, `dedup` and `replay` printed most of their lines that way.
On a terminal, each such line is now broken at spaces and goes on under the row's text
(`fitted_lines`). In a pipe nothing changes: every record stays one line, for grep and scripts
(and `--json` is never touched).
"""

from __future__ import annotations

import io
import re
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from cleo_tui.commands.common import is_terminal
from cleo_tui.safe_text import one_line

WIDTH = 80  # the lines a command lays out itself (history, sweeps, the bridge)
HANG = 4    # a broken line goes on this many columns in from its own indent, when it has no columns
_FIRST_COLUMN = re.compile(r" *\S.*?  +(?=\S)")  # a row's first column and the spaces after it


def wrapped(text: str, indent: str = "  ") -> list[str]:
    """`text` on one line, then in lines of at most WIDTH cells; the lines after the first two
    columns further in."""
    import wcwidth  # (imported when used: 12 ms that every command in a pipe would pay for nothing)

    return wcwidth.wrap(one_line(text), WIDTH, initial_indent=indent, subsequent_indent=indent + "  ",
                        break_on_hyphens=False) or [indent]


def fitted_lines(line: str, width: int) -> list[str]:
    """`line` in lines of at most `width` terminal cells, broken at spaces (wcwidth's cell-measuring
    textwrap). The lines after the first go on under a row's second column ("label:   value",
    "ID  reasons"), or else HANG columns in from the line's own indent. A word wider than a line
    stays whole on a line of its own (a path or a URL stays one piece to copy; the terminal shows
    the rest of it). A question's last space stays, before its answer."""
    import wcwidth

    if wcwidth.width(line) <= width:
        return [line]
    body = line.lstrip(" ")
    column = _FIRST_COLUMN.match(line)
    second = wcwidth.width(column.group()) if column else width
    hang = " " * (second if second <= width // 2 else min(len(line) - len(body) + HANG, width // 2))
    lines = wcwidth.wrap(line, width, subsequent_indent=hang, break_long_words=False, break_on_hyphens=False)
    tail = body[len(body.rstrip()):]
    if tail and wcwidth.width(lines[-1] + tail) <= width:
        lines[-1] += tail
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
def fitted_to_terminal(stdout: bool = True, stderr: bool = False) -> Iterator[None]:
    """While the block runs, standard output (and with `stderr`, standard error) fits each line to
    the terminal's width, each where it is a terminal (not standard output for JSON)."""
    names = [name for name, wanted in (("stdout", stdout), ("stderr", stderr)) if wanted]
    streams = {name: getattr(sys, name) for name in names}
    fitted = {name: FittedOutput(stream, max(20, shutil.get_terminal_size().columns))
              for name, stream in streams.items() if is_terminal(stream)}
    for name, output in fitted.items():
        setattr(sys, name, output)
    try:
        yield
    finally:
        for name, output in fitted.items():
            setattr(sys, name, streams[name])
            try:
                output.flush()
            except (OSError, ValueError):
                pass  # (the terminal went away: nothing left to show it on)


def say_error(text: str) -> None:
    """`text` on standard error (fitted to the terminal, when it is one)."""
    with fitted_to_terminal(stdout=False, stderr=True):
        print(text, file=sys.stderr)
