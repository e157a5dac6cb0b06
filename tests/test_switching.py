"""Issue 33: the UI thread claims the GIL back from a busy worker sooner than Python's default."""

from __future__ import annotations

import sys

from cleo_tui.ui import switching


def test_the_app_lets_a_waiting_thread_claim_the_gil_after_half_a_millisecond():
    before = sys.getswitchinterval()
    try:
        switching.hand_the_gil_back_sooner()
        assert sys.getswitchinterval() == switching.UI_SWITCH_INTERVAL <= before / 5
    finally:
        sys.setswitchinterval(before)
