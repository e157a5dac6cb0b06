"""What panes and widgets need from the app that hosts them, and what they ask of it.

The bottom of `ui/`'s layers (app → panes → widgets → host): a pane or widget reads the
host through `host_of(self.app)`, typed as the `Host` protocol below, never as the app class,
so none of them imports `ui/app.py`. Data comes down as the host's attributes (the open
`session`, the settings, the header's marks); requests go up as the messages below, posted
to the app (`ask(node, request)`, safe from a worker thread too) and handled there:

    ConfirmRequest     the one confirm pattern: ask, run `on_yes` only on an explicit yes
    TellRequest        the one message pattern: a dialog the user closes
    OpenObservation    one observation's detail over the current pane
    SwitchPane         show another pane (the tabs)
    ShowDay            the Observations pane, filtered to one day (History)
    OpenBridge         what CLEO's memory bridge injects (after a pane's pending step)
    FirstRowsShown     a pane's first rows are on screen: the whole-brain reads may start
    LivenessRead       the agents' liveness was read (History): the header's mark
    BrainOpened        a brain was opened or created (the welcome screen): start on it

They are posted to the app itself rather than bubbled from the pane: a message made in the
app's own callback (a confirm's yes asking again) would not bubble back to the app.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

from textual.message import Message

if TYPE_CHECKING:
    from textual.app import App
    from textual.message_pump import MessagePump
    from textual.screen import ModalScreen
    from textual.worker import Worker

    from cleo_tui.brain import Brain
    from cleo_tui.brain.rows import JsonObject
    from cleo_tui.memory.history import Liveness
    from cleo_tui.ui.session import BrainSession


class Host(Protocol):
    """The app as panes and widgets see it (CleoApp implements it)."""

    settings: dict[str, Any]  # the config file's settings (tokenizer, theme, keys…)
    keymap: dict[str, str]  # the user's key remaps in force
    summary: JsonObject | None  # the session's counts (the header watches it)
    sweep: str | None  # CLEO's sweep sentence while its gate is up
    waiting: str | None  # "waiting for CLEO's write lock…" while a write waits
    liveness_mark: str  # the agents' liveness warning for the header

    @property
    def session(self) -> BrainSession:
        """The open brain's session (panes exist only while one is open)."""
        ...

    @property
    def has_session(self) -> bool: ...

    def report_worker_failure(self, worker: Worker[Any]) -> None:
        """A worker's failure as a popup (never a traceback)."""
        ...


def host_of(app: App[Any]) -> Host:
    """`app` seen as the host it is (widgets only ever run inside cleo-tui's app)."""
    return cast(Host, app)


def ask(node: MessagePump, request: Message) -> None:
    """Send `request` up to the app (any thread)."""
    node.app.post_message(request)


@dataclass(eq=False)
class ConfirmRequest(Message):
    """Ask `title`/`body`; `on_yes` runs (on the UI thread) only on an explicit yes, `on_no` on any other
    answer. A danger dialog starts on Cancel and ignores keys for its first moments. `dialog`: a
    confirm dialog of the pane's own (one with an option to tick), asked in place of the plain one."""

    title: str
    body: str
    on_yes: Callable[[], object] = field(repr=False)
    danger: bool = False
    on_no: Callable[[], object] | None = field(default=None, repr=False)
    confirm_label: str = "Yes"
    dialog: ModalScreen[bool] | None = field(default=None, repr=False)


@dataclass(eq=False)
class TellRequest(Message):
    """A dialog the user closes, its text shown literally."""

    title: str
    body: str
    error: bool = False


@dataclass(eq=False)
class OpenObservation(Message):
    """Show one observation's detail over the current pane."""

    observation_id: str


@dataclass(eq=False)
class SwitchPane(Message):
    """Show the pane `name` (a mode of the app)."""

    name: str


@dataclass(eq=False)
class ShowDay(Message):
    """Show the Observations pane filtered to the observations created on `day`."""

    day: str


@dataclass(eq=False)
class OpenBridge(Message):
    """Show what CLEO's memory bridge injects; after `step` evicts `evicting`, when given."""

    evicting: frozenset[str] = frozenset()
    step: str | None = None


@dataclass(eq=False)
class FirstRowsShown(Message):
    """A pane's first rows are on screen: the reads over the whole brain may start."""


@dataclass(eq=False)
class LivenessRead(Message):
    """The agents' liveness was read: the header shows its warnings' mark."""

    liveness: Liveness


@dataclass(eq=False)
class BrainOpened(Message):
    """A brain was opened (or created): the app starts a session on it, in place of any other."""

    brain: Brain
