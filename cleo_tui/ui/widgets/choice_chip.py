"""A choice on one line ("all types ▾"), its choices in a menu opened on demand.

Every pane's filters and settings (Observations, Traces, Prune, Review, the export dialog)
use it. Textual's `Select` composes its current value and an overlay list per select, and
rebuilds the list when given its choices: the Observations bar's seven took ~41 ms of the UI
thread to mount and more to fill (measured headless: 7 `Select`s 41 ms, 7 chips 3.5 ms), just
after the first screen, when a user's first keys come. A chip is one widget that draws one
line; the list is made only when the user opens it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.events import Click, Key
from textual.geometry import Region
from textual.message import Message
from textual.reactive import reactive
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from cleo_tui.safe_text import one_line

Choice = tuple[str, str]  # (label, value)
LABEL_CELLS = 40  # a longer label (a session id, say) is cut short
TYPE_AHEAD_S = 1.0  # typed letters within this of each other find one choice together
MENU_ROWS = 12  # the most choices a menu shows at once (it scrolls)
MENU_CELLS = 46  # the widest a menu gets (labels are cut to LABEL_CELLS)


class ChoiceChip(Widget, can_focus=True):
    """One choice among `choices`; Enter, space, ↓ or a click opens them. With a `prompt` the
    chip may be blank (a filter's "any": `value` None, the prompt shown and offered first);
    without one it always holds a choice (`value`, else the first). Setting `value` posts `Changed`."""

    DEFAULT_CSS = """
    ChoiceChip {
        height: 1;
        width: 15;
        padding: 0 0 0 1;
        background: $boost;
    }
    ChoiceChip.-blank {
        color: $text-muted;
    }
    ChoiceChip:focus {
        background: $accent 30%;
        color: $text;
        text-style: bold;
    }
    """
    BINDINGS = [Binding("enter,space,down", "open", "Choose", show=False)]

    value: reactive[str | None] = reactive(None, init=False)

    @dataclass(eq=False)
    class Changed(Message):
        """The chip's value changed (None: blank)."""

        chip: ChoiceChip
        value: str | None

        @property
        def control(self) -> ChoiceChip:
            return self.chip

    def __init__(self, choices: Iterable[Choice], *, prompt: str | None = None, value: str | None = None,
                 id: str, tooltip: str | None = None) -> None:
        super().__init__(id=id)
        self.prompt = prompt
        self.choices: list[tuple[Text, str]] = _as_text(choices)
        self.set_reactive(ChoiceChip.value, value if value is not None or prompt else self._first())
        self.set_class(self.value is None, "-blank")
        if tooltip:
            self.tooltip = tooltip

    def _first(self) -> str | None:
        return self.choices[0][1] if self.choices else None

    def set_choices(self, choices: Iterable[Choice]) -> None:
        """Offer `choices`; a value no longer among them goes blank (or to the first choice).

        The chip is drawn again only when what it shows changes: filled just after the first
        screen, the Observations bar's chips still show their prompts, and a repaint of them then
        was a frame of its own while a user's first key waits for the screen."""
        shown = self.label
        self.choices = _as_text(choices)
        if self.value is not None and self.value not in {value for _, value in self.choices}:
            self.value = None if self.prompt else self._first()
        if self.label != shown:
            self.refresh()

    def clear(self) -> None:
        """Blank (the prompt's choice); a chip without a prompt keeps its choice."""
        if self.prompt:
            self.value = None

    def is_blank(self) -> bool:
        return self.value is None

    def watch_value(self, value: str | None) -> None:
        self.set_class(value is None, "-blank")
        self.refresh()
        self.post_message(self.Changed(self, value))

    @property
    def label(self) -> Text:
        """What the chip shows: its choice's label, else its prompt."""
        for label, value in self.choices:
            if value == self.value:
                return label
        return Text(self.prompt or "")

    def render(self) -> Text:
        room = max(1, self.content_size.width - 2)
        label = self.label.copy()
        label.truncate(room, overflow="ellipsis", pad=True)
        return label + Text(" ▾")

    @property
    def _entries(self) -> list[tuple[Text, str | None]]:
        """The menu's lines: the prompt's (blank) first when there is one, then the choices."""
        blank: list[tuple[Text, str | None]] = [(Text(self.prompt, style="italic"), None)] if self.prompt else []
        return blank + list(self.choices)

    def action_open(self) -> None:
        entries = self._entries
        current = next((i for i, (_, value) in enumerate(entries) if value == self.value), 0)
        self.app.push_screen(ChoiceMenu([label for label, _ in entries], current, self.region), self._chosen)

    def _chosen(self, index: int | None) -> None:
        if index is not None:  # (None: closed without a choice)
            self.value = self._entries[index][1]
        self.focus()

    def on_click(self, event: Click) -> None:
        event.stop()
        self.focus()
        self.action_open()


class ChoiceMenu(ModalScreen[int | None]):
    """The choices under (or above) the chip at `chip_region`: dismissed with the chosen index, or
    None (Escape, a click outside). Typed letters move to the first choice that starts with them."""

    DEFAULT_CSS = """
    ChoiceMenu {
        background: transparent;
    }
    ChoiceMenu > OptionList {
        height: auto;
        border: tall $accent;
        background: $panel;
    }
    """
    BINDINGS = [Binding("escape", "dismiss_menu", "Close", show=False)]

    def __init__(self, labels: Sequence[Text], current: int, chip_region: Region) -> None:
        super().__init__()
        self.labels = labels
        self.current = current
        self.chip_region = chip_region
        self._typed = ""
        self._typed_at = 0.0

    def compose(self) -> ComposeResult:
        yield OptionList(*(Option(label) for label in self.labels))

    def on_mount(self) -> None:
        menu = self.query_one(OptionList)
        rows = min(len(self.labels), MENU_ROWS) + 2  # (its border)
        screen_height = self.app.size.height
        below = self.chip_region.bottom
        y = below if below + rows <= screen_height or self.chip_region.y < rows else self.chip_region.y - rows
        width = min(MENU_CELLS, max(15, self.chip_region.width, *(label.cell_len + 5 for label in self.labels)))
        x = min(self.chip_region.x, self.app.size.width - width)  # (a chip at the right edge: the menu fits)
        menu.styles.max_height = rows
        menu.styles.width = width
        menu.styles.offset = (max(0, x), max(0, y))
        menu.highlighted = self.current
        menu.focus()

    @on(OptionList.OptionSelected)
    def chosen(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option_index)

    def on_key(self, event: Key) -> None:
        if not (event.is_printable and event.character) or event.character == " ":
            return
        now = time.monotonic()
        self._typed = (self._typed if now - self._typed_at < TYPE_AHEAD_S else "") + event.character.lower()
        self._typed_at = now
        for index, label in enumerate(self.labels):
            if label.plain.lower().startswith(self._typed):
                self.query_one(OptionList).highlighted = index
                break
        event.stop()

    def on_click(self, event: Click) -> None:
        if event.widget is self:  # outside the list
            self.dismiss(None)

    def action_dismiss_menu(self) -> None:
        self.dismiss(None)


def _as_text(choices: Iterable[Choice]) -> list[tuple[Text, str]]:
    """Labels as rich Text on one line, never markup nor terminal control: a session id or a
    type is shown as written."""
    return [(Text(one_line(label, LABEL_CELLS)), value) for label, value in choices]
