"""The cleo-tui Textual app: one mode per pane, shared brain state, workers, popups."""

from __future__ import annotations

import gc
import os
import sqlite3
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from textual import work
from textual.app import App
from textual.binding import Binding
from textual.reactive import reactive
from textual.theme import Theme
from textual.worker import Worker, WorkerState

from cleo_tui.brain import Brain, BrainError, BrainNotFound, locate_brain, open_brain
from cleo_tui.brain.store import KIND_HIPPO
from cleo_tui.brain.summary import brain_summary
from cleo_tui.config import cache_dir, load_config, save_setting
from cleo_tui.memory import curation
from cleo_tui.memory.mapping import relevance_overrides
from cleo_tui.ui.help import help_markdown
from cleo_tui.ui.hippo_notice import use_hippo_panes
from cleo_tui.ui.modals import ConfirmModal, HelpScreen, MessageModal
from cleo_tui.ui.observations import ObservationsScreen
from cleo_tui.ui.palette import CleoCommands
from cleo_tui.ui.placeholders import ComingSoonScreen
from cleo_tui.ui.prune import PruneScreen
from cleo_tui.ui.review import ReviewScreen
from cleo_tui.ui.traces import TracesScreen
from cleo_tui.ui.welcome import WelcomeScreen

if TYPE_CHECKING:  # numpy loads with the tags, after the first screen
    from cleo_tui.memory.tags import TagTable

CLEO_THEME = Theme(
    name="cleo",
    primary="#5FAFD7",
    secondary="#87AF87",
    accent="#D7875F",
    warning="#D7AF5F",
    error="#D75F5F",
    success="#87D787",
    foreground="#E4E4E4",
    background="#1C1C1C",
    surface="#262626",
    panel="#303030",
    dark=True,
)

CURATION = {
    "pin": curation.pin_observation,
    "unpin": curation.unpin_observation,
    "evict": curation.evict_observation,
    "restore": curation.restore_observation,
}


def pane_screens() -> dict[str, Callable]:
    """Mode name → screen factory; panes whose issue has not landed say what is coming."""
    screens: dict[str, Callable] = {"observations": ObservationsScreen}
    for pane in ("prune", "review", "traces"):
        screens[pane] = lambda pane=pane: ComingSoonScreen(pane)
    screens["prune"] = PruneScreen
    screens["review"] = ReviewScreen
    screens["traces"] = TracesScreen
    return screens


class CleoApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "cleo-tui"
    COMMANDS = App.COMMANDS | {CleoCommands}
    BINDINGS = [
        Binding("1", "pane('observations')", "Observations", id="pane.observations", show=False),
        Binding("2", "pane('prune')", "Prune", id="pane.prune", show=False),
        Binding("3", "pane('review')", "Review", id="pane.review", show=False),
        Binding("4", "pane('traces')", "Traces", id="pane.traces", show=False),
        Binding("f1,question_mark", "help", "Help", id="app.help", tooltip="Panes, keys and tag rules"),
        Binding("q", "quit", "Quit", id="app.quit"),
    ]

    summary: reactive[dict | None] = reactive(None)

    def __init__(self, brain: Brain | None = None, project: Path | None = None,
                 problem: str = "", watch_css: bool = False) -> None:
        super().__init__(watch_css=watch_css)
        self.brain = brain
        self.project = project or Path.cwd()
        self.problem = problem
        self.tags: TagTable | None = None
        self._tags_started = False
        self.overrides: dict[str, str] = {}
        self.undo_stack: list[int] = []
        self.settings, self.config_problem = load_config()
        for name, factory in pane_screens().items():
            self.add_mode(name, factory)

    # -- start-up ------------------------------------------------------------------
    def on_mount(self) -> None:
        self.register_theme(CLEO_THEME)
        theme = self.settings.get("theme")
        self.settings["theme"] = theme if theme in self.available_themes else "cleo"
        self.theme = self.settings["theme"]
        keys = self.settings.get("keys")
        if isinstance(keys, dict) and keys:
            self.set_keymap({str(k): str(v) for k, v in keys.items()})
        if self.config_problem:
            self.notify(self.config_problem, severity="warning", timeout=8)
        if self.brain is None:
            self.push_screen(WelcomeScreen(self.project, self.problem))
        else:
            self.brain_opened(self.brain)

    def watch_theme(self, theme: str) -> None:
        """Remember a theme chosen in the palette for the next start."""
        if theme != self.settings.get("theme") and theme in self.available_themes:
            self.settings["theme"] = theme
            save_setting("theme", theme)

    def brain_opened(self, brain: Brain) -> None:
        """Start (or restart) on a brain: show the Observations pane, load counts and tags."""
        self.brain = brain
        self.tags = None
        if isinstance(self.screen, WelcomeScreen):
            self.pop_screen()
        if brain.kind == KIND_HIPPO:  # no CLEO observations: start on its traces, the other panes say why
            use_hippo_panes(self)
        self.switch_mode("traces" if brain.kind == KIND_HIPPO else "observations")
        self._load_summary()
        # Tags take a second or more at 100k rows and share the GIL with the UI: they
        # start once the first rows are on screen (start_tags), or after a second.
        self._tags_started = False
        self.set_timer(1.0, self.start_tags)

    def start_tags(self) -> None:
        """Compute the tags of the open brain, once."""
        if not self._tags_started and self.brain is not None and self.brain.kind != KIND_HIPPO:
            self._tags_started = True
            self._load_tags()

    def refresh_brain_state(self) -> None:
        self._load_summary()
        if self.brain.kind != KIND_HIPPO:  # tags describe CLEO observations; a hippo store has none
            self._load_tags()

    @work(thread=True, exclusive=True, group="summary", exit_on_error=False)
    def _load_summary(self) -> None:
        summary = brain_summary(self.brain)
        overrides = relevance_overrides(self.brain)
        self.call_from_thread(self._set_summary, summary, overrides)

    def _set_summary(self, summary: dict, overrides: dict[str, str]) -> None:
        self.overrides = overrides
        self.summary = summary

    @work(thread=True, exclusive=True, group="tags", exit_on_error=False)
    def _load_tags(self) -> None:
        from cleo_tui.memory.tags import tag_brain
        reader = self.brain.reader()
        try:
            tags = tag_brain(reader)
        finally:
            reader.close()
        self.call_from_thread(self._set_tags, tags)

    def _set_tags(self, tags: TagTable) -> None:
        self.tags = tags
        # A million tag objects would otherwise be walked by every full garbage
        # collection, which the UI thread pays for on ordinary keypresses.
        gc.freeze()
        for screen in self.open_panes():
            if hasattr(screen, "tags_changed"):
                screen.tags_changed()

    def open_panes(self) -> list:
        """Every pane screen that has been opened (each mode keeps its own stack)."""
        screens = []
        for mode in ("observations", "prune", "review", "traces"):
            stack = self._screen_stacks.get(mode) or []
            screens += stack
        return screens

    # -- actions ----------------------------------------------------------------------
    def action_pane(self, name: str) -> None:
        if self.brain is None:
            self.notify("Open or create a brain first.", severity="warning")
            return
        if self.current_mode != name:
            self.switch_mode(name)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(help_markdown()))

    def action_reload_brain(self) -> None:
        if self.brain is not None:
            self.brain.refresh()
            self.refresh_brain_state()
            for screen in self.open_panes():
                if hasattr(screen, "reload"):
                    screen.reload(keep_cursor=True)

    def open_observation(self, observation_id: str) -> None:
        """Show one observation's detail over the current pane."""
        from cleo_tui.ui.detail import ObservationModal
        self.push_screen(ObservationModal(observation_id))

    def confirm(self, title: str, body: str, on_yes: Callable[[], None], danger: bool = False) -> None:
        """The one confirm pattern: ask, then run `on_yes` only on an explicit yes."""
        def answered(yes: bool | None) -> None:
            if yes:
                on_yes()
        self.push_screen(ConfirmModal(title, body, danger=danger), answered)

    def curate(self, kind: str, observation_id: str) -> None:
        self._curate(kind, observation_id)

    @work(thread=True, exclusive=True, group="curation", exit_on_error=False)
    def _curate(self, kind: str, observation_id: str) -> None:
        run_id = CURATION[kind](self.brain, observation_id)
        self.call_from_thread(self.curation_finished, f"{kind} {observation_id}", run_id)

    def undo_last(self) -> None:
        if not self.undo_stack:
            self.notify("Nothing to undo in this session.", severity="warning")
            return
        self.undo_run(self.undo_stack.pop())

    @work(thread=True, exclusive=True, group="curation", exit_on_error=False)
    def undo_run(self, run_id: int) -> None:
        """Undo one curation run in a worker; every pane then reloads."""
        undo_id, restored = curation.undo(self.brain, run_id)
        self.call_from_thread(self.curation_finished, f"undo of run {run_id} ({restored} row(s))", None)

    def curation_finished(self, what: str, run_id: int | None) -> None:
        """After any write: remember it for undo (u), say so, reload counts, tags and panes."""
        if run_id is not None:
            self.undo_stack.append(run_id)
        self.notify(f"Done: {what}." + (" u undoes it." if run_id is not None else ""))
        self.refresh_brain_state()
        for screen in self.open_panes():
            if hasattr(screen, "curation_done"):
                screen.curation_done()

    # -- errors -------------------------------------------------------------------------
    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            self.report_worker_failure(event.worker)

    def report_worker_failure(self, worker: Worker) -> None:
        """A worker's failure becomes a popup with its message, never a traceback."""
        error = worker.error
        if isinstance(error, BrainError):
            self.push_screen(MessageModal("That did not work", str(error)))
            return
        where = log_failure(error)
        if isinstance(error, sqlite3.DatabaseError):
            title, body = ("The brain could not be read", f"SQLite said: {error}.\n\nThe file may be damaged, or "
                           "another program changed it while it was open. Nothing was written unless a message "
                           "said so; reopen the brain, or check it with `sqlite3 FILE 'PRAGMA integrity_check'`.")
        else:
            title, body = "Something went wrong", (f"{type(error).__name__}: {error}\n\nNothing was written "
                                                   "unless a message said so.")
        if where:
            body += f"\n\nDetails were written to {where}."
        self.push_screen(MessageModal(title, body))


def log_failure(error: BaseException) -> Path | None:
    """With CLEO_TUI_DEBUG=1, append the traceback to a log in the cache directory."""
    if not os.environ.get("CLEO_TUI_DEBUG"):
        return None
    path = cache_dir() / "cleo-tui.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as log:
        log.write("".join(traceback.format_exception(error)) + "\n")
    return path


def run_app(project: Path, db: Path | None, read_only: bool) -> int:
    """Open the brain (or the welcome screen when there is none) and run the app."""
    brain, problem = None, ""
    try:
        brain = open_brain(db if db else locate_brain(project), read_only=read_only)
    except BrainNotFound as exc:
        if db is not None:
            raise
        problem = str(exc)
    CleoApp(brain=brain, project=project.expanduser().resolve(), problem=problem).run()
    if brain is not None:
        brain.close()
    return 0
