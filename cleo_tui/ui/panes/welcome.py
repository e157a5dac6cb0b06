"""Shown when no brain was found: create a demo brain, an empty brain, or open a file."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Button, Footer, Input, Label, LoadingIndicator, Static

from cleo_tui.brain import create_brain, open_brain
from cleo_tui.safe_text import printable
from cleo_tui.ui.widgets.chrome import cleo_app
from cleo_tui.ui.widgets.inputs import SafeInput
from cleo_tui.ui.widgets.worker_errors import ForwardWorkerErrors


class WelcomeScreen(ForwardWorkerErrors, Screen):
    def __init__(self, project: Path, problem: str) -> None:
        super().__init__(id="welcome")
        self.project = project
        self.problem = problem

    def compose(self) -> ComposeResult:
        target = self.project / ".cleo" / "cleo.db"
        with Vertical(id="welcome-box"):
            yield Label("Welcome to cleo-tui", classes="dialog-title")
            yield Static(Text(printable(self.problem)), id="welcome-problem")
            yield Static(Text(f"Create a brain at {printable(str(target))}, or open an existing file."))
            with Horizontal(classes="dialog-buttons"):
                yield Button("Create a demo brain here", id="demo", variant="primary")
                yield Button("Create an empty brain here", id="empty")
            with Horizontal(id="open-row"):
                yield SafeInput(placeholder="path to a brain file (.cleo/cleo.db, brain.db, hippo.db)", id="open-path")
                yield Button("Open file", id="open")
            yield LoadingIndicator(id="welcome-busy")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#welcome-busy").display = False
        self.query_one("#demo", Button).focus()

    def _busy(self, busy: bool) -> None:
        self.query_one("#welcome-busy").display = busy
        for button in self.query(Button):
            button.disabled = busy

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        target = self.project / ".cleo" / "cleo.db"
        if event.button.id == "demo":
            self._busy(True)
            self._create(target, demo=True)
        elif event.button.id == "empty":
            self._busy(True)
            self._create(target, demo=False)
        elif event.button.id == "open":
            self._open(self.query_one("#open-path", Input).value.strip())

    @on(Input.Submitted, "#open-path")
    def submitted(self, event: Input.Submitted) -> None:
        self._open(event.value.strip())

    def _open(self, path: str) -> None:
        if not path:
            self.notify("Type the path of a brain file first.", severity="warning")
            return
        self._busy(True)
        self._open_worker(Path(path).expanduser())

    @work(thread=True, exit_on_error=False)
    def _create(self, target: Path, demo: bool) -> None:
        try:
            if demo:
                from cleo_tui.demo import generate_demo
                path = generate_demo(self.project)
            else:
                path = target
                create_brain(path).close()
            brain = open_brain(path)
        finally:
            self.app.call_from_thread(self._busy, False)
        self.app.call_from_thread(cleo_app(self.app).open_brain_session, brain)

    @work(thread=True, exit_on_error=False)
    def _open_worker(self, path: Path) -> None:
        try:
            brain = open_brain(path)
        finally:
            self.app.call_from_thread(self._busy, False)
        self.app.call_from_thread(cleo_app(self.app).open_brain_session, brain)
