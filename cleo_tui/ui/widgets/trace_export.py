"""The Traces pane's export dialog: a file path, and whether CLEO's raw query text goes in too."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Checkbox, Input, Label, Static

from cleo_tui.ui.widgets.path_dialog import PathCheck, PathDialog

WITH_TEXT = "Also write CLEO's raw query text (else: hash, length)"


class TraceExportPrompt(PathDialog[tuple[str, bool]]):
    """Dismisses with (path, with CLEO's query text) on enter, or None on escape."""

    def __init__(self, title: str, body: str, default: str, check: PathCheck | None = None) -> None:
        super().__init__(default, check)
        self.title_text = title
        self.body = body

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(Text(self.title_text), classes="dialog-title")
            yield Static(Text(self.body), classes="dialog-body")
            yield from self.path_field()
            yield Checkbox(WITH_TEXT, False, id="export-query-text", compact=True)
            yield Label(Text("enter to write · tab, then space ticks the box · esc to cancel"),
                        classes="dialog-hint")

    def answer(self, path: str) -> tuple[str, bool]:
        return path, self.query_one("#export-query-text", Checkbox).value

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        """Ticked or not, back to the path: enter writes."""
        self.query_one("#path-input", Input).focus()
