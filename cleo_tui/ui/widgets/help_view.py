"""The help's text, rendered once: its Markdown becomes terminal lines off the UI thread
(`HelpRender`), and `HelpText` draws the lines kept for its width with the Line API.

Textual's Markdown widget built a widget per block and per table cell: the help took
2–3 s to open, every time. Rendered once (in the background after start-up, see
`CleoApp.prepare_help`), it opens in the time a modal takes.
"""

from __future__ import annotations

import io
import threading
from dataclasses import dataclass

from rich.console import Console
from rich.text import Text
from textual import work
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

PREPARING = "Preparing the help…"


def render_markdown(markdown: str, width: int) -> list[Strip]:
    """`markdown` as terminal lines `width` cells wide (any thread; about 0.2 s for the help)."""
    from rich.markdown import Markdown  # with markdown_it: kept off the first screen's path

    console = Console(width=width, file=io.StringIO(), force_terminal=True, color_system="truecolor",
                      legacy_windows=False, emoji=False, markup=False, highlight=False)
    lines = console.render_lines(Markdown(markdown), console.options.update_width(width), pad=True)
    return [Strip(line, width) for line in lines]


class HelpRender:
    """The help's lines per (markdown, width), each rendered once (any thread)."""

    def __init__(self) -> None:
        self._lines: dict[tuple[str, int], list[Strip]] = {}
        self._lock = threading.Lock()
        self.renders = 0  # for tests: how many times Markdown was rendered

    def cached(self, markdown: str, width: int) -> list[Strip] | None:
        return self._lines.get((markdown, width))

    def nearest(self, markdown: str) -> list[Strip] | None:
        """Lines of `markdown` at any width (shown while the right width renders)."""
        return next((lines for (text, _), lines in self._lines.items() if text == markdown), None)

    def lines(self, markdown: str, width: int) -> list[Strip]:
        """The lines of `markdown` at `width`, rendered now unless kept (slow: off the UI thread)."""
        with self._lock:
            found = self._lines.get((markdown, width))
            if found is None:
                found = render_markdown(markdown, width)
                self.renders += 1
                self._lines[(markdown, width)] = found
            return found


def help_text_width(screen_width: int) -> int:
    """The help text's width on a screen `screen_width` cells wide (the dialog is 90% wide, with
    a thick border, 2 cells of padding each side and a 2-cell scroll bar: app.tcss)."""
    return max(20, screen_width * 9 // 10 - 2 - 4 - 2)


class HelpText(ScrollView, can_focus=True):
    """The rendered help, scrolled with the usual keys; renders its width in a worker when not kept."""

    DEFAULT_CSS = "HelpText { height: 1fr; overflow-x: hidden; overflow-y: scroll; scrollbar-size-vertical: 2; }"

    @dataclass(eq=False)
    class Rendered(Message):
        width: int  # the width whose lines are now kept

    def __init__(self, markdown: str, render: HelpRender, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.markdown = markdown
        self.help_render = render
        self._lines: list[Strip] = []
        self._width = 0  # the width `_lines` were rendered for (0: none yet)

    def on_resize(self) -> None:
        self._show(self.scrollable_content_region.width)

    def _show(self, width: int) -> None:
        if width <= 0 or width == self._width:
            return
        lines = self.help_render.cached(self.markdown, width)
        if lines is None:
            self._set_lines(self.help_render.nearest(self.markdown) or [], 0)
            self._render_width(width)
            return
        self._set_lines(lines, width)

    def _set_lines(self, lines: list[Strip], width: int) -> None:
        self._lines, self._width = lines, width
        self.virtual_size = Size(self.scrollable_content_region.width, len(lines))
        self.refresh()

    @work(thread=True, exclusive=True, group="help-render", exit_on_error=False)
    def _render_width(self, width: int) -> None:
        self.help_render.lines(self.markdown, width)
        self.post_message(self.Rendered(width))

    def on_help_text_rendered(self, message: Rendered) -> None:
        if self.scrollable_content_region.width == message.width:  # not resized meanwhile
            self._show(message.width)

    @property
    def ready(self) -> bool:
        """The text is drawn at its width (not the placeholder or another width's lines)."""
        return self._width == self.scrollable_content_region.width and bool(self._lines)

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        index = int(self.scroll_offset.y) + y
        if not self._lines:
            if y == 0:
                return Strip(list(Text(PREPARING, style="italic").render(self.app.console))).crop_extend(
                    0, width, self.rich_style)
            return Strip.blank(width, self.rich_style)
        if index >= len(self._lines):
            return Strip.blank(width, self.rich_style)
        return self._lines[index].crop_extend(0, width, self.rich_style)
