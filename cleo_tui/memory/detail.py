"""Everything the detail panel shows about one observation, gathered in one call."""

from __future__ import annotations

from dataclasses import dataclass, field

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain import journal
from cleo_tui.brain.migrations import RUNS
from cleo_tui.brain.observations import get_observation
from cleo_tui.brain.records import RECORD_KINDS, edges_of, get_record, record_text
from cleo_tui.brain.rows import EdgeRow, Row
from cleo_tui.brain.store import Brain
from cleo_tui.memory.mapping import REFLECTION_EDGE_TYPES, relevance_overrides


@dataclass
class Reflection:
    node_id: str
    kind: str
    text: str
    exists: bool
    live: bool


@dataclass
class ObservationDetail:
    row: Row  # every column of the observation (they vary with the brain's history)
    override: str | None
    citing: list[Reflection] = field(default_factory=list)
    edges: list[EdgeRow] = field(default_factory=list)
    history: list[journal.Run] = field(default_factory=list)
    missing: frozenset[str] = frozenset()  # edge ends of a known kind that name no row


def missing_nodes(brain: Brain, node_ids: set[str]) -> frozenset[str]:
    """The node ids (`kind:id`, kind one of RECORD_KINDS) whose row does not exist."""
    return frozenset(n for n in node_ids if n.partition(":")[0] in RECORD_KINDS and get_record(brain, n)[1] is None)


def _reflection(brain: Brain, node_id: str) -> Reflection:
    kind, row = get_record(brain, node_id)
    if row is None:
        return Reflection(node_id, kind, "", exists=False, live=False)
    return Reflection(node_id, kind, record_text(kind, row), exists=True, live=row.get("invalid_at") is None)


def observation_detail(brain: Brain, observation_id: str,
                       citing_ids: list[str] | None = None) -> ObservationDetail | None:
    """The row, the reflections citing it, its graph edges and the curation runs that touched it.

    `citing_ids` (from the tags, when known) saves re-reading the citations.
    """
    row = get_observation(brain, observation_id)
    if row is None:
        return None
    node = f"observation:{observation_id}"
    edges = edges_of(brain, node)
    if citing_ids is None:
        citing_ids = sorted({e["from_id"] for e in edges
                             if e["direction"] == "in" and e["edge_type"] in REFLECTION_EDGE_TYPES})
    history: list[journal.Run] = []
    if brain.features.has_table(RUNS):
        with brain.lock:
            history = journal.touching(brain.conn, cs.OBSERVATIONS, {"id": observation_id})
            history += journal.touching(brain.conn, "cleo_tui_relevance_overrides", {"observation_id": observation_id})
        history.sort(key=lambda run: run.id)
    return ObservationDetail(
        row=row,
        override=relevance_overrides(brain).get(observation_id),
        citing=[_reflection(brain, node_id) for node_id in citing_ids],
        edges=edges,
        history=history,
        missing=missing_nodes(brain, {e["from_id"] for e in edges} | {e["to_id"] for e in edges}),
    )
