"""Shown when no brain was found: create an empty brain, a demo brain, or open a file.

The empty brain follows `cleo-tui init`'s rule exactly (`plan_project_brain` and
`create_project_brain`): CLEO's own `cleo init` when `cleo` is on PATH and the project is
a git repository, else cleo-tui's own `.cleo-tui/brain.db`. The demo goes to a directory
the user names (by default a fresh temporary one), never into a project's `.cleo/`.
"""

from __future__ import annotations

import secrets
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Button, Footer, Input, Label, LoadingIndicator, Static

from cleo_tui.brain import Brain, create_project_brain, files_to_suggest, open_brain, plan_project_brain
from cleo_tui.demo import demo_directory_problem
from cleo_tui.safe_text import printable
from cleo_tui.ui.host import BrainOpened, ask
from cleo_tui.ui.widgets.inputs import SafeInput
from cleo_tui.ui.widgets.worker_errors import ForwardWorkerErrors


def fresh_demo_directory() -> Path:
    """A new, absolute directory name under the system's temporary directory (not yet made)."""
    return Path(tempfile.gettempdir()).absolute() / f"cleo-tui-demo-{secrets.token_hex(4)}"


class WelcomeScreen(ForwardWorkerErrors, Screen[None]):
    @dataclass(eq=False)
    class BrainReady(Message):
        """A worker is done: `brain` was opened (None: it failed, and its error is told), `notice`
        a toast to show once it is open (what was created)."""

        brain: Brain | None
        notice: str | None = None

    def __init__(self, project: Path, problem: str) -> None:
        super().__init__(id="welcome")
        self.project = project
        self.problem = problem

    def compose(self) -> ComposeResult:
        plan = plan_project_brain(self.project)
        with VerticalScroll(id="welcome-box"):
            yield Label("Welcome to cleo-tui", classes="dialog-title")
            yield Static(Text(printable(self.problem)), id="welcome-problem")
            yield Static(Text(printable(f"An empty brain for this project: {plan.describe()}")), id="empty-plan")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Create an empty brain", id="empty", variant="primary")
            yield Static(Text("A demo brain, in a new or empty directory of its own:"), classes="welcome-label")
            with Horizontal(classes="welcome-row"):
                yield SafeInput(str(fresh_demo_directory()), id="demo-dir")
                yield Button("Create demo", id="demo")
            yield Static(Text("Or open an existing brain file:"), classes="welcome-label")
            with Horizontal(classes="welcome-row"):
                nearby = files_to_suggest(self.project.absolute())  # (prefilled: Tab, enter opens it)
                yield SafeInput(str(nearby[0][2]) if nearby else "", id="open-path",
                                placeholder="path to .cleo/cleo.db, brain.db or hippo.db")
                yield Button("Open file", id="open")
            yield LoadingIndicator(id="welcome-busy")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#welcome-busy").display = False
        self.query_one("#empty", Button).focus()

    def _busy(self, busy: bool) -> None:
        self.query_one("#welcome-busy").display = busy
        for button in self.query(Button):
            button.disabled = busy

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "demo":
            self._demo(self.query_one("#demo-dir", Input).value.strip())
        elif event.button.id == "empty":
            self._busy(True)
            self._create_empty()
        elif event.button.id == "open":
            self._open(self.query_one("#open-path", Input).value.strip())

    @on(Input.Submitted, "#open-path")
    def submitted(self, event: Input.Submitted) -> None:
        self._open(event.value.strip())

    @on(Input.Submitted, "#demo-dir")
    def demo_submitted(self, event: Input.Submitted) -> None:
        self._demo(event.value.strip())

    def _demo(self, directory: str) -> None:
        if not directory:
            self.notify("Type the directory for the demo brain first.", severity="warning")
            return
        folder = Path(directory).expanduser().absolute()
        problem = demo_directory_problem(folder)
        if problem:
            self.notify(printable(problem), severity="warning", timeout=8)
            return
        self._busy(True)
        self._create_demo(folder)

    def _open(self, path: str) -> None:
        if not path:
            self.notify("Type the path of a brain file first.", severity="warning")
            return
        self._busy(True)
        self._open_worker(Path(path).expanduser())

    @work(thread=True, exit_on_error=False)
    def _create_empty(self) -> None:
        def create() -> tuple[Brain, str]:
            created = create_project_brain(self.project)
            return open_brain(created.path), printable(created.message)
        self._hand_back(create)

    @work(thread=True, exit_on_error=False)
    def _create_demo(self, folder: Path) -> None:
        from cleo_tui.demo import generate_demo
        self._hand_back(lambda: (open_brain(generate_demo(folder)), None))

    @work(thread=True, exit_on_error=False)
    def _open_worker(self, path: Path) -> None:
        self._hand_back(lambda: (open_brain(path), None))

    def _hand_back(self, make: Callable[[], tuple[Brain, str | None]]) -> None:
        """In a worker: `make` a brain (and the notice to show once it is open) and post it back as
        BrainReady; on failure post an empty one (the buttons come back), then fail (the popup)."""
        try:
            brain, notice = make()
        except BaseException:
            self.post_message(self.BrainReady(None))
            raise
        self.post_message(self.BrainReady(brain, notice))

    def on_welcome_screen_brain_ready(self, message: BrainReady) -> None:
        """Buttons back; the app starts on the brain (it replaces this screen), then the notice."""
        self._busy(False)
        if message.brain is not None:
            ask(self, BrainOpened(message.brain))
            if message.notice:
                self.app.notify(message.notice, timeout=10)
