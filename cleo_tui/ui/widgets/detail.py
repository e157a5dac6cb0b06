"""One observation in full: a reusable view (the Observations pane's lower half) and a modal
that any pane opens with `self.open_observation(id)` (an OpenObservation request to the app)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.geometry import Size
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from cleo_tui.brain.numbers import quality_text
from cleo_tui.memory.detail import ObservationDetail, observation_detail
from cleo_tui.memory.mapping import content_of, derive_relevance
from cleo_tui.safe_text import one_line, plural, printable
from cleo_tui.ui.host import host_of
from cleo_tui.ui.session import BrainSession
from cleo_tui.ui.textual_compat import NoSecondLayout
from cleo_tui.ui.widgets.modals import TextViewer
from cleo_tui.ui.widgets.worker_errors import ForwardWorkerErrors

if TYPE_CHECKING:  # the memory's life is read in workers, after the first screen
    from cleo_tui.memory.history import MemoryLife
    from cleo_tui.memory.tags import ObservationTags

# Longer narratives show their start; `v` opens all of it. The panel wraps and draws all it holds
# each time the cursor moves: onto a row of 20,000 characters or more took 55-72 ms of CPU with the
# cut at 20,000, 28-37 ms with it here (`benchmarks.detail_render`, 80 and 140 columns). 5,000
# characters are more lines than the panel shows at either width.
NARRATIVE_INLINE = 5_000


@dataclass
class DetailWithLife(ObservationDetail):
    """The detail plus the memory's life (how it was written, why it is gone)."""

    life: MemoryLife | None = None


def load_detail(session: BrainSession, observation_id: str) -> ObservationDetail | None:
    """Read one observation's detail and its life (call from a worker thread)."""
    from cleo_tui.memory.history import memory_life
    tag = session.tag(observation_id)
    citing = list(tag.citing) if tag is not None else None
    detail = observation_detail(session.brain, observation_id, citing)
    if detail is None:
        return None
    return DetailWithLife(**vars(detail), life=memory_life(session.brain, observation_id))


def update_static(static: Static, content: str | Text) -> None:
    """Show `content` in `static`, laying the screen out again only when its height changes.

    A layout pass reflows every widget of the screen (and repaints scroll bars); moving
    down the table changes the detail's text but mostly not the height of its parts.
    """
    old = static.content
    if isinstance(old, Text) and isinstance(content, Text):
        same = (old.plain, old.spans, old.style, old.end) == (content.plain, content.spans, content.style, content.end)
    else:
        same = type(old) is type(content) and old == content
    if same:
        return
    width = static.content_size.width
    if not width:  # not laid out yet (or hidden): let the layout measure it
        static.update(content)
        return
    nowhere = Size(0, 0)
    height = static.get_content_height(nowhere, nowhere, width)
    static.update(content, layout=False)
    if static.get_content_height(nowhere, nowhere, width) != height:
        static.refresh(layout=True)


class DetailPart(Static, NoSecondLayout):
    """One part of the detail (meta, narrative, graph …): its height follows its text.

    (Static first: Textual's CSS types follow the first base, and Static's rules apply.)"""


class DetailView(VerticalScroll, NoSecondLayout):
    """Meta and tags with reasons, the narrative, citing reflections (openable), edges, history."""

    def compose(self) -> ComposeResult:
        yield DetailPart(Text("Select an observation to see its detail.", style="italic"), classes="detail-meta")
        yield DetailPart(classes="detail-life")
        yield DetailPart(classes="detail-narrative")
        yield DetailPart(classes="detail-citing-title")
        yield OptionList(classes="detail-citing", compact=True)
        yield DetailPart(classes="detail-graph")

    def on_mount(self) -> None:
        self.detail: ObservationDetail | None = None

    def show(self, detail: ObservationDetail | None, tag: ObservationTags | None,
             none_why: str = "No observation selected.") -> None:
        """Show `detail` with its tags, or (None) `none_why`: why nothing is shown."""
        self.detail = detail
        meta = self.query_one(".detail-meta", Static)
        narrative = self.query_one(".detail-narrative", Static)
        citing_title = self.query_one(".detail-citing-title", Static)
        citing = self.query_one(".detail-citing", OptionList)
        graph = self.query_one(".detail-graph", Static)
        life = self.query_one(".detail-life", Static)
        if citing.option_count:
            citing.clear_options()
        life_text = render_life(detail.life) if isinstance(detail, DetailWithLife) else Text()
        update_static(life, life_text)
        life.display = bool(life_text)  # a live row has none: no blank line
        if detail is None:
            update_static(meta, Text(none_why, style="italic"))
            for widget in (narrative, citing_title, graph):
                update_static(widget, "")
            return
        update_static(meta, render_meta(detail, tag))
        text = content_of(detail.row)
        body = Text(printable(text[:NARRATIVE_INLINE]))
        if len(text) > NARRATIVE_INLINE:
            body.append(f"\n… {len(text) - NARRATIVE_INLINE:,} more characters — press v to read all of it",
                        style="italic")
        update_static(narrative, body)
        update_static(citing_title, Text(f"Cited by {plural(len(detail.citing), 'reflection')}" +
                                         (" — enter opens the highlighted one" if detail.citing else ""),
                                         style="bold"))
        if detail.citing:
            citing.add_options(
                Option(Text(f"{r.node_id}  " + (one_line(r.text, 100) if r.exists else "(no longer exists)")
                            + ("" if r.live or not r.exists else "  [evicted]")), id=str(i))
                for i, r in enumerate(detail.citing))
        update_static(graph, render_graph(detail))

    def enter(self) -> None:
        """Enter on the table: into the citing reflections (the first highlighted, so the next
        enter opens it) when there are any, else into the detail to scroll it."""
        citing = self.query_one(".detail-citing", OptionList)
        if citing.option_count:
            citing.focus()
            if citing.highlighted is None:
                citing.highlighted = 0
        else:
            self.focus()

    @on(OptionList.OptionSelected)
    def open_reflection(self, event: OptionList.OptionSelected) -> None:
        if self.detail is None or event.option.id is None:
            return
        reflection = self.detail.citing[int(event.option.id)]
        body = reflection.text if reflection.exists else "This reflection no longer exists in the brain."
        self.app.push_screen(TextViewer(f"{reflection.node_id} ({reflection.kind})", body))

    def view_full_text(self) -> None:
        if self.detail is not None:
            self.app.push_screen(TextViewer(f"{one_line(self.detail.row['id'])} — narrative",
                                            content_of(self.detail.row)))


class ObservationModal(ForwardWorkerErrors, ModalScreen[None]):
    """The detail of one observation over any pane (from a prune list, a trace result …)."""

    BINDINGS = [Binding("escape,q", "close", "Close"), Binding("v", "view_text", "Full text")]

    @dataclass(eq=False)
    class Loaded(Message):
        detail: ObservationDetail | None
        life: MemoryLife | None = None  # of an id no row holds: where it is still named

    def __init__(self, observation_id: str) -> None:
        super().__init__(classes="modal")
        self.observation_id = observation_id

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label(Text(f"Observation {one_line(self.observation_id, 80)}"), classes="dialog-title")
            yield DetailView(id="modal-detail")
            yield Label("esc closes · v reads the whole narrative", classes="dialog-hint")

    def on_mount(self) -> None:
        self._load()

    @work(thread=True, exit_on_error=False)
    def _load(self) -> None:
        from cleo_tui.memory.history import memory_life
        session = host_of(self.app).session
        detail = load_detail(session, self.observation_id)
        self.post_message(self.Loaded(detail, None if detail else memory_life(session.brain, self.observation_id)))

    def on_observation_modal_loaded(self, message: Loaded) -> None:
        view = self.query_one(DetailView)
        if message.detail is None:
            view.query_one(".detail-meta", Static).update(
                Text(f"{printable(self.observation_id)} is not in this brain (forgotten).", style="bold"))
            life = render_life(message.life)
            view.query_one(".detail-life", Static).update(life)
            view.query_one(".detail-life", Static).display = bool(life)
            return
        view.show(message.detail, host_of(self.app).session.tag(self.observation_id))

    def action_view_text(self) -> None:
        self.query_one(DetailView).view_full_text()

    def action_close(self) -> None:
        self.dismiss(None)


def render_meta(detail: ObservationDetail, tag: ObservationTags | None) -> Text:
    row = detail.row
    text = Text()
    evicted = row.get("invalid_at") is not None
    text.append(one_line(row.get("id")), style="bold")
    text.append(f"  {one_line(row.get('type'))}  ")
    text.append("EVICTED " + one_line(row.get("invalid_at")) if evicted else "live",
                style="bold red" if evicted else "green")
    text.append("\n")
    text.append(one_line(row.get("title")) + "\n", style="bold")
    facts = [("created", row.get("created_at")), ("updated", row.get("updated_at")),
             ("session", row.get("source_session_id")), ("tier", row.get("memory_tier")),
             ("quality", quality_text(row.get("quality_score"))), ("source", row.get("source_type")),
             ("confidence", row.get("source_confidence")), ("agent", row.get("agent"))]
    text.append("  ".join(f"{k} {one_line(v, 40)}" for k, v in facts if v not in (None, "")) + "\n", style="dim")
    relevance, why = derive_relevance(row, detail.override)
    if tag is not None:
        relevance, why = tag.relevance, tag.relevance_reason
    text.append("relevance  ", style="bold")
    text.append(f"{relevance} — {why}\n")
    text.append("coverage   ", style="bold")
    if tag is None:
        text.append("computing…\n", style="italic")
        return text
    text.append(f"{tag.coverage} — cited by {plural(tag.citation_count, 'reflection')}\n")
    text.append("protection ", style="bold")
    if tag.protection_pending:
        text.append("computing… (the detectors are reading every text)\n", style="italic")
        for reason in tag.reasons if tag.protected else ():
            text.append(f"  ◆ {one_line(reason)}\n", style="yellow")
    elif tag.protected:
        text.append("protected, never pruned\n", style="bold yellow")
        for reason in tag.reasons:
            text.append(f"  ◆ {one_line(reason)}\n", style="yellow")
    else:
        text.append("not protected\n")
    return text


def render_graph(detail: ObservationDetail) -> Text:
    """The graph edges (ends that name no row marked) and the history: curation runs, then supersedes."""
    text = Text()
    text.append(f"Graph edges ({len(detail.edges)})\n", style="bold")
    for edge in detail.edges[:100]:
        other = edge["to_id"] if edge["direction"] == "out" else edge["from_id"]
        arrow = "→" if edge["direction"] == "out" else "←"
        text.append(f"  {arrow} {one_line(edge['edge_type'])} {one_line(other, 60)}")
        _mark_missing(text, detail, other)
        text.append(f"  weight {edge.get('weight')}  {one_line(edge.get('provenance') or '')}\n")
    if len(detail.edges) > 100:
        text.append(f"  … {len(detail.edges) - 100} more\n", style="italic")
    supersedes = [e for e in detail.edges if e["edge_type"] == "supersedes" and e["direction"] == "in"]
    text.append(f"History ({len(detail.history) + len(supersedes)})\n", style="bold")
    for run in detail.history:
        undone = f", undone by run {run.undone_by}" if run.undone_by else ""
        text.append(f"  run {run.id} {run.kind} at {run.created_at}: {one_line(run.summary, 80)}{undone}\n")
    for edge in supersedes:
        text.append(f"  superseded by {one_line(edge['from_id'])}")
        _mark_missing(text, detail, edge["from_id"])
        text.append(f" at {one_line(edge.get('created_at'))}\n")
    if not detail.history and not supersedes:
        text.append("  no prune run, supersede or curation has touched it\n", style="dim")
    return text


def _mark_missing(text: Text, detail: ObservationDetail, node_id: str) -> None:
    """Append "(no such observation)" (or pattern …) when the edge end names no row."""
    if node_id in detail.missing:
        text.append(f" (no such {one_line(node_id.partition(':')[0])})", style="italic red")


LIFE_ITEMS = 8  # steps and mentions listed in the detail; `cleo-tui history ID` lists them all


def render_cleo_marks(life: MemoryLife) -> Text:
    """What CLEO's automation will do to the row (its next consolidation, its search), the rule, and the
    keep-in-CLEO step or why it is not offered (memory/cleo_marks.py)."""
    text = Text()
    for mark in life.cleo_marks:
        text.append("CLEO: ", style="bold")
        text.append(one_line(mark.title, 100), style="bold red" if mark.mark == "at-risk" else "bold yellow")
        text.append(f" — {one_line(mark.when, 100)}\n")
        text.append(f"  why: {one_line(mark.reason, 200)}\n")
        text.append(f"  rule: {one_line(mark.rule, 400)}\n", style="dim")
    if life.keep is not None:
        text.append("  keep: " if life.keep.offered else "  keep (no step offered): ", style="bold")
        text.append(one_line(life.keep.text, 600) + "\n")
    return text


def render_life(life: MemoryLife | None) -> Text:
    """The life of a memory that is gone: how it was written, cleo-tui's steps, why it is gone (with evidence);
    for any row, what CLEO's automation will do to it."""
    text = Text()
    if life is not None and life.cleo_marks:
        text.append_text(render_cleo_marks(life))
    if life is None or life.cause is None:
        return text  # a live row: its meta line and History section already say it all
    text.append("Life", style="bold")
    if life.state in ("missing", "forgotten"):
        text.append(f"  {printable(life.id)} is {life.state}: no row holds it", style="bold red")
    text.append("\n")
    w = life.written
    if w is not None:
        facts = [("at", w.at), ("source", w.source_type), ("session", w.session_id), ("agent", w.agent)]
        text.append("  written " + "  ".join(f"{k} {one_line(v, 40)}" for k, v in facts if v) + "\n")
    for step in life.journal[:LIFE_ITEMS]:
        undone = f" (undone by run {step.undone_by})" if step.undone_by else ""
        text.append(f"  cleo-tui run {step.run_id} {one_line(step.kind, 20)} at {one_line(step.at, 24)}: "
                    f"{one_line(step.summary, 70)}{undone}\n")
    if len(life.journal) > LIFE_ITEMS:
        text.append(f"  … {len(life.journal) - LIFE_ITEMS} more cleo-tui steps\n", style="italic")
    cause = life.cause
    if cause is not None:
        text.append("  gone" + (f" at {one_line(cause.at, 24)}" if cause.at else "") + ": ", style="bold")
        text.append(one_line(cause.label, 100) + "\n", style="bold red" if cause.cause == "unknown" else "bold yellow")
        for line in cause.evidence:
            text.append(f"    evidence: {one_line(line, 160)}\n")
        for line in cause.checked:
            text.append(f"    checked: {one_line(line, 160)}\n", style="dim")
    for mention in life.mentions[:LIFE_ITEMS] if life.state in ("missing", "forgotten") else []:
        text.append(f"    named by {mention.where}: {one_line(mention.ref, 120)}"
                    + (f" ({one_line(mention.at, 24)})" if mention.at else "") + "\n")
    return text
