"""Modal screens: the one confirm pattern, error popups, a text viewer, the help screen."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from cleo_tui.safe_text import printable
from cleo_tui.ui.widgets.help_view import HelpRender, HelpText

SHORT_SCREEN = 30  # rows: below this a dialog drops its padding and its body takes every free row
SCROLL_KEYS = [
    Binding("up", "scroll_body('up')", "Scroll up", show=False),
    Binding("down", "scroll_body('down')", "Scroll down", show=False),
    Binding("pageup", "scroll_body('page_up')", "Page up", show=False),
    Binding("pagedown", "scroll_body('page_down')", "Page down", show=False),
    Binding("home", "scroll_body('home')", "Top", show=False),
    Binding("end", "scroll_body('end')", "Bottom", show=False),
]


def body_rows(screen_height: int, other_rows: int = 12) -> int:
    """How many rows a dialog's scrolling body gets on a screen `screen_height` rows tall."""
    if screen_height < SHORT_SCREEN:
        other_rows -= 3  # no padding, and the body's own bottom margin is its last row
    return max(3, min(20, screen_height - other_rows))


class ScrollingBody:
    """A dialog whose `.dialog-scroll` body scrolls with ↑ ↓ page up/down home end while a
    button has focus: on an 80×24 terminal a long confirmation is read to its end."""

    VERTICAL_BREAKPOINTS: ClassVar[list[tuple[int, str]] | None] = [(0, "-short"), (SHORT_SCREEN, "-tall")]
    # app.tcss: .modal.-short .dialog

    def action_scroll_body(self, how: str) -> None:
        body = self.query_one(".dialog-scroll", VerticalScroll)  # type: ignore[attr-defined]
        {"up": body.scroll_up, "down": body.scroll_down, "page_up": body.scroll_page_up,
         "page_down": body.scroll_page_down, "home": body.scroll_home, "end": body.scroll_end}[how](animate=False)


class ConfirmModal(ScrollingBody, ModalScreen[bool]):
    """Ask once; dismisses with True (confirm) or False. Every destructive action uses this.

    A `danger` dialog starts with focus on Cancel and ignores every answer (keys,
    clicks) for its first `guard_seconds`: a word typed on the table ("yesterday")
    opens it on `e` but cannot confirm it on the final `y`. Tests replace `clock`.
    """

    guard_seconds: ClassVar[float] = 0.4
    clock: ClassVar[Callable[[], float]] = time.monotonic

    BINDINGS = [
        Binding("y", "answer(True)", "Yes", show=False),
        Binding("n,escape", "answer(False)", "No", show=False),
        *SCROLL_KEYS,
    ]

    def __init__(self, title: str, body: str, confirm_label: str = "Yes", danger: bool = False) -> None:
        super().__init__(classes="modal")
        self.title_text = title
        self.body = body
        self.confirm_label = confirm_label
        self.danger = danger
        self.opened_at = type(self).clock()  # when asked: keys queued after the opening key count too

    def guarded(self) -> bool:
        """True while a danger dialog still ignores answers."""
        return self.danger and type(self).clock() - self.opened_at < self.guard_seconds

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(Text(self.title_text), classes="dialog-title")
            with VerticalScroll(classes="dialog-scroll"):  # a long body scrolls; the buttons stay on screen
                yield Static(Text(printable(self.body)), classes="dialog-body")
            with Horizontal(classes="dialog-buttons"):
                yield Button(f"{self.confirm_label} (y)", id="confirm",
                             variant="error" if self.danger else "primary")
                yield Button("Cancel (n)", id="cancel")

    def on_mount(self) -> None:
        self.query_one(".dialog-scroll").styles.max_height = body_rows(self.app.size.height)
        self.query_one("#cancel" if self.danger else "#confirm", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if not self.guarded():
            self.dismiss(event.button.id == "confirm")

    def action_answer(self, answer: bool) -> None:
        if not self.guarded():
            self.dismiss(answer)


class MessageModal(ScrollingBody, ModalScreen[None]):
    """An error or notice that needs acknowledging; the text is shown literally."""

    BINDINGS = [Binding("escape,enter,q", "close", "Close", show=False), *SCROLL_KEYS]

    def __init__(self, title: str, body: str, error: bool = True) -> None:
        super().__init__(classes="modal")
        self.title_text = title
        self.body = body
        self.error = error

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog error" if self.error else "dialog"):
            yield Label(Text(self.title_text), classes="dialog-title")
            with VerticalScroll(classes="dialog-scroll"):
                yield Static(Text(printable(self.body)), classes="dialog-body")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Close (esc)", id="close", variant="primary")

    def on_mount(self) -> None:
        self.query_one(".dialog-scroll").styles.max_height = body_rows(self.app.size.height, other_rows=9)
        self.query_one("#close", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None)

    def action_close(self) -> None:
        self.dismiss(None)


# Textual's TextArea renders a whole line for every frame: a 1 MB one-line narrative froze
# the viewer for seconds per keypress. Soft wrap folds long lines anyway, so cut them here.
LONG_LINE = 4_000


def break_long_lines(text: str) -> str:
    """`text` with every line longer than LONG_LINE characters cut into LONG_LINE pieces."""
    return "\n".join(line[i:i + LONG_LINE] for line in text.split("\n")
                     for i in range(0, max(len(line), 1), LONG_LINE))


class TextViewer(ModalScreen[None]):
    """A long text (a whole narrative, a raw LLM response) in a read-only, soft-wrapped view."""

    VERTICAL_BREAKPOINTS = ScrollingBody.VERTICAL_BREAKPOINTS  # fills an 80×24 screen

    BINDINGS = [Binding("escape,q", "close", "Close")]

    def __init__(self, title: str, text: str) -> None:
        super().__init__(classes="modal")
        self.title_text = title
        self.text = text

    def compose(self) -> ComposeResult:
        from textual.widgets import TextArea  # imported when first shown: it is not on the first screen's path

        with Vertical(classes="dialog wide"):
            yield Label(Text(self.title_text), classes="dialog-title")
            yield TextArea(break_long_lines(printable(self.text)), read_only=True, soft_wrap=True,
                           show_line_numbers=False, id="viewer")
            yield Label(Text("esc to close · the text is shown exactly as stored, controls made visible"),
                        classes="dialog-hint")

    def action_close(self) -> None:
        self.dismiss(None)


class HelpScreen(ModalScreen[None]):
    """F1 / ?: the panes, the keys, the tag rules and what the app's words mean in a CLEO brain.

    The text comes rendered from `render` (kept across openings; see widgets/help_view.py)."""

    VERTICAL_BREAKPOINTS = ScrollingBody.VERTICAL_BREAKPOINTS  # fills an 80×24 screen

    BINDINGS = [Binding("escape,q,f1,question_mark", "close", "Close")]

    def __init__(self, markdown: str, render: HelpRender | None = None) -> None:
        super().__init__(classes="modal")
        self.markdown = markdown
        self.help_render = render or HelpRender()

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog help"):
            yield Label("cleo-tui help", classes="dialog-title")
            yield HelpText(self.markdown, self.help_render, id="help-text")
            yield Label("esc to close · ↑ ↓ page up/down scroll", classes="dialog-hint")

    def on_mount(self) -> None:
        self.query_one(HelpText).focus()

    def action_close(self) -> None:
        self.dismiss(None)
