"""The panes, in one place: the tabs, the number keys, the help's sections and the palette's
entries are all made from `PANES` (a new pane: its module in panes/, one line here).

Each pane's module is imported when the pane is first shown (`pane_class`): only the
Observations pane is imported at start, which keeps about half a second off the first screen.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from textual.binding import Binding


@dataclass(frozen=True)
class Pane:
    """One pane: its mode `name`, its `title`, its number `key`, and where its screen class is."""

    name: str
    title: str
    key: str
    module: str
    cls: str

    @property
    def tab_label(self) -> str:
        return f"{self.key} {self.title}"

    def binding(self) -> Binding:
        """The app's key that shows this pane (its id: pane.NAME, for the keymap)."""
        return Binding(self.key, f"pane('{self.name}')", self.title, id=f"pane.{self.name}", show=False)


PANES: tuple[Pane, ...] = (
    Pane("observations", "Observations", "1", "cleo_tui.ui.panes.observations", "ObservationsScreen"),
    Pane("prune", "Prune", "2", "cleo_tui.ui.panes.prune", "PruneScreen"),
    Pane("review", "Review", "3", "cleo_tui.ui.panes.review", "ReviewScreen"),
    Pane("traces", "Traces", "4", "cleo_tui.ui.panes.traces", "TracesScreen"),
    Pane("duplicates", "Duplicates", "5", "cleo_tui.ui.panes.duplicates", "DuplicatesScreen"),
    Pane("history", "History", "6", "cleo_tui.ui.panes.history", "HistoryScreen"),
    Pane("sweeps", "Sweeps", "7", "cleo_tui.ui.panes.sweeps", "SweepsScreen"),
)
PANE_NAMES = tuple(pane.name for pane in PANES)
BY_NAME = {pane.name: pane for pane in PANES}


def pane_module_class(name: str) -> Any:
    """The screen class of the pane `name` (a PaneScreen), importing its module on first use."""
    pane = BY_NAME[name]
    return getattr(importlib.import_module(pane.module), pane.cls)
