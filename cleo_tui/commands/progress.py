"""A long command's progress on a terminal: one line on standard error, redrawn in place.

`dedup` on a brain never scanned took 45 s at 100,000 real-layout rows, and `prune` on a brain
never opened 19 s at 1,000,000 demo rows, with nothing on the screen. Where standard error is a
terminal, `TerminalProgress` shows what is being done and how far it is ("dedup: verifying
41%"), redrawn at most every `REDRAW_S` (and at once when the stage changes), and wipes the line
before the command's output. Where it is not a terminal (a pipe, a log, CI) nothing is written,
so scripts see what they saw before.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

from cleo_tui.commands.common import is_terminal
from cleo_tui.commands.text_width import FittedOutput

REDRAW_S = 0.1
_ERASE = "\r\x1b[K"  # back to the line's start, and clear it


class TerminalProgress:
    """`with TerminalProgress("dedup") as progress:` … `progress(done, total, stage)` …"""

    def __init__(self, label: str, stream: TextIO | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        stream = sys.stderr if stream is None else stream
        if isinstance(stream, FittedOutput):  # (it holds a line back until it ends: this one never does)
            stream = stream.stream
        self.label, self.clock = label, clock
        self.stream = stream if is_terminal(stream) else None
        self._drawn_at: float | None = None
        self._stage: str | None = None

    def __enter__(self) -> TerminalProgress:
        return self

    def __call__(self, done: int, total: int, stage: str | None = None) -> None:
        """Report `done` of `total` (in `stage`, when the work has several)."""
        if self.stream is None:
            return
        now = self.clock()
        if self._drawn_at is not None and stage == self._stage and now - self._drawn_at < REDRAW_S:
            return
        self._drawn_at, self._stage = now, stage
        doing = f"{self.label}: {stage}" if stage else self.label
        self._write(f"{_ERASE}{doing} {min(100, done * 100 // total)}%" if total > 0 else f"{_ERASE}{doing}…")

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._drawn_at is not None:
            self._write(_ERASE)  # (also before a message about what went wrong)

    def _write(self, text: str) -> None:
        assert self.stream is not None
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            self.stream = None  # the terminal went away: the command goes on without it
