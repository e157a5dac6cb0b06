"""Command-palette provider: every action of the pane it was opened from, and the app's, by name.

Generated from the live bindings (ui/keys.py), so each entry shows the key that
runs it now, with the user's keymap applied. Actions without a key (open another
brain, undo, reload) are listed here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from textual.command import DiscoveryHit, Hit, Hits, Provider

from cleo_tui.brain.store import global_brain_path
from cleo_tui.ui.host import host_of
from cleo_tui.ui.keys import keyed_actions
from cleo_tui.ui.widgets.chrome import PaneScreen

if TYPE_CHECKING:
    from textual.app import App
    from textual.screen import Screen


@dataclass(frozen=True)
class PaletteEntry:
    """One palette line: `name` (what is searched), `key` (may be ""), `help`, and `run` (schedules it)."""

    name: str
    key: str
    help: str
    run: Callable[[], object]

    @property
    def display(self) -> str:
        return f"{self.name} ({self.key})" if self.key else self.name


def palette_entries(app: App[Any], screen: Screen[Any]) -> list[PaletteEntry]:
    """The pane's own actions first (`screen` is the one the palette was opened from), then the app's."""
    keymap = host_of(app).keymap
    entries: list[PaletteEntry] = []
    if isinstance(screen, PaneScreen):
        for action in keyed_actions(app, type(screen).BINDINGS, keymap):
            if screen.check_action(action.binding.action.split("(")[0], ()) is False:
                continue  # not offered now, as the footer hides it (a Review key before any proposal)
            entries.append(PaletteEntry(action.name, action.key, action.help,
                                        partial(app.call_later, app.run_action, action.binding.action, screen)))
    for action in keyed_actions(app, type(app).BINDINGS, keymap):
        entries.append(PaletteEntry(action.name, action.key, action.help,
                                    partial(app.call_later, app.run_action, action.binding.action)))
    unbound = [("Undo last change", "Undo the last curation step made in this session", "undo_last"),
               ("Reload brain", "Re-read counts, tags and every pane (after CLEO wrote)", "reload_brain"),
               ("Open brain…", "Another brain file or project directory, in place of this one", "open_brain"),
               ("Change theme…", "Pick a colour theme (kept for the next start)", "change_theme")]
    if global_brain_path().is_file():
        unbound.append(("Open CLEO's global store", str(global_brain_path()), "open_global_store"))
    for name, help_text, action_name in unbound:
        entries.append(PaletteEntry(name, "", help_text, partial(app.call_later, app.run_action, action_name)))
    return entries


HELP_MATCH = 0.01  # the score of an entry found by its description (a name match scores above 0.01)


class CleoCommands(Provider):
    """Lists the entries; fuzzy-matches what the user types against their names."""

    def _entries(self) -> list[PaletteEntry]:
        return palette_entries(self.app, self.screen)

    async def discover(self) -> Hits:
        for entry in self._entries():
            yield DiscoveryHit(entry.display, entry.run, text=entry.name, help=entry.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        words = query.strip().lower()
        for entry in self._entries():
            score = matcher.match(entry.name)
            if score > 0:
                yield Hit(score, matcher.highlight(entry.display), entry.run, text=entry.name, help=entry.help)
            elif len(words) >= 3 and words in entry.help.lower():
                # Found by what it does ("bridge" → "What CLEO injects": CLEO's memory bridge…), below every
                # name match; the description as typed, not fuzzily, which would match almost any letters.
                yield Hit(HELP_MATCH, entry.display, entry.run, text=entry.name, help=entry.help)
