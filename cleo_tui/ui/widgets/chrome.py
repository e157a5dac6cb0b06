"""What every pane shares: the brain header, the pane tabs, the footer."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, ClassVar

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Static, Tab, Tabs

from cleo_tui.brain.kinds import KIND_HIPPO
from cleo_tui.brain.rows import JsonObject
from cleo_tui.safe_text import one_line, plural
from cleo_tui.ui import registry
from cleo_tui.ui.help import PaneHelp
from cleo_tui.ui.host import ConfirmRequest, Host, OpenObservation, SwitchPane, TellRequest, ask, host_of
from cleo_tui.ui.textual_compat import FrameHoldingScreen, bindings_for_key, keep_styles_on_resume
from cleo_tui.ui.widgets.cells import cut_cells_start
from cleo_tui.ui.widgets.footer import CleoFooter
from cleo_tui.ui.widgets.worker_errors import ForwardWorkerErrors

if TYPE_CHECKING:
    from cleo_tui.ui.session import BrainSession

PANES = tuple((pane.name, pane.tab_label) for pane in registry.PANES)  # (mode, "1 Observations") per tab
PANE_NAMES = registry.PANE_NAMES
HISTORY_PANE = "history"


SWEEP_MARK = "CLEO is sweeping — writes paused"
STALE_MARK = "MAY BE STALE"
STALE_HINT = "its -wal cannot be read here; `cleo-tui info` says why"  # Brain.stale_reason is too long


def _counts(summary: JsonObject, counts: int) -> str:
    """The header's first counts: live and evicted (2), or live only (1); a hippo store's memories that
    are not live are superseded (as `info` says)."""
    obs = summary["observations"]
    gone = "superseded" if summary.get("kind") == KIND_HIPPO else "evicted"
    return " · ".join([f"{obs['live']:,} live", f"{obs['evicted']:,} {gone}"][:counts])


def _header_tail(summary: JsonObject | None, kind_label: str | None, read_only: str | None,
                 live: str | None = None, alert: str = "", stale: str | None = None, counts: int = 3,
                 hidden_count: bool = True) -> Text:
    tail = Text()
    if live:
        tail.append(f"  {live}", style="bold reverse")
    if kind_label:
        tail.append(f"  {kind_label}", style="italic")
    if alert:  # the agents' liveness warning, before the counts: on a narrow screen it stays in view
        tail.append(f"  {alert}", style="bold yellow")
    if summary:
        tail.append(f"  {_counts(summary, min(counts, 2))}")
        at_risk, hidden = summary.get("at_risk", 0), summary.get("hidden_from_cleo_search", 0)
        if at_risk:  # CLEO's own rules (brain/cleo_rules.py): its next consolidation deletes these
            tail.append(f" · ⚠ {at_risk:,} at risk", style="bold red")
        if hidden and hidden_count:  # ... and its search never returns these
            tail.append(f" · {hidden:,} hidden", style="yellow")
        if counts >= 3:  # (a hippo store has no patterns or learnings)
            tail.append(("" if summary.get("kind") == KIND_HIPPO else
                         f" · {plural(summary['patterns'], 'pattern')} · {plural(summary['learnings'], 'learning')}")
                        + f" · {plural(summary['traces'], 'trace')}")
    if read_only is not None:
        tail.append("  READ-ONLY", style="bold reverse")
        if read_only:
            tail.append(f" ({read_only})")
    if stale is not None:
        tail.append(f"  {STALE_MARK}", style="bold yellow reverse")
        if stale:
            tail.append(f" ({stale})")
    return tail


def header_text(summary: JsonObject | None, path: str, kind_label: str, read_only_reason: str | None,
                width: int | None = None, live: str | None = None, alert: str = "",
                stale: str | None = None) -> Text:
    """One line: app name, brain path, kind, counts, read-only state; `live`: CLEO's sweep or lock wait;
    `stale`: why the brain's latest writes may be missing (Brain.stale_reason).

    When `width` is too narrow for all of it, the path gives way first (its start
    becomes "…", keeping at least its last 14 cells), then the stale and read-only
    reasons (`info` and each pane's status line have them), then the counts (to live and
    evicted, then live only; `info` has them all), then the agents' warning (the History
    pane has it), then the kind: the live count and the read-only and stale marks stay.
    """
    prefix = " cleo-tui  "
    shown = one_line(path)
    mark = None if read_only_reason is None else ""
    stale_mark = None if stale is None else ""
    stale = None if stale is None else one_line(stale)
    choices = [(kind_label, read_only_reason, alert, stale, 3), (kind_label, read_only_reason, alert, stale_mark, 3),
               (kind_label, mark, alert, stale_mark, 3), (kind_label, mark, alert, stale_mark, 2),
               (kind_label, mark, alert, stale_mark, 1), (kind_label, mark, "", stale_mark, 1),
               (None, mark, "", stale_mark, 1)]
    # CLEO's marks: at each level the hidden count gives way first (the at-risk count stays).
    levels = [(*choice, hidden) for choice in choices for hidden in (True, False)]
    for kind, read_only, warning, stale_shown, counts, hidden in levels:
        tail = _header_tail(summary, kind, read_only, live, warning, stale_shown, counts, hidden)
        room = (width or 10**6) - len(prefix) - tail.cell_len
        if room >= min(cell_len(shown), 14):  # "…" and ".cleo/cleo.db" at the least
            break
    if width is not None:
        shown = cut_cells_start(shown, max(2, room))
    text = Text()
    text.append(" cleo-tui ", style="bold reverse")
    text.append(" ")
    text.append(shown, style="bold")
    text.append_text(tail)
    return text


class BrainHeader(Static):
    """The brain's path, kind, counts and read-only state; refreshed when counts change."""

    DEFAULT_CSS = "BrainHeader { height: 1; background: $panel; color: $text; }"

    def on_mount(self) -> None:
        self.refresh_header()
        self.watch(self.app, "summary", lambda _: self.refresh_header(), init=False)  # Host.summary
        self.watch(self.app, "sweep", lambda _: self.refresh_header(), init=False)  # Host.sweep
        self.watch(self.app, "waiting", lambda _: self.refresh_header(), init=False)  # Host.waiting
        self.watch(self.app, "liveness_mark", lambda _: self.refresh_header(), init=False)

    def on_resize(self) -> None:
        self.refresh_header()

    def refresh_header(self) -> None:
        app = host_of(self.app)
        if not app.has_session:
            self.update(Text(" cleo-tui  no brain open", style="bold"))
            return
        session = app.session
        live = app.waiting or (SWEEP_MARK if app.sweep else None)
        self.update(header_text(session.summary, str(session.brain.path), session.brain.kind_label,
                                session.read_only_reason, self.size.width or None, live, app.liveness_mark,
                                STALE_HINT if session.brain.stale_reason else None))


class PaneTabs(Tabs):
    """Clickable pane names; the number keys switch panes from the keyboard."""

    DEFAULT_CSS = "PaneTabs { height: 2; }"

    def __init__(self, active: str) -> None:
        super().__init__(*[Tab(label, id=f"tab-{name}") for name, label in PANES], active=f"tab-{active}")
        self.pane = active

    def on_tabs_tab_activated(self, event: Tabs.TabActivated) -> None:
        event.stop()
        name = event.tab.id.removeprefix("tab-") if event.tab and event.tab.id else self.pane
        if name != self.pane:
            ask(self, SwitchPane(name))
            self.call_later(self._reset)

    def _reset(self) -> None:
        # This screen stays on its own pane; the other mode's tabs show the other pane.
        with self.prevent(Tabs.TabActivated):
            self.active = f"tab-{self.pane}"


# How long after the user's last key work no key asked for waits (`PaneScreen.when_keys_settled`):
# a key's frames are out by then, even on a busy machine.
KEYS_SETTLE_S = 0.15


class ItemActions(Screen[None]):
    """A screen whose ITEM_ACTIONS act on the item it shows (a proposal, a run, a trace, a cluster, a
    record): offered (footer, palette, keys) only while it shows one."""

    ITEM_ACTIONS: ClassVar[frozenset[str]] = frozenset()
    has_item = False  # the screen shows an item: see `show_item_parts`

    def show_item_parts(self, has_item: bool, *parts: str) -> None:
        """Whether the screen has an item to act on: `parts` (selectors of what shows one) are shown only
        then, the screen's explanation alone otherwise, and ITEM_ACTIONS are offered only then. The footer
        is redrawn only when that changes, not on every cursor move."""
        for part in parts:
            self.query_one(part).display = has_item
        if has_item != self.has_item:
            self.has_item = has_item
            self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # nothing to act on: not offered (the screen says how to get something)
        return not (action in self.ITEM_ACTIONS and not self.has_item)


class PaneScreen(ForwardWorkerErrors, ItemActions, FrameHoldingScreen):
    """Base of the panes: header and tabs on top, footer at the bottom, the session's messages.

    A pane subscribes to the session when mounted and unsubscribes when unmounted;
    while subscribed it receives BrainChanged, TagsReady, SummaryReady and
    SessionReplaced (see ui/messages.py), handled as `on_brain_changed` etc.
    It reads the app as its `host` (ui/host.py) and asks it for dialogs with messages
    (`confirm`, `tell`, `open_observation` post them).
    Its keys are its BINDINGS (each with an id): the footer, the help and the
    command palette all list them, with the user's keymap applied.
    """

    PANE = "observations"
    WRITE_ACTIONS: ClassVar[set[str]] = set()  # actions that write: disabled on a read-only brain
    PANE_HELP: ClassVar[PaneHelp | None] = None  # this pane's section of the help (keys from BINDINGS)
    FOOTER_FIRST: ClassVar[tuple[str, ...]] = ()  # actions the footer shows first (after Help) when narrow
    last_key_at = float("-inf")  # (time.monotonic) the user's last key on this pane: see `when_keys_settled`

    @property
    def host(self) -> Host:
        """The app, as panes see it (ui/host.py)."""
        return host_of(self.app)

    @property
    def session(self) -> BrainSession:
        """The open brain's session: brain, tags, overrides, summary, undo; write/curate/undo/reload."""
        return self.host.session

    def confirm(self, title: str, body: str, on_yes: Callable[[], object], danger: bool = False, *,
                on_no: Callable[[], object] | None = None, confirm_label: str = "Yes",
                dialog: ModalScreen[bool] | None = None) -> None:
        """The one confirm pattern (any thread): the app asks; `on_yes` runs only on an explicit yes."""
        ask(self, ConfirmRequest(title, body, on_yes, danger, on_no, confirm_label, dialog))

    def tell(self, title: str, body: str, error: bool = False) -> None:
        """The one message pattern (any thread): a dialog the user closes."""
        ask(self, TellRequest(title, body, error))

    def open_observation(self, observation_id: str) -> None:
        """Show one observation's detail over this pane."""
        ask(self, OpenObservation(observation_id))

    _shown = False  # resumed once: Textual has shown it

    def post_message(self, message: Message) -> bool:
        """A pane shown for the first time keeps the styles its widgets got when mounted.

        Textual sends a new mode's screen two ScreenResume events, each restyling every
        widget of the screen (about 0.1 s each on the Observations pane) though nothing
        changed since they were mounted; later resumes restyle as Textual does."""
        if isinstance(message, events.ScreenResume) and not self._shown:
            keep_styles_on_resume(message)
        return super().post_message(message)

    def on_screen_resume(self) -> None:
        self._shown = True

    _subscribed: BrainSession | None = None  # the session whose messages this pane receives

    def on_mount(self) -> None:
        if self.host.has_session:
            self._subscribed = self.session
            self._subscribed.subscribe(self)

    def on_unmount(self) -> None:
        if self._subscribed is not None:
            self._subscribed.unsubscribe(self)
            self._subscribed = None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if not super().check_action(action, parameters):
            return False
        app = self.host
        if action in self.WRITE_ACTIONS and app.has_session and app.session.read_only:
            if not app.session.brain.kind.writable:
                return False  # a kind never written (a hippo store): its write keys are not shown at all
            return None  # shown disabled in the footer; the pane's status line says why
        return True

    def when_keys_settled(self, callback: Callable[[], object], hold: float = KEYS_SETTLE_S) -> None:
        """Run `callback` now, or once `hold` seconds have passed since the user's last key here.

        For work no key asked for (background progress): done right after a key it shared the
        key's frame, or drew a frame a few milliseconds after it, and the key felt that much slower."""
        wait = self.last_key_at + hold - time.monotonic()
        if wait > 0:
            self.set_timer(wait, partial(self.when_keys_settled, callback, hold))
        else:
            callback()

    def on_key(self, event: events.Key) -> None:
        """Remember when; a write key on a read-only brain does nothing: say why, in one short notice."""
        self.last_key_at = time.monotonic()
        app = self.host
        if not (self.WRITE_ACTIONS and app.has_session and app.session.read_only):
            return
        active = self.active_bindings.get(event.key)
        binding = active.binding if active is not None and active.node is self else None
        if binding is None and not app.session.brain.kind.writable:  # hidden, not disabled: not active
            binding = next(iter(bindings_for_key(self, event.key)), None)
        if binding is not None and binding.action.split("(")[0] in self.WRITE_ACTIONS:
            what = binding.description or binding.action
            self.notify(f"{what}: not possible, the brain is read-only ({app.session.read_only_reason}).",
                        severity="warning", markup=False)

    def compose_chrome_top(self) -> ComposeResult:
        yield BrainHeader(id="brain-header")
        yield PaneTabs(self.PANE)

    def compose_footer(self) -> ComposeResult:
        yield CleoFooter()
