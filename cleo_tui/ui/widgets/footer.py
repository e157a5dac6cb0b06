"""The footer every pane shows: Help (F1) first, then the pane's most important keys.

Textual's footer lists the focused widget's keys, then the screen's, then the app's,
and cuts what does not fit at the right edge: at 80 columns Help was the first to go,
and a key could be cut in half (`c▏`). Here the keys are ordered by priority (Help, then
the screen's `FOOTER_FIRST` actions in order, then the rest as declared), the footer turns
compact on a narrow terminal, and only the keys that fit whole are shown; every key stays
in the help and the command palette.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from textual import events
from textual.app import ComposeResult
from textual.widgets import Footer

from cleo_tui.ui.textual_compat import FooterKey, compose_keys_at_once

FIRST_ACTIONS = ("help",)  # shown before every pane key
COMPACT_BELOW = 120  # columns: a narrower footer drops the padding inside each key


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


def key_width(key: FooterKey, compact: bool) -> int:
    """Cells a footer key takes, margin included, as Textual's footer CSS draws it."""
    label = cell_len(key.key_display)
    if not key.description:
        return label + (1 if compact else 0)
    if compact:  # "k Desc" and a margin
        return label + 1 + cell_len(key.description) + 1
    return label + 2 + cell_len(key.description) + 1  # " k " and "Desc "


class CleoFooter(Footer):
    """Footer with the keys in priority order, compact when narrow, showing only keys that fit whole.

    Textual recomposes a footer whenever bindings may have changed (every focus change,
    every `refresh_bindings`): it removes and mounts every key, about 13 ms a time, which
    was a fifth of the test suite's time and a share of many keypresses. Here it recomposes
    only when what it shows changed (`shown_keys`).
    """

    _composed: tuple[object, ...] | None = None  # `shown_keys` when the keys were last composed

    def __init__(self) -> None:
        super().__init__()
        compose_keys_at_once(self)

    def shown_keys(self) -> tuple[object, ...]:
        """Everything the footer's keys show: each shown binding's key, label, action, state and tooltip."""
        app = self.app
        keys = tuple((binding.key, app.get_key_display(binding), binding.description, binding.action,
                      enabled, tooltip, binding.show)
                     for key, (_node, binding, enabled, tooltip) in self.screen.active_bindings.items()
                     if binding.show or key == app.COMMAND_PALETTE_BINDING)
        return (self._narrow(), self.show_command_palette, *keys)

    def compose(self) -> ComposeResult:
        self.set_reactive(Footer.compact, self._narrow())
        self.set_class(self.compact, "-compact")
        keys = list(super().compose())  # no binding of ours uses a key group, so the keys are flat
        for key in keys:
            if isinstance(key, FooterKey) and not key.has_class("-command-palette"):
                # A key starts compact and its binding to the footer's `compact` makes it not compact
                # when mounted: a class added then removed, each restyling it (over a hundred restyles
                # per footer). The palette's key is not bound: it stays compact.
                key.set_reactive(FooterKey.compact, self.compact)
        first = tuple(getattr(self.screen, "FOOTER_FIRST", ()))
        ordered = sorted((k for k in keys if isinstance(k, FooterKey)),
                         key=lambda k: (k.has_class("-command-palette"), footer_priority(k.action, first)))
        # Fitted now, from the keys' texts (a footer recomposed under a dialog is not laid out until the
        # dialog closes, and must not show a cut key meanwhile), and again on every resize.
        self._fit_keys(ordered)
        self._composed = self.shown_keys() if keys else None
        yield from ordered
        yield from (k for k in keys if not isinstance(k, FooterKey))

    def _narrow(self) -> bool:
        width = self.size.width or self.app.size.width
        return width < COMPACT_BELOW

    def on_mount(self) -> None:
        super().on_mount()
        self.call_after_refresh(self._fit)

    def on_resize(self, event: events.Resize) -> None:
        if self._narrow() != self.compact:
            self.call_after_refresh(self.recompose)
        self.call_after_refresh(self._fit)

    async def recompose(self) -> None:
        if self._composed is not None and self.is_attached and self.shown_keys() == self._composed:
            return  # nothing it shows changed: keep the keys it has
        await super().recompose()
        self.call_after_refresh(self._fit)

    def _fit(self) -> None:
        self._fit_keys(list(self.query(FooterKey)))

    def _fit_keys(self, keys: list[FooterKey]) -> None:
        """Show the keys, in order, that fit whole beside the palette's key; hide the others.

        Widths come from the keys' texts (`key_width`), not from layout: a key not laid out yet
        (the palette's, while the footer is recomposed) would measure 0 and let a key be cut."""
        pane_keys = [k for k in keys if not k.has_class("-command-palette")]
        palette = [k for k in keys if k.has_class("-command-palette")]
        width = self.size.width or self.app.size.width
        room = width - sum(key_width(k, True) + 2 for k in palette) - 1  # its border and padding; a space
        shown = keys_that_fit([key_width(k, self.compact) for k in pane_keys], room)
        for index, key in enumerate(pane_keys):
            if key.display != (index < shown):
                key.display = index < shown
