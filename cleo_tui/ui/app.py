"""The cleo-tui Textual app: one mode per pane, shared brain state, workers, popups."""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any
from weakref import WeakSet

from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.reactive import reactive
from textual.screen import ModalScreen, Screen
from textual.theme import Theme
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from cleo_tui import collector
from cleo_tui.brain import Brain, BrainNotFound, locate_brain, open_brain
from cleo_tui.brain.rows import JsonObject
from cleo_tui.brain.store import global_brain_path
from cleo_tui.config import config_path, load_config, save_setting
from cleo_tui.memory.settings import ignored_settings
from cleo_tui.ui import host
from cleo_tui.ui.help import help_markdown
from cleo_tui.ui.keys import check_keymap
from cleo_tui.ui.messages import (
    ChosenEnded,
    LiveState,
    Notice,
    Report,
    SessionMessage,
    SessionNews,
    SessionReplaced,
    SummaryReady,
)
from cleo_tui.ui.palette import CleoCommands
from cleo_tui.ui.panes.hippo_notice import TRACES_PANE, HippoNoticeScreen
from cleo_tui.ui.panes.observations import ObservationsScreen
from cleo_tui.ui.panes.observations_listing import first_listing
from cleo_tui.ui.panes.welcome import WelcomeScreen
from cleo_tui.ui.registry import PANE_NAMES, PANES, pane_module_class
from cleo_tui.ui.session import BACKGROUND_BY, BrainSession
from cleo_tui.ui.switching import hand_the_gil_back_sooner
from cleo_tui.ui.textual_compat import (
    ResizeOnlyOnChange,
    action_target,
    decode_input_leniently,
    every_mode_screen,
)
from cleo_tui.ui.widgets.chrome import HISTORY_PANE, PaneScreen
from cleo_tui.ui.widgets.help_view import HelpRender, help_text_width
from cleo_tui.ui.widgets.modals import ConfirmModal, HelpScreen, MessageModal
from cleo_tui.ui.widgets.path_prompt import PathPrompt
from cleo_tui.ui.widgets.worker_errors import failure_text

if TYPE_CHECKING:
    from cleo_tui.memory.history import Liveness
    from cleo_tui.memory.pool_scan.in_subprocess import ScanProcess
    from cleo_tui.memory.secrets import SecretScan
    from cleo_tui.ui.first_brain import FirstBrain

OPENING = "opening"  # the mode shown while panes are swapped for a new brain

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

ScreenFactory = Callable[[], Screen[Any]]


def pane_class(pane: str) -> type[PaneScreen]:
    """The screen class of `pane`, importing its module on first use (ui/registry.py)."""
    cls: type[PaneScreen] = pane_module_class(pane)
    return cls


def pane_screens(hippo: bool = False) -> dict[str, ScreenFactory]:
    """Mode name → screen factory. On a hippo store every pane but Traces and History says why it is empty."""
    screens: dict[str, ScreenFactory] = {pane: partial(_make_pane, pane) for pane in PANE_NAMES}
    if hippo:
        for pane in PANE_NAMES:
            if pane not in (TRACES_PANE, HISTORY_PANE):
                screens[pane] = partial(HippoNoticeScreen, pane)
    return screens


def _make_pane(pane: str) -> Screen[Any]:
    return pane_class(pane)()


class OpeningScreen(Screen[None]):
    """Shown for a moment while the panes of the old brain make way for the new one's."""

    def compose(self) -> ComposeResult:
        yield Static("Opening the brain…")


class CleoApp(ResizeOnlyOnChange):
    """The app: one mode per pane, one `BrainSession` (`session`); the host of panes and widgets.

    It implements `ui.host.Host` (what panes read) and handles the requests they send up
    (`ui.host`: confirm, tell, open an observation…). Panes subscribe to the session on mount
    and receive its messages (BrainChanged, TagsReady, SummaryReady, SessionReplaced); the
    app listens to the session's news (`_session_news`) and shows it: counts and CLEO's
    sweep in the header, notices, reports.
    """

    CSS_PATH = "app.tcss"
    TITLE = "cleo-tui"
    COMMANDS = {CleoCommands}
    BINDINGS = [
        *(pane.binding() for pane in PANES),  # 1-7: the panes (ui/registry.py)
        Binding("f1,question_mark", "help", "Help", id="app.help", tooltip="Panes, keys and tag rules"),
        Binding("q", "quit", "Quit", id="app.quit", tooltip="Leave cleo-tui"),
        Binding("S", "secrets", "Secrets", id="app.secrets", show=False,
                tooltip="Find API keys, tokens and passwords stored in the brain; redact them"),
        Binding("escape", "cancel_wait", "Stop waiting", id="app.cancel_wait", show=False,
                tooltip="Stop waiting for CLEO's write lock (nothing is written)"),
        Binding("i", "bridge", "What CLEO injects", id="app.bridge", show=False,
                tooltip="CLEO's memory bridge: what the agent reads at session start, with tokens and marks"),
    ]

    summary: reactive[JsonObject | None] = reactive(None)  # the session's counts, for the header to watch
    sweep: reactive[str | None] = reactive(None)  # CLEO's sweep sentence while its gate is up (header)
    waiting: reactive[str | None] = reactive(None)  # "waiting for CLEO's write lock…" (header; esc cancels)
    liveness_mark: reactive[str] = reactive("")  # "⚠ observer idle 12 d": the header shows it

    def __init__(self, brain: Brain | None = None, project: Path | None = None,
                 problem: str = "", watch_css: bool = False, read_only: bool = False,
                 first_scan: ScanProcess | None = None) -> None:
        super().__init__(watch_css=watch_css)
        self._session: BrainSession | None = None
        self._first_brain = brain
        self._first_scan = first_scan  # (the first brain's first scan, started before the app)
        self._retired: list[BrainSession] = []
        self._liveness_read_for: BrainSession | None = None  # the session whose liveness read has started
        self._quit_when_done = False  # q was pressed while a write or export the user chose ran
        self.project = project or Path.cwd()
        self.problem = problem
        self.settings, self.config_problem = load_config()
        keys = self.settings.get("keys")
        self.keymap: dict[str, str] = {}  # the config's remaps once checked (check_keys), then in force
        self._asked_keys: dict[Any, Any] = keys if isinstance(keys, dict) else {}
        # an unknown tokenizer, a bad theme, key clashes…: told once at start
        self.setting_problems: list[str] = ignored_settings(self.settings)
        self.read_only = read_only  # --read-only: every brain opened in this app opens read-only
        for name, factory in pane_screens().items():
            self.add_mode(name, factory)
        self.add_mode(OPENING, OpeningScreen)
        self._css_key: tuple[Any, ...] | None = None  # what the stylesheet was last parsed with (refresh_css)
        self._css_behind: WeakSet[Screen[Any]] = WeakSet()  # screens not restyled since the key changed
        self.help_render = HelpRender()  # the help's rendered lines, kept (see prepare_help)
        self._help: tuple[tuple[tuple[str, str], ...], str] | None = None  # (keymap, the help's Markdown)
        self._start_theme()

    # -- the theme and the CSS ---------------------------------------------------------
    def _start_theme(self) -> None:
        """Set the theme before the app runs, so the CSS is parsed once, with its colours.

        Set in on_mount, it made Textual parse every stylesheet again and restyle the screen
        after the first pane was composed (see refresh_css)."""
        self.register_theme(CLEO_THEME)
        theme = self.settings.get("theme")
        if theme not in self.available_themes:
            if theme is not None and theme != "cleo":
                near = difflib.get_close_matches(str(theme), sorted(self.available_themes), n=1)
                self.setting_problems.append(
                    f"theme: {str(theme)[:80]!r} is not a theme" + (f" (did you mean {near[0]}?)" if near else "")
                    + "; using cleo. The palette's Change theme… (ctrl+p) lists them.")
            theme = "cleo"
        self.settings["theme"] = theme
        self.theme = self.settings["theme"]
        self.stylesheet.set_variables(self.get_css_variables())
        self._css_key = self._css_inputs()

    def _css_inputs(self) -> tuple[Any, ...]:
        """What a refresh of the CSS depends on: the theme, its ANSI colours, the CSS variables."""
        return self.theme, self.ansi_theme, tuple(self.get_css_variables().items())

    def refresh_css(self, animate: bool = True) -> None:
        """Textual's refresh of the CSS, done only when the theme or the variables changed.

        Textual calls it after the theme is set and twice on the first switch to every mode;
        each call parses every stylesheet afresh and restyles the whole current screen
        (about 0.1 s at start, 0.3 s on the first switch to a pane), though nothing changed.
        A screen mounted since the last refresh was styled with the present rules; one that
        was not shown then (another pane) is restyled when it is shown again.
        """
        key = self._css_inputs()
        if key != self._css_key:
            self._css_key = key
            super().refresh_css(animate)
            shown = set(self.screen_stack)
            self._css_behind = WeakSet(screen for screen in every_mode_screen(self) if screen not in shown)
            return
        for screen in self.screen_stack:
            if screen in self._css_behind:
                self._css_behind.discard(screen)
                self.stylesheet.update(screen, animate=animate)
                screen.refresh(layout=True)

    # -- the session ---------------------------------------------------------------
    @property
    def session(self) -> BrainSession:
        """The open brain's session. Panes exist only while one is open."""
        if self._session is None:
            raise RuntimeError("No brain is open.")
        return self._session

    @property
    def has_session(self) -> bool:
        return self._session is not None

    @property
    def panes(self) -> list[PaneScreen]:
        """Every mounted pane screen of the open session (each mode keeps its own)."""
        if self._session is None:
            return []
        return [pane for pane in self._session.subscribers if isinstance(pane, PaneScreen)]

    def announce(self, message: SessionMessage) -> None:
        """Deliver a copy of `message` to every open pane (the session's announcement)."""
        if self._session is not None:
            self._session.announce(message)

    def _session_news(self, session: BrainSession, news: SessionNews) -> None:
        """What the open session announces, shown: counts and CLEO's sweep in the header, notices, reports."""
        if isinstance(news, ChosenEnded):
            self._chosen_ended(news)
        if session is not self._session:
            return
        if isinstance(news, SummaryReady):
            self.summary = session.summary
        elif isinstance(news, LiveState):
            self.sweep, self.waiting = session.sweep, session.waiting
        elif isinstance(news, Notice):
            self.notify(news.text, severity=news.severity, timeout=news.timeout, markup=False)
        elif isinstance(news, Report):
            self.tell(news.title, news.body, news.error)

    # -- start-up ------------------------------------------------------------------
    def on_mount(self) -> None:
        if self._asked_keys:  # the theme's problem is told with the keys', once they are checked
            self.run_worker(self._check_keys, thread=True, group="keys", exit_on_error=False)
        else:
            self.tell_setting_problems([])
        if self.config_problem:
            self.notify(self.config_problem, severity="warning", timeout=8)
        if self._first_brain is None:
            self.push_screen(WelcomeScreen(self.project, self.problem))
        else:
            self.open_brain_session(self._first_brain, self._first_scan)
            self._first_scan = None

    def _check_keys(self) -> None:
        """Check the config's key remaps against every pane's keys (imports the panes: in a thread),
        then put in force those that hold and say why the others were dropped."""
        from cleo_tui.ui.widgets.table import LineTable
        app_bindings = [*App.BINDINGS, *Screen.BINDINGS, *type(self).BINDINGS]
        scopes = {f"the {pane} pane": [*pane_class(pane).BINDINGS, *LineTable.BINDINGS, *app_bindings]
                  for pane in PANE_NAMES}
        checked = check_keymap(self._asked_keys, scopes)
        self.call_from_thread(self._set_keys, checked.keymap, checked.problems)

    def _set_keys(self, keymap: dict[str, str], problems: list[str]) -> None:
        self.keymap = keymap
        if keymap:
            self.set_keymap(keymap)
        self.tell_setting_problems(problems)

    def tell_setting_problems(self, problems: list[str]) -> None:
        """Say the settings' problems (the theme's and `problems`) once, together: a notification, and
        Textual's log (`textual console`)."""
        self.setting_problems = [*self.setting_problems, *problems]
        if self.setting_problems:
            text = "\n".join(self.setting_problems)
            self.log.warning(f"{config_path()}: {text}")
            self.notify(f"In {config_path()}:\n{text}", title="Settings ignored", severity="warning",
                        timeout=12, markup=False)

    def watch_theme(self, theme: str) -> None:
        """Remember a theme chosen in the palette for the next start."""
        if theme != self.settings.get("theme") and theme in self.available_themes:
            self.settings["theme"] = theme
            save_setting("theme", theme)

    def open_brain_session(self, brain: Brain, first_scan: ScanProcess | None = None) -> None:
        """Start on `brain`: a new session, fresh panes, the first pane shown; the old brain retires.
        `first_scan`: its first scan's process, started already."""
        old = self._session
        if old is not None:
            old.current = False
        self._session = BrainSession(self, brain, self._session_news, first_scan)
        self.summary = None
        if isinstance(self.screen, WelcomeScreen):
            self.pop_screen()
        start = "observations" if brain.supports("observations") else TRACES_PANE
        if start == "observations":
            self._session.read_first_rows(first_listing)  # while the panes are made
        if old is None and self.current_mode not in PANE_NAMES:
            self._install_panes(brain, start)
        else:
            self.run_worker(self._replace_panes(brain, start), group="open-brain", exclusive=True)
        if old is not None:
            old.stop_live()
            self._retired.append(old)  # workers may still read it; closed when the app ends
            old.announce(SessionReplaced())
        self._session.start()
        self.liveness_mark = ""
        if brain.supports("observations"):
            # Read with the first rows (see first_rows_shown), or by then if no pane shows any.
            self.set_timer(BACKGROUND_BY, partial(self._start_liveness, self._session))

    def _start_liveness(self, session: BrainSession) -> None:
        """Read `session`'s liveness once, if it is still the open one (about 2 s of queries at 1M rows)."""
        if (session is self._session and self._liveness_read_for is not session
                and session.brain.supports("observations")):
            self._liveness_read_for = session
            self._read_liveness(session)

    def _install_panes(self, brain: Brain, start: str) -> None:
        """The first brain: register its panes (none is shown yet) and show `start`."""
        for name, factory in pane_screens(not brain.supports("observations")).items():
            if not brain.supports("observations") and name != TRACES_PANE:
                self.remove_mode(name)  # never shown yet: removed at once
                self.add_mode(name, factory)
        self.switch_mode(start)

    async def _replace_panes(self, brain: Brain, start: str) -> None:
        """Swap every pane for a fresh one on the new brain (a mode cannot be removed while shown)."""
        await self.switch_mode(OPENING)
        for name, factory in pane_screens(not brain.supports("observations")).items():
            await self.remove_mode(name)
            self.add_mode(name, factory)
        await self.switch_mode(start)

    @work(thread=True, group="liveness", exit_on_error=False)
    def _read_liveness(self, session: BrainSession) -> None:
        """The agents' liveness for the header's mark (the History pane shows all of it)."""
        from cleo_tui.memory.liveness import read_liveness  # (not at start; not the History pane's module,
        # whose import in this thread held the GIL for 19 ms in one piece, just after the first screen)
        liveness = read_liveness(session.brain)
        self.call_from_thread(lambda: self.set_liveness(liveness) if self._session is session else None)

    def set_liveness(self, liveness: Liveness) -> None:
        """Show the mark of `liveness`'s warnings in the header (empty when there are none)."""
        from cleo_tui.memory.liveness import warning_mark
        self.liveness_mark = warning_mark(liveness.warnings)

    def show_observations_of_day(self, day: str) -> None:
        """Switch to the Observations pane, filtered to the observations created on `day`."""
        self.run_worker(self._show_day(day), group="show-day", exclusive=True)

    async def _show_day(self, day: str) -> None:
        await self.switch_mode("observations")
        if isinstance(self.screen, ObservationsScreen):
            self.screen.show_day(day)

    # -- what panes ask (ui/host.py) -------------------------------------------------------
    def on_confirm_request(self, request: host.ConfirmRequest) -> None:
        self.confirm(request.title, request.body, request.on_yes, request.danger, on_no=request.on_no,
                     confirm_label=request.confirm_label, dialog=request.dialog)

    def on_tell_request(self, request: host.TellRequest) -> None:
        self.tell(request.title, request.body, request.error)

    def on_open_observation(self, request: host.OpenObservation) -> None:
        self.open_observation(request.observation_id)

    def on_switch_pane(self, request: host.SwitchPane) -> None:
        self.action_pane(request.name)

    def on_show_day(self, request: host.ShowDay) -> None:
        self.show_observations_of_day(request.day)

    def on_open_bridge(self, request: host.OpenBridge) -> None:
        self.action_bridge(request.evicting, request.step)

    def on_brain_opened(self, request: host.BrainOpened) -> None:
        self.open_brain_session(request.brain)

    def on_first_rows_shown(self, _: host.FirstRowsShown) -> None:
        self.first_rows_shown()

    def on_liveness_read(self, message: host.LivenessRead) -> None:
        self.set_liveness(message.liveness)

    def first_rows_shown(self) -> None:
        """Panes call this once their first rows are on screen: the reads over the whole brain
        (tags, liveness) start now, not while the first screen is being drawn."""
        if self._session is not None:
            self._session.start_tags()
            self._start_liveness(self._session)
        self.set_timer(BACKGROUND_BY, self.prepare_help)

    # -- the help ---------------------------------------------------------------------
    def help_text(self) -> str:
        """The help's Markdown for the keymap in force (made once per keymap; imports every pane)."""
        key = tuple(sorted(self.keymap.items()))
        if self._help is None or self._help[0] != key:
            classes = [pane_class(pane) for pane in PANE_NAMES]
            panes = [(cls.PANE_HELP, cls.BINDINGS) for cls in classes if cls.PANE_HELP is not None]
            self._help = (key, help_markdown(self, panes, self.keymap))
        return self._help[1]

    def prepare_help(self) -> None:
        """Make and render the help in a thread, for the present screen width, so F1 opens it at once.

        A plain daemon thread, as the watcher: waiting for workers (tests, shutdown) does not wait for it."""
        width = help_text_width(self.size.width)

        def prepare() -> None:
            try:
                with collector.paused():  # (no full collection in this thread: it would hold the GIL)
                    self.help_render.lines(self.help_text(), width)
                    collector.freeze_again()  # a large brain's app: its help is left out of collections
            except Exception:  # the help then renders when opened, and says what failed there
                return

        threading.Thread(target=prepare, name="cleo-tui help", daemon=True).start()

    def close_brains(self) -> None:
        """Close every brain this app opened (the current one and those replaced)."""
        for session in self._sessions():
            session.close()
        self._retired.clear()

    # -- actions ----------------------------------------------------------------------
    def action_pane(self, name: str) -> None:
        if self._session is None:
            self.notify("Open or create a brain first.", severity="warning")
            return
        if self.current_mode != name:
            self.switch_mode(name)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.help_text(), self.help_render))

    def pane_on_top(self) -> PaneScreen | None:
        """The pane under whatever modal is shown (the one the user is working in)."""
        for screen in reversed(self.screen_stack):
            if isinstance(screen, PaneScreen):
                return screen
        return None

    def action_undo_last(self) -> None:
        if self._session is not None:
            self._session.undo()

    def action_reload_brain(self) -> None:
        if self._session is not None:
            self._session.reload()

    def action_open_brain(self) -> None:
        """Ask for a brain file or a project directory and open it in place of the current one."""
        self.push_screen(PathPrompt("Open brain", "A brain file (.cleo/cleo.db, brain.db, a hippo store) or a "
                                    "project directory (its brain is found as at start-up).",
                                    str(self.project), hint="enter to open · esc to cancel"),
                         self._open_answered)

    def action_secrets(self) -> None:
        """Scan the brain for secrets; from the list, redact them after a confirmation."""
        session = self._session
        if session is None or not session.brain.supports("observations"):
            self.notify("Secrets are scanned in CLEO brains; open one first.", severity="warning")
            return
        from cleo_tui.ui.widgets.secrets_view import SecretsScreen
        self.push_screen(SecretsScreen(session.brain.reader, session.read_only_reason), self._redact_asked)

    def _redact_asked(self, scan: SecretScan | None) -> None:
        session = self._session
        if scan is None or session is None:
            return
        from cleo_tui.memory.redaction import redaction_question
        self.confirm("Redact secrets — this cannot be undone", redaction_question(scan, session.brain.path),
                     lambda: session.redact_secrets(scan.findings), danger=True)

    def action_open_global_store(self) -> None:
        """Open CLEO's global store ($XDG_DATA_HOME/cleo/cleo.db)."""
        self._open_path(global_brain_path())

    def _open_answered(self, answer: str | None) -> None:
        if answer:
            self._open_path(Path(answer).expanduser())

    @work(thread=True, group="open-brain-file", exit_on_error=False)
    def _open_path(self, path: Path) -> None:
        """Open a file, or the brain of a directory, in a worker; a failure is a popup."""
        target = locate_brain(path) if path.is_dir() else path
        if not target.is_file():
            raise BrainNotFound(f"There is no brain at {target}.")
        brain = open_brain(target, read_only=self.read_only,
                           on_wait=lambda text: self.call_from_thread(self.notify, text, timeout=30))
        self.call_from_thread(self.open_brain_session, brain)

    # -- the live brain: CLEO's sweep and write lock ------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_wait":
            return self.waiting is not None  # Esc belongs to the focused widget otherwise
        return True

    def action_cancel_wait(self) -> None:
        if self._session is not None and self._session.cancel_wait():
            self.notify("Stopped waiting for CLEO's write lock: nothing was written.")

    async def run_action(self, action: str | Any, default_namespace: Any = None,
                         namespaces: Any = None) -> bool:
        """Refuse a pane's write action, with CLEO's sweep sentence, while CLEO sweeps."""
        target, name = action_target(self, action, self if default_namespace is None else default_namespace,
                                     namespaces)
        if (isinstance(target, PaneScreen) and name in target.WRITE_ACTIONS and self._session is not None
                and self._session.refuse_write()):
            return True
        return await super().run_action(action, default_namespace, namespaces)

    def chosen_under_way(self) -> list[str]:
        """The writes and exports the user chose that have not ended, of every brain opened."""
        return [label for session in self._sessions() for label in session.chosen]

    async def action_quit(self) -> None:
        """Quit, once every write and export the user chose is done (said, and done when they end)."""
        under_way = self.chosen_under_way()
        if not under_way:
            self.exit()
            return
        self._quit_when_done = True
        wait = " It waits for CLEO's write lock: esc cancels it, and nothing is written." if self.waiting else ""
        self.notify(f"Quitting once this is done: {', '.join(under_way)}.{wait}", timeout=30, markup=False)

    def _chosen_ended(self, news: ChosenEnded) -> None:
        if not self._quit_when_done:
            return
        if news.failed:  # its failure's popup follows: the user reads it before quitting
            self._quit_when_done = False
            self.notify(f"The {news.label} failed, so cleo-tui did not quit.", severity="warning", markup=False)
        elif not self.chosen_under_way():
            self.exit()

    def _sessions(self) -> list[BrainSession]:
        return [*self._retired, *([self._session] if self._session else [])]

    def on_unmount(self) -> None:
        """The app ends: no more watching, and the reads still under way end at once (the process
        waits for every worker thread; a million rows' read would keep it alive for minutes)."""
        for session in self._sessions():
            session.stop_live()
            session.stop_reads()

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Textual's commands (themes, keys, screenshot) without its Quit: ours is listed once."""
        for command in super().get_system_commands(screen):
            if command.title != "Quit":
                yield command

    def open_observation(self, observation_id: str) -> None:
        """Show one observation's detail over the current pane."""
        from cleo_tui.ui.widgets.detail import ObservationModal
        self.push_screen(ObservationModal(observation_id))

    def action_bridge(self, evicting: frozenset[str] = frozenset(), step: str | None = None) -> None:
        """Show what CLEO's memory bridge injects (and, from a pane with a pending step, after it)."""
        if self._session is None or not self._session.brain.supports("observations"):
            self.notify("CLEO's memory bridge is read from a CLEO brain; open one first.", severity="warning")
            return
        from cleo_tui.ui.widgets.bridge_view import BridgeScreen
        self.push_screen(BridgeScreen(self._session.brain, evicting, step, self.settings.get("tokenizer")))

    def confirm(self, title: str, body: str, on_yes: Callable[[], object], danger: bool = False, *,
                on_no: Callable[[], object] | None = None, confirm_label: str = "Yes",
                dialog: ModalScreen[bool] | None = None) -> None:
        """The one confirm pattern: ask, then run `on_yes` only on an explicit yes (`on_no` otherwise).

        A danger dialog starts on Cancel and ignores keys for its first moments
        (ConfirmModal.guard_seconds), so typing on cannot confirm it. `dialog`: a pane's own
        ConfirmModal (with an option to tick) asked in place of the plain one.
        """
        def answered(yes: bool | None) -> None:
            if yes:
                on_yes()
            elif on_no is not None:
                on_no()
        self.push_screen(dialog or ConfirmModal(title, body, confirm_label=confirm_label, danger=danger), answered)

    # -- errors -------------------------------------------------------------------------
    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR:
            self.report_worker_failure(event.worker)

    def tell(self, title: str, body: str, error: bool = False) -> None:
        """The one message pattern: a dialog the user closes, its text shown literally."""
        self.push_screen(MessageModal(title, body, error=error))

    def report_worker_failure(self, worker: Worker[Any]) -> None:
        """A worker's failure becomes a popup with its message, never a traceback."""
        if worker.error is not None:
            self.tell(*failure_text(worker.error), error=True)


def run_app(first: FirstBrain, read_only: bool) -> int:
    """Run the app on the brain opened first (or the welcome screen when there is none)."""
    decode_input_leniently()
    hand_the_gil_back_sooner()
    brain = first.brain
    app = CleoApp(brain=brain, project=first.project, problem=first.problem, read_only=read_only,
                  first_scan=first.first_scan)
    app.run()
    if app.has_session:
        app.close_brains()
    elif brain is not None:
        brain.close()
    return 0


if TYPE_CHECKING:
    def _is_a_host(app: CleoApp) -> host.Host:
        return app  # mypy checks that CleoApp implements what panes and widgets read of it
