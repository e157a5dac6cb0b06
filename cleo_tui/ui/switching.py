"""How soon a key's effect reaches the screen: the UI thread gets the GIL back from a worker
running Python sooner, and Textual draws a frame sooner after the last one."""

from __future__ import annotations

import os
import sys

UI_SWITCH_INTERVAL = 0.0005  # seconds (Python's default: 0.005)
FRAMES_PER_SECOND = "240"  # Textual's most (TEXTUAL_FPS; its default: 60)


def frames_sooner() -> None:
    """Let Textual draw up to 240 frames a second instead of 60, unless the user set TEXTUAL_FPS.
    Call before Textual is imported (it reads the setting then).

    Textual's screen draws on a timer with that period, and a frame asked for soon after
    another waits for one or two of its periods: at 60, a key pressed while the first screen
    was still being drawn waited up to 33 ms for its frame with the UI thread idle. Measured
    (`benchmarks.first_key`, 100,000 rows, cold, alternated): the key's frame 39-41 ms → 21-22 ms
    (median), the first screen unchanged. Frames are drawn only when something changed, so an
    idle app draws none either way."""
    os.environ.setdefault("TEXTUAL_FPS", FRAMES_PER_SECOND)


def hand_the_gil_back_sooner() -> None:
    """Let a thread waiting for the GIL claim it after 0.5 ms instead of 5 (`sys.setswitchinterval`).

    While a worker runs Python (the tags of a large brain loading), the UI thread must take
    the GIL back after every wait: Textual's loop lets it go at each turn (its select), so
    each of a key's turns could wait up to the interval for it, and a key took several times
    its own time. The worker is interrupted more often, at a cost of a few percent."""
    sys.setswitchinterval(UI_SWITCH_INTERVAL)
