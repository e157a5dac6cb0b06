"""Deciding on a proposal in the Review pane: marks kept with it, approve all, apply (asking again
about protected rows), discard, undo; the confirmations' texts.

`ReviewDecisions` is the Review pane's base (panes/review.py): the proposals, their items and the
recall impact are the pane's; every write goes through the session's one write path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual import work

from cleo_tui.brain import Brain
from cleo_tui.brain.errors import BrainError, ReadOnlyBrain
from cleo_tui.llm import proposals as proposal_store
from cleo_tui.llm.observer import store_marked_notes
from cleo_tui.llm.proposals import APPLIED, OBSERVER, PENDING, Proposal, discard_proposal, undo_proposal
from cleo_tui.llm.reflector import ProtectedEviction, Protection, apply_marked_reflection, merge_targets
from cleo_tui.llm.review_reads import (
    LEARNING,
    NOTE,
    PATTERN,
    SUPERSEDED,
    ReviewItem,
    approved_ids,
    chosen,
    decision_text,
    proposal_contents,
)
from cleo_tui.memory.cleo_effects import EVICTION_IN_CLEO
from cleo_tui.recall.impact import RecallImpact
from cleo_tui.safe_text import one_line, plural
from cleo_tui.ui.messages import Written
from cleo_tui.ui.widgets.chrome import PaneScreen
from cleo_tui.ui.widgets.table import LineTable


def apply_body(p: Proposal, patterns: list[int], learnings: list[int],
               merges: tuple[dict[int, str], dict[int, str]], evict: list[str], guarded: int) -> str:
    """The apply confirmation: what is stored new, what merges into which stored row, what is evicted."""
    merged_patterns, merged_learnings = merges
    new_patterns = len(patterns) - len(merged_patterns)
    new_learnings = len(learnings) - len(merged_learnings)
    parts = []
    if new_patterns or new_learnings or not (merged_patterns or merged_learnings):
        parts.append(f"store {plural(new_patterns, 'new pattern')} and {plural(new_learnings, 'new learning')}")
    if merged_patterns:
        parts.append("merge into " + ", ".join(f"{one_line(i, 40)} (its frequency + 1)"
                                               for i in merged_patterns.values()))
    if merged_learnings:
        parts.append("merge into " + ", ".join(f"{one_line(i, 40)} (the higher confidence kept)"
                                               for i in merged_learnings.values()))
    body = f"Apply proposal {p.id} ({len(patterns)} of {plural(len(p.patterns), 'pattern')}, {len(learnings)} of " \
           f"{plural(len(p.learnings), 'learning')} accepted): " + "; ".join(parts)
    body += (f"; soft-evict {plural(len(evict), 'observation')}: {one_line(', '.join(evict), 300)}" if evict
             else "; evict nothing")
    keep = len(p.superseded) - len(evict)
    body += f"; keep {keep} proposed for eviction live." if keep else "."
    if guarded:
        body += f"\n\n{guarded} of them {'is' if guarded == 1 else 'are'} protected; you will be asked about " \
                f"{'it' if guarded == 1 else 'them'} a second time."
    body += "\n\nu undoes it."
    if evict:
        body += f"\n\n{EVICTION_IN_CLEO}"
    return body


def undo_proposal_question(proposal_id: int, decision: str) -> str:
    """The undo dialog's question: what an undo of an applied proposal does (the rows come back
    marked as updated now, so CLEO sees the change)."""
    return (f"Undo proposal {proposal_id} ({decision})? What it stored is removed and what it evicted is live "
            "again, marked as updated now so CLEO sees the change.")


class ReviewDecisions(PaneScreen):
    """The Review pane's decisions on the selected proposal; the pane (ReviewScreen) provides the rest."""

    current: Proposal | None
    items: list[ReviewItem]
    marks: dict[str, bool]
    notice: str
    recall_problem: str | None
    _unsaved_marks: dict[int, dict[str, bool]]

    # -- what the pane provides -------------------------------------------------------------
    @property
    def item_table(self) -> LineTable:
        raise NotImplementedError

    def current_item(self) -> ReviewItem | None:
        raise NotImplementedError

    def protection(self, item: ReviewItem) -> Protection | None:
        raise NotImplementedError

    def recall_impact(self, evict: list[str]) -> RecallImpact | None:
        raise NotImplementedError

    def reload(self, select_id: int | None = None, keep_cursor: bool = False) -> None:
        raise NotImplementedError

    def show_item(self) -> None:
        raise NotImplementedError

    def update_status(self) -> None:
        raise NotImplementedError

    # -- deciding ---------------------------------------------------------------------
    def _pending(self, done: str) -> Proposal | None:
        """The selected proposal when it is pending; else say why nothing can be `done` to it."""
        p = self.current
        if p is None:
            self.notify("No proposal is selected.", severity="warning")
            return None
        if p.status != PENDING:
            self.notify(f"Proposal {p.id} is {p.status}; only a pending proposal can be {done} "
                        "— its decision is shown as it was made.", severity="warning")
            return None
        return p

    def action_toggle_item(self) -> None:
        item = self.current_item()
        if item is None or self._pending("decided on") is None:
            return
        self.set_mark(item, not self.marks.get(item.key, False))

    def set_mark(self, item: ReviewItem, value: bool) -> None:
        """Mark one item, kept with the proposal in the brain (in memory only on a read-only brain)."""
        self._keep_mark(item.key, value)
        self._show_marks()

    def _show_marks(self) -> None:
        """The item list, the current item and the status line again, after marks changed."""
        self.item_table.redraw()
        self.show_item()
        self.update_status()

    def action_approve_all(self) -> None:
        p = self._pending("approved")
        if p is None:
            return
        if p.kind == OBSERVER:
            self._mark_all()
            return
        count = len(p.superseded)
        self.confirm(
            "Approve everything?",
            f"Accept all {plural(len(p.patterns), 'pattern')} and {plural(len(p.learnings), 'learning')}, and approve "
            f"soft-evicting all {plural(count, 'superseded observation')} of proposal {p.id}?\n\n"
            "Nothing is written yet: s applies, and asks again. Look at each superseded observation first "
            "if you have not.",
            self._mark_all, danger=count > 0)

    def _keep_mark(self, key: str, value: bool) -> None:
        self.marks[key] = value
        proposal = self.current
        if proposal is None:
            return
        try:
            proposal_store.set_mark(self.session.brain, proposal.id, key, value)
        except ReadOnlyBrain:
            self._unsaved_marks.setdefault(proposal.id, {})[key] = value
        except BrainError as exc:  # CLEO sweeping, a lock, a decided proposal: the mark is not kept
            self._unsaved_marks.setdefault(proposal.id, {})[key] = value
            self.notify(f"The mark could not be kept in the brain: {exc}", severity="warning", markup=False)

    def _mark_all(self) -> None:
        for item in self.items:
            self._keep_mark(item.key, True)
        self._show_marks()

    def action_apply_proposal(self) -> None:
        p = self._pending("applied")
        if p is None:
            return
        if p.kind == OBSERVER:
            notes = chosen(self.items, self.marks, NOTE)
            if not notes:
                self.notify("No note is accepted: space accepts one, d discards the proposal.", severity="warning")
                return
            self.confirm(
                "Store observer notes",
                f"Store {len(notes)} of {plural(len(p.notes), 'note')} of proposal {p.id} as observations "
                "(observer-compressed, with supersedes edges to their sources)? The sources stay live. "
                "u undoes it.",
                lambda: self._write(lambda b: store_marked_notes(b, p.id),
                                    f"stored {plural(len(notes), 'note')} of proposal {p.id}", p.id))
            return
        patterns, learnings = chosen(self.items, self.marks, PATTERN), chosen(self.items, self.marks, LEARNING)
        evict = approved_ids(self.items, self.marks)
        if not (patterns or learnings or evict):
            self.notify("Nothing is accepted: space accepts an item, d discards the proposal.", severity="warning")
            return
        guarded = [item for item in self.items if item.kind == SUPERSEDED and self.marks.get(item.key)
                   and self.protection(item) is not None]
        if evict:
            impact = self.recall_impact(evict)
            if impact is None and self.recall_problem is None:
                self.notify("The recorded recalls are still being read; apply in a moment.", severity="warning")
                return
            recall = impact.confirmation() if impact else f"unavailable: {self.recall_problem}"
        else:
            recall = None
        self._ask_apply(p, patterns, learnings, evict, len(guarded), recall)

    @work(thread=True, exclusive=True, group="review-ask", exit_on_error=False)
    def _ask_apply(self, p: Proposal, patterns: list[int], learnings: list[int], evict: list[str],
                   guarded: int, recall: str | None) -> None:
        """Which accepted items merge into stored rows (a read), then the apply confirmation."""
        merges = merge_targets(self.session.brain, p, patterns, learnings)
        body = apply_body(p, patterns, learnings, merges, evict, guarded)
        if recall is not None:
            body += f"\n\nRecall impact: {recall}"
        self.confirm("Apply reflection", body,
                                  lambda: self._apply_reflection(p.id, []), danger=bool(evict))

    def _apply_reflection(self, proposal_id: int, confirmed: list[str]) -> None:
        """Apply exactly the proposal's kept marks; protected rows only once confirmed a second time."""
        def step(brain: Brain) -> ProtectedEviction | None:
            try:
                apply_marked_reflection(brain, proposal_id, confirm_protected=confirmed)
            except ProtectedEviction as exc:  # nothing was written: ask about those rows
                return exc
            return None

        def done(refused: ProtectedEviction | None) -> Written | None:
            if refused is not None:
                self._ask_protected(proposal_id, refused.refused)
                return None
            return self._written(f"applied proposal {proposal_id}", proposal_id)

        self.session.write(f"apply proposal {proposal_id}", step, done, source=self.PANE, group="review-write")

    def _ask_protected(self, proposal_id: int, refused: dict[str, Protection]) -> None:
        """Applying would evict protected rows: ask a second time before it does."""
        named = "\n".join(f"• {one_line(oid, 60)}: {one_line('; '.join(p.reasons), 200)}"
                          for oid, p in refused.items())
        confirmed = list(refused)
        self.confirm(
            "Evict protected observations?",
            f"Proposal {proposal_id} would also soft-evict {plural(len(confirmed), 'protected observation')}:\n"
            f"{named}\n\nProtected rows are kept by the pruner for these reasons. Evict them anyway? "
            "(No writes nothing at all; reject them with space and apply again to keep them.)",
            lambda: self._apply_reflection(proposal_id, confirmed), danger=True)

    def action_discard_proposal(self) -> None:
        p = self._pending("discarded")
        if p is None:
            return
        self.confirm("Discard proposal", f"Discard proposal {p.id} ({proposal_contents(p)})? Nothing in the "
                         "brain changes; it stays listed as discarded.",
                         lambda: self._write(lambda b: discard_proposal(b, p.id), f"discarded proposal {p.id}",
                                             p.id))

    def action_undo_proposal(self) -> None:
        p = self.current
        if p is None or p.status != APPLIED:
            self.notify("Select an applied proposal to undo it.", severity="warning")
            return
        self.confirm("Undo proposal", undo_proposal_question(p.id, decision_text(p)),
                         lambda: self._write(lambda b: undo_proposal(b, p.id), f"undid proposal {p.id}", p.id))

    def _write(self, write: Callable[[Any], Any], what: str, select_id: int) -> None:
        self.session.write(what, write, lambda _: self._written(what, select_id), source=self.PANE,
                           group="review-write")

    def _written(self, what: str, select_id: int) -> Written:
        """A write of this pane's is done: show it here; the others read again (no toast: the notice says it)."""
        self.notice = what
        self.current = None  # reread: its status and decision changed
        self.reload(select_id=select_id)
        return Written(what, None, notify=False)
