"""Acting on everything a filter shows: the plan of a bulk step, and the observations export dialog.

`BulkScreen` shows what the filter selects (count, tokens, protected) and dismisses with the
action chosen; the pane then confirms and asks the session to write. `ExportScreen` asks for a
format and a path (shown absolute) and dismisses with both; the pane writes in a worker.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from cleo_tui.memory.bulk import BulkAction, SelectionPlan
from cleo_tui.memory.export_rows import FORMATS, ExportFormat
from cleo_tui.safe_text import one_line, plural
from cleo_tui.ui.widgets.choice_chip import ChoiceChip
from cleo_tui.ui.widgets.path_dialog import PathCheck, PathDialog


def plan_text(plan: SelectionPlan) -> str:
    text = f"{plan.headline()}, about {plural(plan.tokens, 'token')}."
    if not plan.protection_known:
        text += " Their protection is still being computed: an eviction waits for it."
    elif plan.protected:
        text += f" {len(plan.protected):,} of them protected: an eviction asks again before it takes those."
    if plan.without_id:
        text += f" {plan.without_id:,} of them without an id, which no step can change."
    return text


class BulkScreen(ModalScreen[BulkAction | None]):
    """What the filter selects; e evicts, r restores, p pins them all (each asks first), esc cancels."""

    BINDINGS: ClassVar = [
        Binding("e", "choose('evict')", "Evict all", id="bulk.evict"),
        Binding("r", "choose('restore')", "Restore all", id="bulk.restore"),
        Binding("p", "choose('pin')", "Pin all", id="bulk.pin"),
        Binding("escape", "choose('')", "Cancel", id="bulk.cancel"),
    ]

    def __init__(self, plan: SelectionPlan) -> None:
        super().__init__(classes="modal")
        self.plan = plan

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(Text("Act on everything the filter shows"), classes="dialog-title")
            yield Static(Text(plan_text(self.plan)), classes="dialog-body")
            yield Label(Text("e evict all · r restore all · p pin all · esc cancel (each asks first; u undoes)"),
                        classes="dialog-hint")

    def action_choose(self, action: str) -> None:
        self.dismiss(action or None)  # type: ignore[arg-type]


class ExportScreen(PathDialog[tuple[ExportFormat, str]]):
    """Format and file for an export of what the filter shows; enter writes, esc cancels."""

    def __init__(self, headline: str, directory: Path, check: PathCheck | None = None) -> None:
        super().__init__(str(directory / "observations.md"), check)
        self.headline = headline

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(Text("Export observations"), classes="dialog-title")
            yield Static(Text(f"Write the {one_line(self.headline, 300)}, each with its tags and their reasons."),
                         classes="dialog-body")
            yield ChoiceChip([(f, f) for f in FORMATS], value="md", id="export-format", tooltip="The file's format")
            yield from self.path_field()
            yield Label(Text("enter to write (asks before replacing a file; never over a brain) · esc cancel"),
                        classes="dialog-hint")

    def on_choice_chip_changed(self, event: ChoiceChip.Changed) -> None:
        box = self.query_one("#path-input", Input)
        path = Path(box.value)
        if path.suffix.lstrip(".") in FORMATS:
            box.value = str(path.with_suffix(f".{event.value}"))
        box.focus()

    def answer(self, path: str) -> tuple[ExportFormat, str]:
        fmt = self.query_one("#export-format", ChoiceChip).value
        return str(fmt), str(Path(path).expanduser().resolve())  # type: ignore[return-value]
