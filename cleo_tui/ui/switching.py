"""How soon the UI thread gets the GIL back from a worker running Python."""

from __future__ import annotations

import sys

UI_SWITCH_INTERVAL = 0.0005  # seconds (Python's default: 0.005)


def hand_the_gil_back_sooner() -> None:
    """Let a thread waiting for the GIL claim it after 0.5 ms instead of 5 (`sys.setswitchinterval`).

    While a worker runs Python (the tags of a large brain loading), the UI thread must take
    the GIL back after every wait: Textual's loop lets it go at each turn (its select), so
    each of a key's turns could wait up to the interval for it, and a key took several times
    its own time. The worker is interrupted more often, at a cost of a few percent."""
    sys.setswitchinterval(UI_SWITCH_INTERVAL)
