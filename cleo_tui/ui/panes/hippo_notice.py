"""On a hippo store only the Traces and History panes have something to show; the others say so plainly."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Center, Middle
from textual.widgets import Static

from cleo_tui.ui.widgets.chrome import PANES, PaneScreen

TRACES_PANE = "traces"


def notice_text(pane: str) -> Text:
    title = dict(PANES).get(pane, pane).split(" ", 1)[-1]
    return Text.assemble(
        (f"{title} — not for a hippo store\n\n", "bold"),
        "This file is a hippo-memory store. It has no CLEO observations, patterns or learnings, "
        f"so there is nothing for the {title} pane to show or change. Open a CLEO or cleo-tui brain "
        "for that.\n\nThe Traces pane (4) shows this store's recall traces, each result resolved "
        "against its memories, and the History pane (6) what the store did each day.")


class HippoNoticeScreen(PaneScreen):
    """Stands in for a CLEO-only pane when the open file is a hippo store."""

    def __init__(self, pane: str) -> None:
        self.PANE = pane
        super().__init__(id=f"pane-{pane}")

    def compose(self) -> ComposeResult:
        yield from self.compose_chrome_top()
        with Middle():
            with Center():
                yield Static(notice_text(self.PANE), classes="coming-soon hippo-notice")
        yield from self.compose_footer()
