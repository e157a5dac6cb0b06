"""Ask for a file path (export destinations): an input prefilled with a default, enter to accept."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from cleo_tui.ui.widgets.inputs import SafeInput
from cleo_tui.ui.widgets.modals import ScrollingBody


class PathPrompt(ModalScreen[str | None]):
    """Dismisses with the typed path (stripped, non-empty) or None on escape."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", show=False)]
    VERTICAL_BREAKPOINTS = ScrollingBody.VERTICAL_BREAKPOINTS  # no padding on an 80×24 screen

    def __init__(self, title: str, body: str, default: str, hint: str = "enter to write · esc to cancel") -> None:
        super().__init__(classes="modal")
        self.hint = hint
        self.title_text = title
        self.body = body
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(Text(self.title_text), classes="dialog-title")
            yield Static(Text(self.body), classes="dialog-body")
            yield SafeInput(self.default, id="path-input")
            yield Label(Text(self.hint), classes="dialog-hint")

    def on_mount(self) -> None:
        self.query_one("#path-input", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        value = event.value.strip()
        if value:
            self.dismiss(value)

    def action_cancel(self) -> None:
        self.dismiss(None)
