"""Every use of Textual's internals, in one module, each with a test (tests/test_textual_compat.py).

cleo-tui leans on a few private names of Textual (8.2.8) where no public API does the job:

    updates_held           App._batch_count: Textual is holding frames back (starting, switching mode)
    every_mode_screen      App._screen_stacks: the screens of every mode, not only the current one
    FrameHoldingScreen     Screen._compositor_refresh: draw nothing while frames are held back
    NoSecondLayout         Widget._size_updated: a new height alone does not lay the screen out again
    draw_scrollbars_in_this_frame  ScrollBar._repaint_required, Compositor.update_widgets (through
                           Widget._size_updated: ScrollBarsInTheSameFrame, ScrollViewBarsInTheSameFrame):
                           the scroll bars a layout pass changed are drawn in that pass's frame
    bindings_for_key       DOMNode._bindings: a node's bindings of a key, hidden ones included
    keep_styles_on_resume  ScreenResume.refresh_styles (public field, private effect): skip a restyle
    decode_input_leniently textual.drivers.linux_driver's module-level `getincrementaldecoder`
    ResizeOnlyOnChange     App._on_resize keeps a report of the size the app already has, and lays
                           the screen out for it (public `prevent_default` stops it)

and one hook that now uses a public API: `action_target` parses an action with
`textual.actions.parse` (public) where the app used App._parse_action.

If Textual renames or changes one of these, its test fails (it checks the effect, not only
the name), and this module is the one place to mend. tests/test_textual_compat.py also
checks that no other module of cleo_tui imports a private Textual module or touches a
private Textual name.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Mapping
from typing import Any

from textual import actions, events
from textual.app import App
from textual.binding import Binding
from textual.dom import DOMNode
from textual.geometry import Size
from textual.screen import Screen
from textual.scroll_view import ScrollView
from textual.widget import Widget

__all__ = [
    "FrameHoldingScreen",
    "NoSecondLayout",
    "ResizeOnlyOnChange",
    "ScrollBarsInTheSameFrame",
    "ScrollViewBarsInTheSameFrame",
    "action_target",
    "bindings_for_key",
    "decode_input_leniently",
    "draw_scrollbars_in_this_frame",
    "every_mode_screen",
    "keep_styles_on_resume",
    "updates_held",
]

# The namespaces Textual resolves on the app itself ("app.quit", "screen.dismiss", "focused.copy").
APP_NAMESPACES = ("app", "screen", "focused")


def updates_held(app: App[Any]) -> bool:
    """Textual holds frames back: inside `App.batch_update()` (the app starting, a mode switching)."""
    return bool(app._batch_count)


def every_mode_screen(app: App[Any]) -> list[Screen[Any]]:
    """The screens on the stacks of every mode (the public `screen_stack` is the current mode's)."""
    return [screen for stack in app._screen_stacks.values() for screen in stack]


def action_target(app: App[Any], action: str | tuple[str, str, tuple[object, ...]], default_namespace: object,
                  namespaces: Mapping[str, object] | None) -> tuple[object | None, str]:
    """The node an action string runs on, and the action's name (public `textual.actions.parse`).

    The target is None for a namespace Textual does not know: `App.run_action` then raises
    its own error, as before."""
    destination, name, _ = action if isinstance(action, tuple) else actions.parse(action)
    if not destination:
        return default_namespace, name
    if namespaces is not None and destination in namespaces:
        return namespaces[destination], name
    return (getattr(app, destination, None) if destination in APP_NAMESPACES else None), name


def bindings_for_key(node: DOMNode, key: str) -> list[Binding]:
    """`node`'s own bindings of `key` as declared (the user's keymap is not applied), shown or not.

    `active_bindings` (public) leaves out a binding whose `check_action` says False."""
    return list(node._bindings.key_to_bindings.get(key, []))


def keep_styles_on_resume(message: events.ScreenResume) -> None:
    """The screen that gets this resume keeps the styles it has (Textual would restyle every widget)."""
    message.refresh_styles = False


class FrameHoldingScreen(Screen[None]):
    """A screen that draws nothing while Textual holds frames back (the app starting, a moment
    after a switch of mode): what was to be drawn stays to be drawn, in the first frame that goes out.

    Textual renders those frames and throws them away, then draws only what changed
    since: the first frame of a pane cost two full renders, and rows laid out meanwhile
    reached the terminal only with a later layout."""

    frame_held = False  # a frame was held back and not drawn yet

    def _compositor_refresh(self) -> None:
        if updates_held(self.app) and self is self.app.screen:
            self.frame_held = True
            return
        self.frame_held = False
        super()._compositor_refresh()


class ResizeOnlyOnChange(App[None]):
    """An app that lays its screen out again only when the terminal's size has changed.

    Textual's driver reports the terminal's size once more just after the app starts. The app
    keeps that report, though the size is the one it has, and hands it to the screen when it is
    next idle, which lays the whole screen out again: 13–27 ms of the UI thread (measured on a
    120×36 pty) right after the first screen is drawn, which a key pressed then waited for."""

    _reported_size: tuple[Size, Size | None] | None = None  # the last size the terminal reported

    def on_resize(self, event: events.Resize) -> None:
        reported = (event.size, event.pixel_size)
        if reported == self._reported_size:
            event.prevent_default()  # (App._on_resize, which would pass it to the screen, runs after)
        self._reported_size = reported


def draw_scrollbars_in_this_frame(widget: Widget) -> None:
    """`widget`'s scroll bars, if a layout pass just changed them, are drawn in the frame that pass draws.

    Textual asks for their repaint (`ScrollBar._repaint_required`), which reaches the screen only
    after that frame: every layout (each new row's detail, with its new height) cost one more
    frame, 17 ms or more after the rest, for the scroll bars of the table and of the detail. They
    are put in the frame's regions instead (`Compositor.update_widgets`)."""
    bars = {bar for bar in (widget._vertical_scrollbar, widget._horizontal_scrollbar)
            if bar is not None and bar._repaint_required}
    if bars and widget.is_attached:
        for bar in bars:
            bar._repaint_required = False
        widget.screen._compositor.update_widgets(bars)  # type: ignore[arg-type]


class ScrollBarsInTheSameFrame(Widget):
    """A widget whose scroll bars a layout pass changed are drawn in that pass's frame
    (`draw_scrollbars_in_this_frame`)."""

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        changed = super()._size_updated(size, virtual_size, container_size, layout=layout)
        draw_scrollbars_in_this_frame(self)
        return changed


class ScrollViewBarsInTheSameFrame(ScrollView):
    """A ScrollView whose scroll bars are drawn in the frame of the layout pass that changed them
    (`draw_scrollbars_in_this_frame`). Each layout pass changes them: its virtual size (the rows)
    never equals the one the pass measures (the view), so Textual repaints its bars every time.
    (Not a subclass of `ScrollBarsInTheSameFrame`: a Widget subclass ahead of ScrollView in the MRO
    gives Widget's default CSS precedence over ScrollView's, and the view no longer scrolls.)"""

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        changed = super()._size_updated(size, virtual_size, container_size, layout=layout)
        draw_scrollbars_in_this_frame(self)
        return changed


class NoSecondLayout(ScrollBarsInTheSameFrame):
    """Takes a new height from a layout pass without asking for another pass.

    Textual sets a resized widget's virtual size as a reactive that lays the whole screen
    out again on the next frame. When only the height changed (new text, same width), the
    pass that measured it already placed everything: each new row's detail cost two layout
    passes, the most expensive part of a keypress. A new width (a scrollbar came or went,
    the terminal was resized) rewraps the text: that still takes the second pass."""

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        same_width = size.width == self.outer_size.width and container_size.width == self.container_size.width
        return super()._size_updated(size, virtual_size, container_size, layout=layout and not same_width)


def lenient_decoder_factory(encoding: str) -> Callable[..., codecs.IncrementalDecoder]:
    """`codecs.getincrementaldecoder`, but every decoder it makes replaces invalid bytes."""
    factory = codecs.getincrementaldecoder(encoding)
    return lambda errors="replace": factory(errors="replace")


def decode_input_leniently() -> None:
    """Make Textual's Linux driver decode terminal input with replacement.

    It decodes stdin as strict UTF-8, so one invalid byte typed or pasted (a
    Latin-1 "é", an 8-bit CSI) raised UnicodeDecodeError in its input thread
    and killed the app. The driver looks the decoder factory up in its module.
    """
    from textual.drivers import linux_driver

    vars(linux_driver)["getincrementaldecoder"] = lenient_decoder_factory  # the name the driver reads
