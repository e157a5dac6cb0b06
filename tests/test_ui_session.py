"""The brain session, its messages, the confirm guard, the palette and the keymap, with Pilot."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from textual.command import CommandPalette
from textual.widgets import Input

from cleo_tui.config import config_path
from cleo_tui.ui.app import CleoApp
from cleo_tui.ui.messages import BrainChanged, SessionReplaced, TagsReady
from cleo_tui.ui.palette import palette_entries
from cleo_tui.ui.widgets.chrome import PaneScreen
from cleo_tui.ui.widgets.footer import CleoFooter
from cleo_tui.ui.widgets.modals import ConfirmModal, HelpScreen
from cleo_tui.ui.widgets.path_prompt import PathPrompt
from cleo_tui.ui.widgets.table import LineTable
from tests.ui_helpers import copy_demo, settle


def live_row(path: Path) -> str:
    """The newest live observation of the brain file, read with plain sqlite3."""
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT id FROM brain_observations WHERE invalid_at IS NULL "
                            "ORDER BY created_at DESC LIMIT 1").fetchone()[0]


def is_live(path: Path, observation_id: str) -> bool:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT invalid_at IS NULL FROM brain_observations WHERE id = ?",
                            (observation_id,)).fetchone()[0] == 1


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_typing_yesterday_on_the_table_evicts_nothing(brain, monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(ConfirmModal, "clock", clock)
    monkeypatch.setattr(ConfirmModal, "guard_seconds", 0.4)
    path = Path(brain.path).resolve()
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        table = app.screen.query_one("#obs-table", LineTable)
        table.focus()
        target = table.current_row()["id"]
        assert is_live(path, target)
        for key in "yesterday":  # e opens the evict dialog; the final y comes 0.1 s later
            await pilot.press(key)
            clock.now += 0.0125
        await settle(app, pilot)
        assert is_live(path, target), "a stray y confirmed the eviction"
        modal = app.screen
        assert isinstance(modal, ConfirmModal) and modal.danger
        assert app.focused is not None and app.focused.id == "cancel"
        clock.now += 1.0
        await pilot.press("enter")  # Enter on the focused Cancel button cancels
        await settle(app, pilot)
        assert not isinstance(app.screen, ConfirmModal) and is_live(path, target)

        await pilot.press("e")
        clock.now += 1.0  # a deliberate y, well after the dialog opened
        await pilot.press("y")
        await settle(app, pilot)
        assert not is_live(path, target)


async def test_every_pane_receives_the_session_messages(brain):
    app = CleoApp(brain=brain)
    seen: list[tuple[str, str]] = []
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        for key in "234":
            await pilot.press(key)
            await settle(app, pilot)
        panes = app.panes
        assert {p.PANE for p in panes} == {"observations", "prune", "review", "traces"}
        assert all(isinstance(p, PaneScreen) for p in panes)
        for pane in panes:
            original = pane.post_message

            def spy(message, pane=pane, original=original):
                seen.append((pane.PANE, type(message).__name__))
                return original(message)
            pane.post_message = spy
        target = live_row(Path(brain.path))
        app.session.curate("evict", target)
        await settle(app, pilot)
        assert app.session.undo_stack and app.session.tags is not None
        for pane in ("observations", "prune", "review", "traces"):
            assert (pane, "BrainChanged") in seen and (pane, "TagsReady") in seen
        app.session.undo()
        await settle(app, pilot)
        assert is_live(Path(brain.path), target)


def test_session_messages_are_dataclasses():
    change = BrainChanged("external", "CLEO wrote")
    assert (change.kind, change.what, change.run_id, change.source) == ("external", "CLEO wrote", None, None)
    assert not BrainChanged.bubble and not TagsReady.bubble and not SessionReplaced.bubble


PANE_ACTIONS = [("1", "evict", "evict"), ("1", "pin", "pin"), ("2", "commit", "commit"),
                ("3", "run", "run_llm"), ("4", "good", "record_good")]


async def test_palette_lists_the_current_panes_actions(brain):
    """For each (pane, query, action) of PANE_ACTIONS in turn, in one app: the pane's palette
    lists the action once, finds it by the query and runs it on the pane."""
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        for pane_key, query, action in PANE_ACTIONS:
            await pilot.press(pane_key)
            await settle(app, pilot)
            pane = app.screen
            entries = palette_entries(app, pane)
            names = [e.name for e in entries]
            assert len(names) == len(set(names)), f"an entry is listed twice ({pane_key})"
            assert any(query in e.name.lower() or query in e.help.lower() for e in entries), (pane_key, query)

            await pilot.press("ctrl+p")
            await settle(app, pilot)
            assert isinstance(app.screen, CommandPalette), (pane_key, query)
            palette = app.screen
            palette.query_one(Input).value = query
            await settle(app, pilot)
            hits = [str(option.prompt) for option in palette.query_one("CommandList").options]
            assert any(query in hit.lower() for hit in hits), (pane_key, query, hits)
            ran: list[str] = []
            setattr(pane, f"action_{action}", lambda *args, ran=ran, action=action: ran.append(action))
            await pilot.press("enter")
            await settle(app, pilot)
            assert ran == [action], (pane_key, query)
            assert app.screen is pane  # the palette is closed: the next pane key reaches the app


async def test_the_palette_finds_an_action_by_a_word_of_what_it_does(brain):
    """"bridge" (the CLI's name for it) found nothing: the entry is named "What CLEO injects" and
    its description, which says "memory bridge", was not searched."""
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+p")
        await settle(app, pilot)
        palette = app.screen
        for query, found in (("bridge", True), ("brdg", False)):  # words, not scattered letters
            palette.query_one(Input).value = query
            await settle(app, pilot)
            hits = [str(option.prompt) for option in palette.query_one("CommandList").options]
            assert any("What CLEO injects" in hit for hit in hits) is found, (query, hits)


async def test_palette_has_one_quit_and_no_global_store_entry_without_the_file(brain):
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+p")
        await settle(app, pilot)
        app.screen.query_one(Input).value = "quit"
        await settle(app, pilot)
        hits = [str(o.prompt) for o in app.screen.query_one("CommandList").options]
        assert sum("Quit" in hit for hit in hits) == 1, hits
        await pilot.press("escape")
        await settle(app, pilot)
        # No entry for CLEO's global store without its file.
        assert not any("global store" in e.name for e in palette_entries(app, app.screen))


async def test_a_remapped_key_shows_in_footer_help_and_palette(brain):
    config_path().parent.mkdir(parents=True, exist_ok=True)
    config_path().write_text(json.dumps({"keys": {"obs.evict": "E"}}))
    app = CleoApp(brain=brain)
    async with app.run_test(size=(160, 36)) as pilot:
        await settle(app, pilot)
        footer_keys = {key.key_display: key.description for key in app.screen.query_one(CleoFooter).shown}
        assert footer_keys.get("E") == "Evict" and "e" not in footer_keys

        await pilot.press("f1")
        await settle(app, pilot)
        assert isinstance(app.screen, HelpScreen)
        help_text = app.screen.markdown
        assert "| E | evict (soft" in help_text and "| e | evict" not in help_text
        await pilot.press("escape")
        await settle(app, pilot)

        evict = next(e for e in palette_entries(app, app.screen) if e.name == "Evict")
        assert evict.key == "E" and evict.display == "Evict (E)"

        path = Path(brain.path).resolve()
        target = app.screen.query_one("#obs-table", LineTable).current_row()["id"]
        await pilot.press("e")  # the old key does nothing now
        await settle(app, pilot)
        assert not isinstance(app.screen, ConfirmModal)
        await pilot.press("E")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmModal)
        await pilot.press("y")
        await settle(app, pilot)
        assert not is_live(path, target)


def second_brain(directory: Path) -> Path:
    """A second demo brain (other seed, other size) in its own project directory."""
    project = directory / "other-project"
    project.mkdir()
    return copy_demo(project, observations=120, seed=11)


async def test_open_brain_from_the_palette_replaces_every_pane(brain, tmp_path):
    other = second_brain(tmp_path)
    with sqlite3.connect(other) as conn:
        other_total = conn.execute("SELECT COUNT(*) FROM brain_observations").fetchone()[0]
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        old_panes = set(app.panes)
        old_session = app.session
        app.action_open_brain()
        await settle(app, pilot)
        assert isinstance(app.screen, PathPrompt)
        app.screen.query_one(Input).value = str(other.parent.parent)  # the project directory
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.session is not old_session and Path(app.session.brain.path) == other
        assert not (set(app.panes) & old_panes), "a pane of the old brain is still open"
        assert app.current_mode == "observations"
        assert app.screen.query_one("#obs-table", LineTable).total == other_total
        header = str(app.screen.query_one("#brain-header").render())
        # The path gives way first (the header's counts, CLEO's marks among them, matter more): its end shows.
        assert str(other) in header or "other-project" in header or (
            "ct/.cleo/cleo.db" in header and f"{app.session.summary['observations']['live']:,} live" in header)
        await pilot.press("2")
        await settle(app, pilot)
        assert app.screen.PANE == "prune" and app.screen.session is app.session


async def test_open_cleos_global_store_from_the_palette(brain, tmp_path, monkeypatch):
    data_home = tmp_path / "data-home"
    monkeypatch.setenv("XDG_DATA_HOME", str(data_home))
    store = second_brain(tmp_path)
    (data_home / "cleo").mkdir(parents=True)
    store.rename(data_home / "cleo" / "cleo.db")
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        entry = next(e for e in palette_entries(app, app.screen) if e.name == "Open CLEO's global store")
        entry.run()
        await settle(app, pilot)
        assert Path(app.session.brain.path) == data_home / "cleo" / "cleo.db"
        assert app.screen.query_one("#obs-table", LineTable).total > 0
        app.close_brains()


async def test_bad_settings_are_said_once_at_start_and_the_palette_changes_the_theme(brain):
    config_path().parent.mkdir(parents=True, exist_ok=True)
    config_path().write_text(json.dumps({"theme": "nosuch", "keys": {"obs.evict": "p", "obs.nosuch": "z",
                                                                     "obs.view": "V"}}))
    app = CleoApp(brain=brain)
    async with app.run_test(size=(160, 36)) as pilot:
        await settle(app, pilot)
        assert app.theme == "cleo" and app.keymap == {"obs.view": "V"}  # the defaults for the bad ones
        told = [n.message for n in app._notifications if n.title == "Settings ignored"]
        assert len(told) == 1
        assert "'nosuch' is not a theme; using cleo" in told[0]
        assert '"obs.evict" → p clashes with Pin (the observations pane); Evict keeps its default key e' in told[0]
        assert '"obs.nosuch" is not an action of cleo-tui' in told[0]
        footer_keys = {key.key_display: key.description for key in app.screen.query_one(CleoFooter).shown}
        assert footer_keys.get("e") == "Evict" and footer_keys.get("p") == "Pin" and footer_keys.get("V") == "Full text"

        entry = next(e for e in palette_entries(app, app.screen) if e.name == "Change theme…")
        entry.run()
        await settle(app, pilot)
        assert isinstance(app.screen, CommandPalette)  # Textual's theme picker
        app.theme = "nord"  # what choosing "nord" in it does
        await pilot.press("escape")
        await settle(app, pilot)
    assert json.loads(config_path().read_text())["theme"] == "nord"  # and the next start uses it
    assert CleoApp(brain=None).theme == "nord"


async def test_an_unknown_tokenizer_and_a_bad_protect_rule_are_said_with_the_other_settings(brain):
    config_path().parent.mkdir(parents=True, exist_ok=True)
    config_path().write_text(json.dumps({"tokenizer": "o999", "protect": {"recalled_within_days": 0}}))
    app = CleoApp(brain=brain)
    async with app.run_test(size=(160, 36)) as pilot:
        await settle(app, pilot)
        told = [n.message for n in app._notifications if n.title == "Settings ignored"]
        assert len(told) == 1
        assert "'o999' is not a tokenizer; using chars4" in told[0]
        assert "`protect.recalled_within_days` must be a whole number" in told[0]


async def test_the_palette_leaves_out_what_the_pane_does_not_offer_now(brain):
    """The Review pane offers no proposal keys before there is a proposal: nor does its palette (an entry
    chosen there did nothing)."""
    app = CleoApp(brain=brain)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        await pilot.press("3")
        await settle(app, pilot)
        names = {e.name.lower() for e in palette_entries(app, app.screen)}
        assert any("run" in name for name in names)
        assert not any("apply" in name or "approve all" in name for name in names), names
