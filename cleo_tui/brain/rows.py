"""The shapes of rows that cross module boundaries: one leaf module every layer may import.

Two kinds of shape live here:

- `Row` and `JsonObject`, named aliases of `dict[str, Any]` for rows whose columns vary (a
  `SELECT *` over a table whose columns depend on the brain's history, a listing page the
  table widget reads generically) and for JSON objects a command prints or a file holds.
- TypedDicts for rows with a known set of columns. Value types are what CLEO's schema
  declares; SQLite does not enforce them, so a hostile brain may hold other values, which is
  why the readers pass values through `safe_text` rather than trusting their type.

This module imports nothing of cleo-tui, so any module may use it without a cycle.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

Row = dict[str, Any]  # a row as SQLite returned it, by column name (columns vary with the brain)
JsonObject = dict[str, Any]  # one JSON object, as a command prints it or an export file holds it

# Where an observation stands, as a filter asks for it (brain/observations.STATES).
ObservationState = Literal["live", "evicted", "all"]
# A graph edge as `records.edges_of` reads it: leaving the node or arriving at it.
EdgeDirection = Literal["out", "in"]


class ObservationListRow(TypedDict):
    """One observation with the listing's columns (brain/observations.LIST_COLUMNS and what the
    listing computes), as `iter_observations` and `memory.selection.selected_rows` yield it.

    Every key is present: a column the brain lacks reads as NULL. The table widget's pages
    (`page_observations`) hold the same columns but travel as `Row`, the shape it reads generically.
    """

    id: str
    created_at: str | None
    type: str | None
    title: str | None
    quality_score: float | None
    memory_tier: str | None
    source_type: str | None
    source_confidence: str | None
    source_session_id: str | None
    invalid_at: str | None
    updated_at: str | None
    citation_count: int | None
    memory_type: str | None
    agent: str | None
    narrative_preview: str | None  # the narrative's first NARRATIVE_PREVIEW characters
    narrative_length: int | None
    cleo_at_risk: int | None  # CLEO's marks (brain/cleo_rules.py): 1, 0 or NULL
    cleo_flagged: int | None
    cleo_hidden: int | None
    _rowid: int


class EdgeRow(TypedDict):
    """One row of brain_page_edges with its `direction` from the node asked about.

    from_id, to_id and edge_type are in every layout of the table; the rest depend on
    the brain's history, so they may be absent.
    """

    from_id: str
    to_id: str
    edge_type: str
    direction: EdgeDirection
    weight: NotRequired[float | None]
    provenance: NotRequired[str | None]
    created_at: NotRequired[str | None]
    last_reinforced_at: NotRequired[str | None]
    reinforcement_count: NotRequired[int | None]
    plasticity_class: NotRequired[str | None]
    last_depressed_at: NotRequired[str | None]
    depression_count: NotRequired[int | None]
    stability_score: NotRequired[float | None]
