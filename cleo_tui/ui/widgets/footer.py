"""The footer every pane shows: Help (F1) first, then the pane's most important keys.

Textual's footer lists the focused widget's keys, then the screen's, then the app's,
and cuts what does not fit at the right edge: at 80 columns Help was the first to go,
and a key could be cut in half (`c▏`). Here the keys are ordered by priority (Help, then
the screen's `FOOTER_FIRST` actions in order, then the rest as declared), the footer turns
compact on a narrow terminal, and only the keys that fit whole are shown; every key stays
in the help and the command palette.

It is one widget that draws its keys as one line of text, where Textual's footer mounts a
widget per key. Those keys were mounted after the first frame (Textual's footer composes
empty until the screen's bindings are first known), and mounting them laid the whole
screen out and drew it again: about 55 ms of the UI thread just after the first screen,
which a key pressed then waited for (and 13 ms on every change of keys). Drawn as text, a
change of keys repaints one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.screen import Screen
from textual.widget import Widget

FIRST_ACTIONS = ("help",)  # shown before every pane key
COMPACT_BELOW = 120  # columns: a narrower footer drops the padding inside each key
PALETTE_BORDER = "▏"


@dataclass(frozen=True)
class FooterKey:
    """A key as the footer shows it."""

    key: str  # the key pressed (a click on it presses it)
    key_display: str  # how the key is written ("f1", "^p")
    description: str
    action: str
    enabled: bool = True
    tooltip: str = ""


def footer_priority(action: str, first: Sequence[str]) -> int:
    """Where a key with `action` goes: Help, then the screen's FOOTER_FIRST in order, then the rest."""
    name = action.split("(")[0]
    if name in FIRST_ACTIONS:
        return 0
    for rank, wanted in enumerate(first, 1):
        if wanted in (action, name):
            return rank
    return len(first) + 1


def keys_that_fit(widths: Sequence[int], room: int) -> int:
    """How many keys (in order, each `widths[i]` cells wide) fit whole in `room` cells."""
    used = 0
    for shown, width in enumerate(widths):
        if used + width > room:
            return shown
        used += width
    return len(widths)


def key_parts(key: FooterKey, compact: bool) -> tuple[str, str, str]:
    """A key's text in three parts: the key (padded), the description (padded), the gap after it."""
    if not key.description:
        return key.key_display, "", " " if compact else ""
    if compact:  # "k Desc" and a gap
        return key.key_display, f" {key.description}", " "
    return f" {key.key_display} ", f"{key.description} ", ""


def key_width(key: FooterKey, compact: bool) -> int:
    """Cells a footer key takes, the gap after it included."""
    return sum(cell_len(part) for part in key_parts(key, compact))


def palette_width(palette: FooterKey) -> int:
    """Cells the palette's key takes at the right edge: its border, "^p palette" and a space."""
    return 1 + cell_len(palette.key_display) + 1 + cell_len(palette.description) + 1


class _KeyStyles(NamedTuple):
    base: Style  # the footer's
    key: Style
    description: Style
    hover: Style  # under a key the pointer is over


class CleoFooter(Widget, can_focus=False):
    """Footer with the keys in priority order, compact when narrow, showing only keys that fit whole.

    A click on a key presses it (a disabled key rings the bell); the pointer over a key lights
    it and shows its tooltip."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"footer--key", "footer--description", "footer--hover", "footer--border"}
    DEFAULT_CSS = """
    CleoFooter {
        dock: bottom;
        height: 1;
        color: $footer-foreground;
        background: $footer-background;
        .footer--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        .footer--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        .footer--hover {
            color: $footer-key-foreground;
            background: $block-hover-background;
        }
        .footer--border {
            color: $foreground 20%;
        }
    }
    """

    def __init__(self) -> None:
        super().__init__()
        self.keys: tuple[FooterKey, ...] = ()  # every key to show, in order (those that fit are `shown`)
        self.palette: FooterKey | None = None  # the command palette's key, at the right edge
        self.shown: tuple[FooterKey, ...] = ()  # the keys drawn when last rendered
        self._spans: list[tuple[int, int, FooterKey]] = []  # (first cell, end, key) of each key drawn
        self._hover: FooterKey | None = None

    @property
    def compact(self) -> bool:
        """Narrow: the keys lose the padding around them."""
        return (self.size.width or self.app.size.width) < COMPACT_BELOW

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self._bindings_changed)
        self._bindings_changed(self.screen)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _bindings_changed(self, screen: Screen[object]) -> None:
        """Read the keys again; repaint only when what the footer shows changed."""
        keys, palette = self._read_keys(screen)
        if (keys, palette) != (self.keys, self.palette):
            self.keys, self.palette = keys, palette
            self.refresh()

    def _read_keys(self, screen: Screen[object]) -> tuple[tuple[FooterKey, ...], FooterKey | None]:
        """The screen's shown keys, one per action (its first key), in priority order; the palette's key."""
        app = self.app
        by_action: dict[str, FooterKey] = {}
        palette = None
        for key, (_node, binding, enabled, tooltip) in screen.active_bindings.items():
            if key == app.COMMAND_PALETTE_BINDING and app.ENABLE_COMMAND_PALETTE:
                palette = self._footer_key(binding, enabled, tooltip or binding.tooltip or binding.description)
            elif binding.show and binding.action not in by_action:
                by_action[binding.action] = self._footer_key(binding, enabled, tooltip)
        first = tuple(getattr(screen, "FOOTER_FIRST", ()))
        ordered = sorted(by_action.values(), key=lambda k: footer_priority(k.action, first))
        return tuple(ordered), palette

    def _footer_key(self, binding: Binding, enabled: bool, tooltip: str) -> FooterKey:
        return FooterKey(binding.key, self.app.get_key_display(binding), binding.description, binding.action,
                         enabled, tooltip)

    def render(self) -> Text:
        width, compact, base = self.size.width, self.compact, self.rich_style
        styles = _KeyStyles(base, self.get_component_rich_style("footer--key"),
                            self.get_component_rich_style("footer--description"),
                            base + self.get_component_rich_style("footer--hover"))
        room = width - (palette_width(self.palette) + 2 if self.palette else 0)  # (at least a gap of 2)
        shown = self.keys[:keys_that_fit([key_width(k, compact) for k in self.keys], room)]
        # (the cells between keys: the footer's background only, one run of text up to the palette's key)
        line = Text(style=Style(bgcolor=base.bgcolor), no_wrap=True, overflow="crop", end="")
        spans = [self._append_key(line, key, compact, styles) for key in shown]
        if self.palette is not None:
            line.append(" " * max(0, width - line.cell_len - palette_width(self.palette)))
            line.append(PALETTE_BORDER, base + self.get_component_rich_style("footer--border"))
            spans.append(self._append_key(line, self.palette, True, styles))
        self.shown, self._spans = shown, spans
        return line

    def _append_key(self, line: Text, key: FooterKey, compact: bool,
                    styles: _KeyStyles) -> tuple[int, int, FooterKey]:
        """Draw `key` at the end of `line`: (its first cell, its end, the key)."""
        start = line.cell_len
        under = styles.hover if key == self._hover else styles.base
        dim = Style() if key.enabled else Style(dim=True)
        label, description, after = key_parts(key, compact)
        line.append(label, under + styles.key + dim)
        if description:
            line.append(description, under + styles.description + dim)
        end = line.cell_len
        line.append(after)
        return start, end, key

    def key_at(self, x: int) -> FooterKey | None:
        """The key drawn at cell `x`, if any."""
        return next((key for start, end, key in self._spans if start <= x < end), None)

    def on_mouse_down(self, event: events.MouseDown) -> None:
        key = self.key_at(event.x)
        if key is None:
            return
        if key.enabled:
            self.app.simulate_key(key.key)
        else:
            self.app.bell()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        self._set_hover(self.key_at(event.x))

    def on_leave(self, _: events.Leave) -> None:
        self._set_hover(None)

    def _set_hover(self, key: FooterKey | None) -> None:
        if key != self._hover:
            self._hover = key
            self.tooltip = key.tooltip if key is not None and key.tooltip else None
            self.refresh()
