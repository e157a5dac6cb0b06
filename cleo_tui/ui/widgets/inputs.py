"""The one text input of cleo-tui: refuses control characters.

Textual's Input draws its value as it is, so a pasted ESC or OSC sequence would
reach the terminal. Every input in the app is a SafeInput.
"""

from __future__ import annotations

from typing import Any

from textual.binding import Binding
from textual.widgets import Input

from cleo_tui.safe_text import NO_CONTROLS


class SafeInput(Input):
    def __init__(self, *args: Any, restrict: str | None = NO_CONTROLS, **kwargs: Any) -> None:
        super().__init__(*args, restrict=restrict, **kwargs)


class SearchInput(SafeInput):
    """A search box that Esc leaves as Enter does: the search typed stays applied (Input.Submitted)."""

    BINDINGS = [Binding("escape", "submit", "Leave the search", show=False)]
