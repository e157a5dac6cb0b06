"""What the brain session announces: to every subscribed pane, and to the app that listens.

Each message is a dataclass (Textual's `Message` supports them through
`__post_init__`). The session delivers a fresh copy to every pane subscribed to it
(`BrainSession.announce`), so a pane handles them with ordinary handlers:

    def on_brain_changed(self, message: BrainChanged) -> None: ...
    def on_tags_ready(self, message: TagsReady) -> None: ...
    def on_tags_progress(self, message: TagsProgress) -> None: ...
    def on_summary_ready(self, message: SummaryReady) -> None: ...
    def on_session_replaced(self, message: SessionReplaced) -> None: ...

They do not bubble: a pane that does not handle one simply ignores it. The session's
other news (`Notice`, `Report`, `LiveState`) goes only to the app, which shows it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from textual.message import Message

ChangeKind = Literal["curation", "undo", "reload", "external"]
CURATION: ChangeKind = "curation"  # cleo-tui wrote (pin, evict, prune, review apply, outcome…)
UNDO: ChangeKind = "undo"  # a curation run was undone
RELOAD: ChangeKind = "reload"  # the user asked to read the brain again
EXTERNAL: ChangeKind = "external"  # another program (CLEO) wrote to the brain file


@dataclass(eq=False)
class SessionMessage(Message, bubble=False):
    """Base of the session's announcements: delivered to each pane, never bubbled."""


@dataclass(eq=False)
class BrainChanged(SessionMessage, bubble=False):
    """The brain's rows changed. Panes re-read what they show (keeping their cursor).

    `kind` says who changed it (see ChangeKind); `what` is a human sentence ("evict O-1");
    `run_id` is the curation run written, when there is one (undoable with u).
    `source` is the pane that made the change, when one did: it may have refreshed already.
    """

    kind: ChangeKind
    what: str = ""
    run_id: int | None = None
    source: str | None = None


@dataclass(eq=False)
class TagsReady(SessionMessage, bubble=False):
    """`session.tags` (coverage, protection, relevance per observation) were (re)computed."""


@dataclass(eq=False)
class TagsProgress(SessionMessage, bubble=False):
    """A whole scan for the tags got further: `session.tags_percent` of the rows read."""


@dataclass(eq=False)
class SummaryReady(SessionMessage, bubble=False):
    """`session.summary` (counts) and `session.overrides` (pins) were (re)read."""


@dataclass(eq=False)
class SessionReplaced(SessionMessage, bubble=False):
    """Another brain was opened: `session` is new. Panes are rebuilt, so few need this."""


# -- the session's other news, for the app that listens (BrainSession.listener) ----------------
@dataclass
class Notice:
    """A short notice for the user (a toast), its text shown literally."""

    Severity = Literal["information", "warning", "error"]

    text: str
    severity: Severity = "information"
    timeout: float | None = None


@dataclass
class Report:
    """A dialog the user closes (a redaction's or an undo's details), its text shown literally."""

    title: str
    body: str
    error: bool = False


@dataclass
class LiveState:
    """The session's `sweep` (CLEO's sweep gate) or `waiting` (for CLEO's write lock) changed."""


@dataclass
class ChosenEnded:
    """A write or an export the user chose (`BrainSession.run_chosen`) ended: done, or `failed`."""

    label: str
    failed: bool


SessionNews = SessionMessage | Notice | Report | LiveState | ChosenEnded


@dataclass
class Written:
    """What a write through `BrainSession.write` did: `what` (a human sentence), its undoable run.

    `notify`: a "Done: …" toast (False when the pane says it itself); `kind` UNDO for an undo."""

    what: str
    run_id: int | None = None
    notify: bool = True
    kind: ChangeKind = CURATION
