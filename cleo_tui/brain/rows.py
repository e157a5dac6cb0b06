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
