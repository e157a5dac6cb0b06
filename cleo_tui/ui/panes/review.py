"""The Review pane: run the observer or reflector by hand, then approve what they propose.

Asking the model only creates a pending proposal (a row in the brain); nothing
else is written until the reviewer stores notes or applies a reflection, and
then only the items marked accepted. Superseded observations start unapproved:
nothing is soft-evicted without an explicit approval. Every apply is undoable.
All database and LLM work runs in thread workers that post messages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Button, Input, OptionList, ProgressBar, Static
from textual.widgets.option_list import Option

from cleo_tui.brain.errors import BrainError
from cleo_tui.brain.rows import Row
from cleo_tui.llm import proposals as proposal_store
from cleo_tui.llm import results as r
from cleo_tui.llm.observer import propose_observer_notes
from cleo_tui.llm.proposals import (
    APPLIED,
    OBSERVER,
    PENDING,
    REFLECTOR,
    Proposal,
    list_proposals,
)
from cleo_tui.llm.providers import CancelToken
from cleo_tui.llm.reflector import (
    Protection,
    propose_reflection,
)
from cleo_tui.llm.resolve import PROVIDERS, describe_provider
from cleo_tui.llm.review_reads import (
    SUPERSEDED,
    ReviewContext,
    ReviewItem,
    approved_ids,
    initial_marks,
    load_context,
    proposal_contents,
    recent_sessions,
    review_items,
)
from cleo_tui.recall.impact import RecallImpact, RecallIndex
from cleo_tui.safe_text import one_line
from cleo_tui.ui.help import REVIEW_HELP
from cleo_tui.ui.messages import BrainChanged
from cleo_tui.ui.panes.review_decide import ReviewDecisions
from cleo_tui.ui.widgets.choice_chip import ChoiceChip
from cleo_tui.ui.widgets.inputs import SafeInput
from cleo_tui.ui.widgets.list_listing import ListListing
from cleo_tui.ui.widgets.modals import TextViewer
from cleo_tui.ui.widgets.review_render import MARK_TEXT, describe_item, head_text, problem_text, provider_text
from cleo_tui.ui.widgets.table import Column, LineTable

ALL_SCOPE = "\x00recent"   # the scope chip's value for "no session: the recent window"
AUTO = "\x00auto"          # the provider chip's value for "resolve from config and environment"

PROPOSAL_COLUMNS = [
    Column("id", "#", 3, right=True),
    Column("kind", "kind", 9, min_width=8),
    Column("status", "status", 9, min_width=7),
    Column("what", "proposed", None),
]
ITEM_COLUMNS = [
    Column("mark", "decision", 9),
    Column("kind", "kind", 12),
    Column("text", "proposed", None),
]
STATUS_STYLE = {PENDING: "table--high", APPLIED: "table--cited"}
WRITE_ACTIONS = {"run_llm", "approve_all", "apply_proposal", "discard_proposal", "undo_proposal"}


class ReviewScreen(ReviewDecisions):
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]  # app.tcss lays 80×24 out with -narrow
    PANE = "review"
    PANE_HELP = REVIEW_HELP
    WRITE_ACTIONS = WRITE_ACTIONS
    FOOTER_FIRST = ("run_llm", "toggle_item", "apply_proposal", "approve_all", "undo_proposal")
    ITEM_ACTIONS = frozenset({"toggle_item", "approve_all", "apply_proposal", "discard_proposal", "undo_proposal",
                              "open_source"})  # they act on the selected proposal
    BINDINGS = [
        Binding("r", "run_llm", "Run", id="review.run", tooltip="Ask the chosen model (observer or reflector)"),
        Binding("escape", "cancel_run", "Cancel", id="review.cancel", tooltip="Cancel the call under way"),
        Binding("space", "toggle_item", "Accept/reject", id="review.toggle",
                tooltip="Accept or reject the selected item (double-click does it too)"),
        Binding("a", "approve_all", "Approve all", id="review.approve_all",
                tooltip="Accept every item, superseded observations included (asks first)"),
        Binding("s", "apply_proposal", "Store/apply", id="review.apply",
                tooltip="Write the accepted items (asks first)"),
        Binding("d", "discard_proposal", "Discard", id="review.discard", tooltip="Set the pending proposal aside"),
        Binding("u", "undo_proposal", "Undo", id="review.undo", tooltip="Undo an applied proposal"),
        Binding("v", "raw_answer", "Raw answer", id="review.raw", tooltip="The model's answer exactly as it came"),
        Binding("o", "open_source", "Open obs.", id="review.open", tooltip="Open the observations behind the item"),
        Binding("t", "toggle_kind", "Observer/Reflector", id="review.kind", show=False),
    ]

    @dataclass(eq=False)
    class ProposalsLoaded(Message):
        proposals: list[Proposal]
        select_id: int | None

    @dataclass(eq=False)
    class ContextLoaded(Message):
        context: ReviewContext

    @dataclass(eq=False)
    class RunFinished(Message):
        outcome: r.ProposeOutcome | None

    @dataclass(eq=False)
    class ProviderDescribed(Message):
        described: dict[str, Any] | None
        error: str = ""

    @dataclass(eq=False)
    class SessionsLoaded(Message):
        sessions: list[str]

    @dataclass(eq=False)
    class RecallsLoaded(Message):
        index: RecallIndex | None
        problem: str | None = None

    def __init__(self) -> None:
        super().__init__(id="pane-review")
        self.proposals: list[Proposal] = []
        self.current: Proposal | None = None
        self.items: list[ReviewItem] = []
        self.marks: dict[str, bool] = {}
        self._unsaved_marks: dict[int, dict[str, bool]] = {}  # a read-only brain keeps marks only here
        self.context: ReviewContext | None = None
        self.cancel_token: CancelToken | None = None
        self.problem: r.Problem | None = None
        self.described: dict[str, Any] | None = None
        self.notice = ""
        self._open_ids: list[str] = []
        self.recall_index: RecallIndex | None = None  # every recorded retrieval, for the recall impact
        self.recall_problem: str | None = None  # they could not be read

    # -- layout -------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield from self.compose_chrome_top()
        with Horizontal(id="review-controls"):
            yield ChoiceChip([("Observer", OBSERVER), ("Reflector", REFLECTOR)], id="review-kind",
                             tooltip="Which one to run (t)")
            yield ChoiceChip([("recent window", ALL_SCOPE)], id="review-scope",
                             tooltip="A CLEO session, or the recent window")
            yield ChoiceChip([("auto provider", AUTO)] + [(p, p) for p in PROVIDERS], id="review-provider",
                             tooltip="LLM provider")
            yield SafeInput(placeholder="model (default)", id="review-model", compact=True,
                        tooltip="Model name; empty: CLEO_OBSERVER_MODEL, config, built-in default")
            yield SafeInput(placeholder="threshold", id="review-threshold", restrict=r"[0-9]*", max_length=7,
                            compact=True,
                        tooltip="Observer: run at this many uncompressed observations (empty: config)")
            yield Button("Run (r)", id="review-run", compact=True, variant="primary")
            yield Button("Cancel (esc)", id="review-cancel", compact=True, disabled=True)
        yield Static(id="review-provider-line")
        with Horizontal(id="review-status-row"):
            yield ProgressBar(total=None, show_eta=False, show_percentage=False, id="review-progress")
            yield Static(id="review-status")
        with Horizontal(id="review-main"):
            with Vertical(id="review-left"):
                yield Static(Text("Proposals (newest first)", style="bold"), classes="review-title")
                yield LineTable(PROPOSAL_COLUMNS, self.format_proposal, id="review-proposals")
            with Vertical(id="review-right"):
                yield Static(id="review-head")
                yield LineTable(ITEM_COLUMNS, self.format_item, id="review-items")
                with Horizontal(id="review-buttons"):
                    yield Button("✓ Accept", id="review-accept", compact=True)
                    yield Button("✗ Reject", id="review-reject", compact=True)
                    yield Button("All (a)", id="review-approve-all", compact=True)
                    yield Button("Apply (s)", id="review-apply", compact=True, variant="primary")
                    yield Button("Discard (d)", id="review-discard", compact=True)
                    yield Button("Undo (u)", id="review-undo", compact=True)
                    yield Button("Raw (v)", id="review-raw", compact=True)
                with Horizontal(id="review-detail"):
                    with VerticalScroll(id="review-detail-main"):
                        yield Static(id="review-item-text")
                    with VerticalScroll(id="review-detail-side"):
                        yield Static(id="review-item-side")
                        yield OptionList(id="review-open", compact=True)
        yield from self.compose_footer()

    def on_mount(self) -> None:
        self.query_one("#review-progress").display = False
        self.query_one("#review-proposals", LineTable).focus()
        self.update_status()
        self.load_sessions()
        self.describe()
        self.reload()

    @property
    def proposal_table(self) -> LineTable:
        return self.query_one("#review-proposals", LineTable)

    @property
    def item_table(self) -> LineTable:
        return self.query_one("#review-items", LineTable)

    @property
    def running(self) -> bool:
        return self.cancel_token is not None

    @property
    def read_only(self) -> bool:
        return self.session.brain is not None and self.session.brain.read_only

    # -- rows ---------------------------------------------------------------------------
    def format_proposal(self, row: Row) -> dict[str, tuple[str, str]]:
        p: Proposal = row["proposal"]
        return {
            "id": (str(p.id), ""),
            "kind": (p.kind, ""),
            "status": (p.status, STATUS_STYLE.get(p.status, "table--muted")),
            "what": (proposal_contents(p, short=True), ""),
        }

    def format_item(self, row: Row) -> dict[str, tuple[str, str]]:
        item: ReviewItem = row["item"]
        on_text, off_text = MARK_TEXT[item.kind]
        marked = self.marks.get(item.key, False)
        style = ("table--critical" if item.kind == SUPERSEDED else "table--cited") if marked else "table--muted"
        summary = item.summary
        recalled = self.recall_index.recalls_of(str(item.data.get("id"))) \
            if item.kind == SUPERSEDED and self.recall_index is not None else None
        if recalled is not None and recalled.recalls:  # how often recorded retrievals returned it
            summary = f"recalled {recalled.text(compact=True)} · {summary}"
        text = (summary, "")
        guard = self.protection(item)
        if guard is not None:
            text = (f"PROTECTED ({'; '.join(guard.reasons)}) · {summary}", "table--protected")
        return {"mark": (on_text if marked else off_text, style), "kind": (f"{item.kind} {item.index}", ""),
                "text": text}

    def protection(self, item: ReviewItem) -> Protection | None:
        """The protection of a superseded item's row, once the context is read (None: not protected)."""
        if item.kind != SUPERSEDED or self.context is None:
            return None
        found = self.context.superseded.get(str(item.data.get("id")))
        if not found or not found.get("protected"):
            return None
        return Protection(True, tuple(found.get("reasons") or ()))

    # -- loading ------------------------------------------------------------------------
    def reload(self, select_id: int | None = None, keep_cursor: bool = False) -> None:
        """Read the proposals again; select `select_id`, else keep the current one, else the first pending."""
        if select_id is None and keep_cursor and self.current is not None:
            select_id = self.current.id
        self._load_proposals(select_id)
        self._load_recalls()

    @work(thread=True, exclusive=True, group="review-recalls", exit_on_error=False)
    def _load_recalls(self) -> None:
        self.post_message(self.RecallsLoaded(*RecallIndex.load_or_problem(self.session.brain)))

    def on_review_screen_recalls_loaded(self, message: RecallsLoaded) -> None:
        self.recall_index, self.recall_problem = message.index, message.problem
        self.item_table.redraw()  # superseded rows say how often they were recalled
        self.update_status()

    def recall_impact(self, evict: list[str]) -> RecallImpact | None:
        """The recall impact of soft-evicting the approved superseded rows (None until the retrievals are read)."""
        return None if self.recall_index is None else self.recall_index.impact(evict)

    @work(thread=True, exclusive=True, group="review-list", exit_on_error=False)
    def _load_proposals(self, select_id: int | None) -> None:
        self.post_message(self.ProposalsLoaded(list_proposals(self.session.brain), select_id))

    def on_review_screen_proposals_loaded(self, message: ProposalsLoaded) -> None:
        self.proposals = message.proposals
        index = next((i for i, p in enumerate(self.proposals) if p.id == message.select_id), None)
        if index is None:
            index = next((i for i, p in enumerate(self.proposals) if p.status == PENDING), 0)
        listing = ListListing(self.proposals, lambda i, p: {"id": str(p.id), "proposal": p})
        table = self.proposal_table
        table.set_listing(listing)
        self.query_one("#review-left").display = bool(self.proposals)  # (none yet: the explanation alone)
        if self.proposals:
            table.cursor = index
        else:
            self.show_proposal(None)
        self.update_status()

    @work(thread=True, exclusive=True, group="review-sessions", exit_on_error=False)
    def load_sessions(self) -> None:
        self.post_message(self.SessionsLoaded(recent_sessions(self.session.brain)))

    def on_review_screen_sessions_loaded(self, message: SessionsLoaded) -> None:
        scope = self.query_one("#review-scope", ChoiceChip)
        scope.set_choices([("recent window", ALL_SCOPE)] + [(s, s) for s in message.sessions])
        scope.value = ALL_SCOPE

    def on_line_table_highlighted(self, event: LineTable.Highlighted) -> None:
        """LineTable messages carry no `control`, so the two tables are told apart here."""
        if event.table.id == "review-items":
            self.show_item()
            return
        proposal = event.row["proposal"] if event.row else None
        if proposal is not self.current:
            self.show_proposal(proposal)

    def on_line_table_selected(self, event: LineTable.Selected) -> None:
        """Enter or a double click: on an item accepts/rejects it; on a proposal moves to its items."""
        if event.table.id == "review-items":
            self.action_toggle_item()
        else:
            self.item_table.focus()

    def show_proposal(self, proposal: Proposal | None) -> None:
        """Show a proposal's items with their marks; its brain context loads in a worker."""
        same = (proposal is not None and self.current is not None and proposal.id == self.current.id
                and proposal.status == self.current.status)
        self.current = proposal
        self.context = None
        self.items = review_items(proposal) if proposal else []
        if not same:  # a reread of the proposal under review keeps the reviewer's marks
            self.marks = self.read_marks(proposal) if proposal else {}
        self.item_table.set_listing(ListListing(self.items, lambda i, item: {"id": item.key, "item": item}),
                                    keep_cursor=same)
        self.query_one("#review-head", Static).update(head_text(proposal, self.read_only))
        self.show_item_parts(proposal is not None, "#review-items", "#review-buttons", "#review-detail")
        if proposal is not None:
            self._load_context(proposal)
        self.show_item()
        self.update_status()

    def read_marks(self, proposal: Proposal) -> dict[str, bool]:
        """The proposal's marks as kept in the brain (and, read-only, those kept in memory)."""
        if proposal.status != PENDING:
            return initial_marks(proposal)
        try:
            current = proposal_store.marks(self.session.brain, proposal.id)
        except BrainError:  # gone meanwhile: show the defaults; any write will say what is wrong
            current = initial_marks(proposal)
        current.update(self._unsaved_marks.get(proposal.id, {}))
        return current

    @work(thread=True, exclusive=True, group="review-context", exit_on_error=False)
    def _load_context(self, proposal: Proposal) -> None:
        self.post_message(self.ContextLoaded(load_context(self.session.brain, proposal)))

    def on_review_screen_context_loaded(self, message: ContextLoaded) -> None:
        if self.current is not None and message.context.proposal_id == self.current.id:
            self.context = message.context
            self.item_table.redraw()  # protection marks appear beside superseded rows
            self.show_item()

    # -- the selected item ----------------------------------------------------------------
    def current_item(self) -> ReviewItem | None:
        row = self.item_table.current_row()
        return row["item"] if row else None

    def show_item(self) -> None:
        """The highlighted item in full (left) beside what to open and what still covers it (right)."""
        item = self.current_item()
        main = self.query_one("#review-item-text", Static)
        side = self.query_one("#review-item-side", Static)
        options = self.query_one("#review-open", OptionList)
        options.clear_options()
        self._open_ids = []
        if item is None:
            main.update(Text("Nothing to review." if self.current else "", style="italic"))
            side.update("")
            return
        body, aside, openable = describe_item(item, self.items, self.marks, self.context)
        main.update(body)
        side.update(aside)
        self._open_ids = [oid for oid, _ in openable]
        options.add_options([Option(Text(one_line(f"{oid}  {label}", 200))) for oid, label in openable])

    @on(OptionList.OptionSelected, "#review-open")
    def open_selected(self, event: OptionList.OptionSelected) -> None:
        if 0 <= event.option_index < len(self._open_ids):
            self.open_observation(self._open_ids[event.option_index])

    # -- provider, model, scope ---------------------------------------------------------
    def choice(self) -> tuple[str, str | None, str | None, str | None, int | None]:
        """(kind, session, provider, model, threshold) as chosen in the controls."""
        kind = self.query_one("#review-kind", ChoiceChip).value
        scope = self.query_one("#review-scope", ChoiceChip).value
        provider = self.query_one("#review-provider", ChoiceChip).value
        model = self.query_one("#review-model", Input).value.strip() or None
        threshold = self.query_one("#review-threshold", Input).value.strip()
        return (str(kind), None if scope in (ALL_SCOPE, None) else scope,
                None if provider in (AUTO, None) else provider, model,
                int(threshold) if threshold.isdigit() and int(threshold) > 0 else None)

    @on(ChoiceChip.Changed, "#review-provider")
    @on(Input.Changed, "#review-model")
    def provider_changed(self) -> None:
        self.describe()

    @on(ChoiceChip.Changed, "#review-kind")
    def kind_changed(self) -> None:
        self.query_one("#review-threshold", Input).disabled = self.choice()[0] != OBSERVER

    def describe(self) -> None:
        _, _, provider, model, _ = self.choice()
        self._describe(provider, model)

    @work(thread=True, exclusive=True, group="review-provider", exit_on_error=False)
    def _describe(self, provider: str | None, model: str | None) -> None:
        try:
            self.post_message(self.ProviderDescribed(describe_provider(self.session.brain, provider, model)))
        except Exception as exc:  # a bad config value: say so on the line instead of a popup per keypress
            self.post_message(self.ProviderDescribed(None, one_line(str(exc), 200)))

    def on_review_screen_provider_described(self, message: ProviderDescribed) -> None:
        self.described = message.described
        line = self.query_one("#review-provider-line", Static)
        line.update(provider_text(message.described) if message.described else Text(message.error, style="red"))

    def action_toggle_kind(self) -> None:
        chip = self.query_one("#review-kind", ChoiceChip)
        chip.value = REFLECTOR if chip.value == OBSERVER else OBSERVER

    # -- running ----------------------------------------------------------------------
    def action_run_llm(self) -> None:
        if self.running:
            self.notify("A call is under way; esc cancels it.", severity="warning")
            return
        kind, session, provider, model, threshold = self.choice()
        self.cancel_token = CancelToken()
        self.problem = None
        self.notice = f"asking {self.described.get('label', 'the model') if self.described else 'the model'} " \
                      f"({kind}, {session or 'recent window'})… esc cancels"
        self._set_running(True)
        self._run(kind, session, provider, model, threshold, self.cancel_token)

    @work(thread=True, exclusive=True, group="review-run", exit_on_error=False)
    def _run(self, kind: str, session: str | None, provider: str | None, model: str | None,
             threshold: int | None, token: CancelToken) -> None:
        outcome = None
        try:
            if kind == OBSERVER:
                outcome = propose_observer_notes(self.session.brain, session, threshold, provider, model, cancel=token)
            else:
                outcome = propose_reflection(self.session.brain, session, provider, model, cancel=token)
        finally:  # the pane must leave its running state even when the worker fails
            self.post_message(self.RunFinished(outcome))

    def on_review_screen_run_finished(self, message: RunFinished) -> None:
        self.cancel_token = None
        self._set_running(False)
        outcome = message.outcome
        if outcome is None:
            self.notice = "the run failed (see the message)"
        elif outcome.proposal is not None:
            self.problem = None
            self.notice = f"proposal {outcome.proposal.id} is ready for review"
            self.reload(select_id=outcome.proposal.id)
        else:
            self.problem = outcome.problem
            self.notice = ""
            self.refresh_bindings()  # (v shows an unusable answer)
        self.update_status()

    def _set_running(self, running: bool) -> None:
        self.query_one("#review-progress").display = running
        self.query_one("#review-cancel", Button).disabled = not running
        self.query_one("#review-run", Button).disabled = running or self.read_only
        self.refresh_bindings()
        self.update_status()

    def action_cancel_run(self) -> None:
        if self.cancel_token is not None:
            self.cancel_token.cancel()
            self.notice = "cancelling…"
            self.update_status()

    def on_brain_changed(self, message: BrainChanged) -> None:
        """Another pane wrote (an eviction may make a proposal stale): reread the proposals."""
        if message.source != self.PANE:  # this pane's own writes reload it already
            self.reload(keep_cursor=True)

    # -- looking closer -------------------------------------------------------------------
    def _unusable_answer(self) -> str | None:
        """The last run's answer that made no proposal, when it came back (v shows it)."""
        return (self.problem.details.get("raw_text") or None) if self.problem is not None else None

    def action_raw_answer(self) -> None:
        unusable = self._unusable_answer()
        if unusable is not None:
            self.app.push_screen(TextViewer("The model's unusable answer", unusable))
        elif self.current is not None:
            self.app.push_screen(TextViewer(f"Raw answer of proposal {self.current.id} "
                                            f"({one_line(self.current.model)})", self.current.raw_response or ""))
        else:
            self.notify("No answer to show yet.", severity="warning")

    def action_open_source(self) -> None:
        if not self._open_ids:
            self.notify("This item names no observation.", severity="warning")
        elif len(self._open_ids) == 1:
            self.open_observation(self._open_ids[0])
        else:
            options = self.query_one("#review-open", OptionList)
            options.highlighted = 0
            options.focus()

    @on(Button.Pressed)
    def button_pressed(self, event: Button.Pressed) -> None:
        actions = {"review-run": "run_llm", "review-cancel": "cancel_run", "review-approve-all": "approve_all",
                   "review-apply": "apply_proposal", "review-discard": "discard_proposal",
                   "review-undo": "undo_proposal",
                   "review-raw": "raw_answer"}
        button = event.button.id or ""
        item = self.current_item()
        if button in ("review-accept", "review-reject"):
            if item is not None and self._pending("decided on") is not None:
                self.set_mark(item, button == "review-accept")
        elif button in actions and self.check_action(actions[button], ()):
            self.call_later(self.run_action, actions[button])

    # -- state ------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_run":
            return self.running
        if action == "raw_answer" and self.current is None and self._unusable_answer() is None:
            return False
        return super().check_action(action, parameters)

    def update_status(self) -> None:
        """One line: what is happening, or why nothing ran, or what the keys do (or why they are off)."""
        if self.problem is not None and not self.running:
            text = problem_text(self.problem)
        else:
            text = Text(self.notice + " · " if self.notice else "")
            if self.current is not None and self.current.status == PENDING and not self.running:
                evict = approved_ids(self.items, self.marks)
                text.append(f"{sum(self.marks.values())} of {len(self.items)} accepted, {len(evict)} to evict")
                impact = self.recall_impact(evict) if evict else None
                if impact is not None:
                    text.append(f" ({impact.short()})")
                if not self.read_only:
                    text.append(" · space accept/reject · a all · s store/apply · d discard · "
                                "nothing is written before s")
            elif not self.running and not self.read_only:
                text.append("r runs the chosen one; pending proposals stay until you decide")
        if self.read_only:
            text.append(f" · read-only ({self.session.brain.read_only_reason}): running, storing, applying, "
                        "discarding and undoing are disabled", style="bold")
        self.query_one("#review-status", Static).update(text)
        for button in ("review-run", "review-approve-all", "review-apply", "review-discard", "review-undo"):
            self.query_one(f"#{button}", Button).disabled = self.read_only or (button == "review-run" and self.running)
