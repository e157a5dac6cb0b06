"""Dialogs around one path box (the exports, opening a brain): enter answers, esc cancels.

A dialog given a `check` asks it on enter; a path it refuses (a directory, a folder that
does not exist, the open brain) is explained under the box and the dialog stays open with
what was typed, so a mistake costs a correction, not the whole dialog again.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import ClassVar, Generic, TypeVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from cleo_tui.files import ExportRefused, check_export_target
from cleo_tui.ui.widgets.inputs import SafeInput

AnswerT = TypeVar("AnswerT")
PathCheck = Callable[[str], "str | None"]  # why a typed path cannot be used, or None


def export_check(brain_path: Path | str | None) -> PathCheck:
    """Why an export to a typed path would be refused (`files.check_export_target`), or None. An
    existing file passes: the pane asks before replacing it."""

    def check(value: str) -> str | None:
        try:
            check_export_target(value, brain_path, force=True)
        except ExportRefused as exc:
            return str(exc)
        return None

    return check


class PathDialog(ModalScreen[AnswerT | None], Generic[AnswerT]):
    """A dialog holding `path_field()`; dismisses with `answer(path)` on enter, or None on escape."""

    DEFAULT_CSS = """
    PathDialog #path-problem {
        display: none;
        color: $text-error;
        margin-top: 1;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", show=False)]

    def __init__(self, default: str, check: PathCheck | None = None) -> None:
        super().__init__(classes="modal")
        self.default = default
        self.check = check

    def path_field(self) -> ComposeResult:
        """The path box and, under it, the line that says why a path was refused."""
        yield SafeInput(self.default, id="path-input")
        yield Static("", id="path-problem")

    def answer(self, path: str) -> AnswerT:
        """What the dialog dismisses with for an accepted path (stripped, not empty)."""
        raise NotImplementedError

    def on_mount(self) -> None:
        self.query_one("#path-input", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        value = event.value.strip()
        if not value:
            return
        problem = self.check(value) if self.check is not None else None
        said = self.query_one("#path-problem", Static)
        said.update(Text(problem or ""))
        said.display = problem is not None
        if problem is None:
            self.dismiss(self.answer(value))

    def action_cancel(self) -> None:
        self.dismiss(None)
