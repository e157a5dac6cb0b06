"""What the brain session announces to every open pane.

Each message is a dataclass (Textual's `Message` supports them through
`__post_init__`). The app delivers a fresh copy to every registered pane screen
(`CleoApp.announce`), so a pane handles them with ordinary handlers:

    def on_brain_changed(self, message: BrainChanged) -> None: ...
    def on_tags_ready(self, message: TagsReady) -> None: ...
    def on_summary_ready(self, message: SummaryReady) -> None: ...
    def on_session_replaced(self, message: SessionReplaced) -> None: ...

They do not bubble: a pane that does not handle one simply ignores it.
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
class SummaryReady(SessionMessage, bubble=False):
    """`session.summary` (counts) and `session.overrides` (pins) were (re)read."""


@dataclass(eq=False)
class SessionReplaced(SessionMessage, bubble=False):
    """Another brain was opened: `session` is new. Panes are rebuilt, so few need this."""
