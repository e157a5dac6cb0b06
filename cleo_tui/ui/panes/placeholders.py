"""Panes whose issue has not landed yet say what is coming, and nothing is broken."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Center, Middle
from textual.widgets import Static

from cleo_tui.ui.widgets.chrome import PaneScreen

COMING = {
    "prune": ("Prune", "Preview a pruning at a chosen token budget: tokens before and after, the target, "
              "fell-back, a budget bar, the dropped rows in drop order and the protected rows with "
              "their reasons; then commit (undoable). Until then: `cleo-tui prune --budget N`."),
    "review": ("Review", "Run the observer or reflector by hand and approve what they propose, item by "
               "item, before anything is written. Until then: `cleo-tui observe` and `cleo-tui reflect`."),
    "traces": ("Traces", "Browse recall traces: ranked results, the rerank chain of each, outcomes. "
               "Until then: `cleo-tui recall QUERY --why` and `cleo-tui traces`."),
}


class ComingSoonScreen(PaneScreen):
    def __init__(self, pane: str) -> None:
        self.PANE = pane
        super().__init__(id=f"pane-{pane}")

    def compose(self) -> ComposeResult:
        yield from self.compose_chrome_top()
        title, body = COMING[self.PANE]
        with Middle():
            with Center():
                yield Static(Text.assemble((f"{title} pane — coming soon\n\n", "bold"), body),
                             classes="coming-soon")
        yield from self.compose_footer()
