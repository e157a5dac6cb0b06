"""The Traces pane's export dialog: a file path, and whether CLEO's raw query text goes in too."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Checkbox, Input, Label, Static

from cleo_tui.ui.widgets.inputs import SafeInput

WITH_TEXT = "Also write CLEO's raw query text (else: hash, length)"


class TraceExportPrompt(ModalScreen[tuple[str, bool] | None]):
    """Dismisses with (path, with CLEO's query text) on enter, or None on escape."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", show=False)]

    def __init__(self, title: str, body: str, default: str) -> None:
        super().__init__(classes="modal")
        self.title_text = title
        self.body = body
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(Text(self.title_text), classes="dialog-title")
            yield Static(Text(self.body), classes="dialog-body")
            yield SafeInput(self.default, id="path-input")
            yield Checkbox(WITH_TEXT, False, id="export-query-text", compact=True)
            yield Label(Text("enter to write · tab, then space ticks the box · esc to cancel"),
                        classes="dialog-hint")

    def on_mount(self) -> None:
        self.query_one("#path-input", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        value = event.value.strip()
        if value:
            self.dismiss((value, self.query_one("#export-query-text", Checkbox).value))

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        """Ticked or not, back to the path: enter writes."""
        self.query_one("#path-input", Input).focus()

    def action_cancel(self) -> None:
        self.dismiss(None)
