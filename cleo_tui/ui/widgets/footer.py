"""The footer every pane shows, with Help (F1) first so a narrow terminal never hides it.

Textual's footer lists the focused widget's keys, then the screen's, then the app's,
and cuts what does not fit at the right edge: at 80 columns Help was the first to go.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

FIRST_ACTIONS = ("help",)  # shown before every pane key


class CleoFooter(Footer):
    """Footer with the keys of FIRST_ACTIONS moved to the front."""

    def compose(self) -> ComposeResult:
        keys = list(super().compose())  # no binding of ours uses a key group, so the keys are flat
        for key in keys:
            if isinstance(key, FooterKey) and not key.has_class("-command-palette"):
                # A key starts compact and its binding to the footer's `compact` makes it not compact
                # when mounted: a class added then removed, each restyling it (over a hundred restyles
                # per footer). The palette's key is not bound: it stays compact.
                key.set_reactive(FooterKey.compact, self.compact)
        first = [k for k in keys if isinstance(k, FooterKey) and k.action in FIRST_ACTIONS]
        yield from first
        yield from (k for k in keys if k not in first)
