"""Ask for a file path (an export destination, a brain to open): an input prefilled with a default."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label, Static

from cleo_tui.ui.widgets.modals import ScrollingBody
from cleo_tui.ui.widgets.path_dialog import PathCheck, PathDialog


class PathPrompt(PathDialog[str]):
    """Dismisses with the typed path (stripped, non-empty) or None on escape."""

    VERTICAL_BREAKPOINTS = ScrollingBody.VERTICAL_BREAKPOINTS  # no padding on an 80×24 screen

    def __init__(self, title: str, body: str, default: str, hint: str = "enter to write · esc to cancel",
                 check: PathCheck | None = None) -> None:
        super().__init__(default, check)
        self.hint = hint
        self.title_text = title
        self.body = body

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(Text(self.title_text), classes="dialog-title")
            yield Static(Text(self.body), classes="dialog-body")
            yield from self.path_field()
            yield Label(Text(self.hint), classes="dialog-hint")

    def answer(self, path: str) -> str:
        return path
