"""What the Review pane shows, as plain data: no widgets here, so workers can build it.

A proposal becomes a flat list of `ReviewItem`s (notes, or patterns, learnings and
superseded observations), each with an accept/reject mark. Superseded items are
never marked by default: nothing is soft-evicted without an explicit approval.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.project_config import load_project_settings
from cleo_tui.brain.store import Brain
from cleo_tui.llm.proposals import APPLIED, DISCARDED, OBSERVER, Proposal
from cleo_tui.llm.reflector import superseded_details
from cleo_tui.memory.mapping import as_text, reflection_citations
from cleo_tui.safe_text import one_line, plural

NOTE, PATTERN, LEARNING, SUPERSEDED = "note", "pattern", "learning", "superseded"
PRIORITY_MEANING = {1: "architectural decision", 2: "implementation choice", 3: "constraint or bug",
                    4: "routine action", 5: "noise"}


@dataclass(frozen=True)
class ReviewItem:
    """One thing a reviewer accepts or rejects. `key` is unique within its proposal."""

    kind: str
    index: int
    data: dict[str, Any]

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.index}"

    @property
    def summary(self) -> str:
        """The item's text on one line, as the item list shows it."""
        d = self.data
        if self.kind == NOTE:
            return f"p{d.get('priority', '?')} {d.get('date', '')}  {as_text(d.get('observation'))}"
        if self.kind == PATTERN:
            context = as_text(d.get("context"))
            return as_text(d.get("pattern")) + (f" — {context}" if context else "")
        if self.kind == LEARNING:
            return f"{as_text(d.get('insight'))} (confidence {d.get('confidence', '?')})"
        return f"{as_text(d.get('id'))}: {as_text(d.get('reason')) or 'no reason given'}"


def review_items(proposal: Proposal) -> list[ReviewItem]:
    """Notes, or patterns, learnings then superseded observations, in the proposal's order."""
    if proposal.kind == OBSERVER:
        return [ReviewItem(NOTE, i, note) for i, note in enumerate(proposal.notes)]
    return ([ReviewItem(PATTERN, i, p) for i, p in enumerate(proposal.patterns)]
            + [ReviewItem(LEARNING, i, lr) for i, lr in enumerate(proposal.learnings)]
            + [ReviewItem(SUPERSEDED, i, s) for i, s in enumerate(proposal.superseded)])


def initial_marks(proposal: Proposal) -> dict[str, bool]:
    """Marks for a pending proposal (additions accepted, evictions not) or a decided one (its decision)."""
    items = review_items(proposal)
    decision = proposal.decision or {}
    if proposal.status == DISCARDED:
        return {item.key: False for item in items}
    if proposal.status != "pending":  # applied or undone: show what was approved
        chosen = {NOTE: set(decision.get("stored", [])), PATTERN: set(decision.get("accepted_patterns", [])),
                  LEARNING: set(decision.get("accepted_learnings", []))}
        approved = set(decision.get("approved_superseded", []))
        return {item.key: (item.data.get("id") in approved if item.kind == SUPERSEDED
                           else item.index in chosen[item.kind]) for item in items}
    return {item.key: item.kind != SUPERSEDED for item in items}


def chosen(items: list[ReviewItem], marks: dict[str, bool], kind: str) -> list[int]:
    """Indexes of the accepted items of one kind."""
    return [item.index for item in items if item.kind == kind and marks.get(item.key)]


def approved_ids(items: list[ReviewItem], marks: dict[str, bool]) -> list[str]:
    """Superseded observation ids the reviewer approved for soft eviction."""
    return [item.data["id"] for item in items if item.kind == SUPERSEDED and marks.get(item.key)]


def proposal_contents(proposal: Proposal, short: bool = False) -> str:
    """What a proposal holds: `3 notes`, `2 patterns · 1 learning · 3 superseded`

    (or `2 pat · 1 learn · 3 sup`).
    """
    if proposal.kind == OBSERVER:
        return plural(len(proposal.notes), "note")
    counts = (len(proposal.patterns), len(proposal.learnings), len(proposal.superseded))
    if short:
        return " · ".join(f"{n} {name}" for n, name in zip(counts, ("pat", "learn", "sup"), strict=True))
    return f"{plural(counts[0], 'pattern')} · {plural(counts[1], 'learning')} · {counts[2]} superseded"


def decision_text(proposal: Proposal) -> str:
    """The reviewer's decision in a few words (empty while pending)."""
    d = proposal.decision or {}
    if proposal.status == "pending":
        return ""
    if proposal.status == DISCARDED:
        return "discarded"
    if proposal.kind == OBSERVER:
        text = f"stored {len(d.get('stored', []))} of {plural(len(proposal.notes), 'note')}"
    else:
        text = (f"{len(d.get('accepted_patterns', []))} of {plural(len(proposal.patterns), 'pattern')}, "
                f"{len(d.get('accepted_learnings', []))} of {plural(len(proposal.learnings), 'learning')}, "
                f"evicted {len(d.get('evicted', []))} of {len(proposal.superseded)}")
    return text + ("; undone" if proposal.status != APPLIED else "")


@dataclass
class ReviewContext:
    """What a proposal's review needs from the brain, read in a worker.

    `superseded`: observation id → superseded_details entry (row in full, exists, live).
    `citing`: observation id → [(reflection node id, its text)] of live reflections citing it now.
    `titles`: input observation id → title, to label openable source ids.
    """

    proposal_id: int
    superseded: dict[str, dict[str, Any]] = field(default_factory=dict)
    citing: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)
    edges_written: bool = True


def _reflection_texts(brain: Brain, nodes: set[str]) -> dict[str, str]:
    """`pattern:P-1` → its pattern text, and so on for learnings and observer notes."""
    tables = {"pattern": (cs.PATTERNS, "pattern"), "learning": (cs.LEARNINGS, "insight"),
              "observation": (cs.OBSERVATIONS, "title")}
    texts: dict[str, str] = {}
    for node in nodes:
        kind, _, row_id = node.partition(":")
        table, column = tables.get(kind, (None, None))
        if table and column and brain.features.has_column(table, column):
            texts[node] = as_text(brain.scalar(f"SELECT {column} FROM {table} WHERE id = ?", (row_id,)) or "")
    return texts


def load_context(brain: Brain, proposal: Proposal) -> ReviewContext:
    """Read the superseded rows in full and who cites them (call from a worker thread)."""
    context = ReviewContext(proposal.id, titles={row["id"]: as_text(row.get("title")) for row in proposal.input})
    if proposal.kind == OBSERVER:
        return context
    context.superseded = {item["id"]: item for item in superseded_details(brain, proposal)}
    citations = reflection_citations(brain, list(context.superseded))
    texts = _reflection_texts(brain, set().union(*citations.values()) if citations else set())
    context.citing = {oid: sorted((node, texts.get(node, "")) for node in nodes)
                      for oid, nodes in citations.items()}
    context.edges_written = load_project_settings(brain).auto_capture
    return context


def still_covering(observation_id: str, items: list[ReviewItem], marks: dict[str, bool],
                   context: ReviewContext) -> list[str]:
    """The reflections that would cite `observation_id` after applying with these marks.

    Existing citers stay unless they are observer notes this apply would evict too;
    accepted new patterns and learnings cite every approved id (when CLEO's graph is on).
    """
    approved = approved_ids(items, marks)
    evicted = {f"observation:{i}" for i in approved}
    lines = [f"{node}  {one_line(text, 90)}" for node, text in context.citing.get(observation_id, [])
             if node not in evicted]
    if context.edges_written and observation_id in approved:
        for item in items:
            if item.kind in (PATTERN, LEARNING) and marks.get(item.key):
                lines.append(f"new {item.kind} {item.index}  {one_line(item.summary, 90)}")
    return lines


def recent_sessions(brain: Brain, limit: int = 60) -> list[str]:
    """Session ids, the most recently active first, for the scope menu."""
    if not brain.features.has_column(cs.OBSERVATIONS, "source_session_id"):
        return []
    order = "max(created_at) DESC" if brain.features.has_column(cs.OBSERVATIONS, "created_at") else "1"
    rows = brain.query(f"SELECT source_session_id FROM {cs.OBSERVATIONS} WHERE source_session_id IS NOT NULL "
                       f"GROUP BY source_session_id ORDER BY {order} LIMIT ?", (limit,))
    return [as_text(r[0]) for r in rows]
