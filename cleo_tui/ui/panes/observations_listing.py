"""What the Observations pane lists: its filters (`Filters`), their query (`query_for`), and the
listing built from them in a worker (`build_listing`; the first one is read ahead by the app)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from cleo_tui.brain.listing import ObservationListing
from cleo_tui.brain.observation_reads import observation_exists
from cleo_tui.brain.observations import ObservationQuery, page_observations
from cleo_tui.brain.rows import Row
from cleo_tui.brain.store import Brain

if TYPE_CHECKING:  # numpy loads with the tags, after the first screen
    from cleo_tui.memory.tags import TagTable

SORTS = [("date", True, "date ↓"), ("date", False, "date ↑"), ("quality", True, "quality ↓"),
         ("coverage", True, "coverage ↓")]
ANY = "any"


@dataclass
class Filters:
    """The filter bar's choices (ANY: no filter on that field)."""

    state: str = "all"
    type: str = ANY
    coverage: str = ANY
    protected: str = ANY
    tier: str = ANY
    session: str = ANY
    search: str = ""
    day: str = ""  # YYYY-MM-DD: only rows created that day (set by the History pane's show_day)
    cleo: str = ANY  # cleo_rules.AT_RISK or HIDDEN: what CLEO's own rules mark (issue 28)


def state_cell(row: Row) -> tuple[str, str]:
    """live / evicted, marked with CLEO's rules: "⚠" CLEO's next consolidation deletes it, "hidden" its search
    never returns it (brain/cleo_rules.py; the detail says why)."""
    evicted = row.get("invalid_at") is not None
    if row.get("cleo_at_risk"):
        return ("⚠" + ("evicted" if evicted else "live"), "table--critical")
    if row.get("cleo_hidden"):
        return ("hidden", "table--high")
    return ("evicted" if evicted else "live", "table--muted" if evicted else "")


def first_listing(brain: Brain) -> ObservationListing:
    """The pane's first listing (no filter, newest first): the app reads it ahead (BrainSession.read_first_rows)."""
    return build_listing(brain, Filters(), 0, None)


def build_listing(brain: Brain, filters: Filters, sort_index: int, tags: TagTable | None) -> ObservationListing:
    """The listing of `filters` in the sort `sort_index`, counted and its first page read (slow: in a worker)."""
    q, lead = query_for(filters, sort_index, tags)  # walks every tag: not on the UI thread
    exact = q.search.strip()
    if exact and observation_exists(brain, exact):
        lead = [exact] + [i for i in (lead or []) if i != exact]  # searching an id shows it first
    if lead:
        # The lead must honour the filters too: keep the ids that match them.
        matching = {r["id"] for r in page_observations(brain, q.with_(ids_in=tuple(lead)), None, len(lead))}
        lead = [i for i in lead if i in matching]
    listing = ObservationListing(brain, q, lead=lead)
    listing.count()
    listing.page(0)
    return listing


def query_for(f: Filters, sort_index: int, tags: TagTable | None) -> tuple[ObservationQuery, list[str] | None]:
    """The SQL-side query of the filters and, for coverage sort, the ids that lead.

    Coverage and protection live in the tags, not in SQL: they become id lists
    (the smaller side: cited or protected ids, or their complement).
    """
    sort, descending, _ = SORTS[sort_index]
    q = ObservationQuery(
        state=f.state, types=() if f.type == ANY else (f.type,),
        tier=None if f.tier == ANY else f.tier, session=None if f.session == ANY else f.session,
        search=f.search, day=f.day or None, sort="date" if sort == "coverage" else sort, descending=descending,
        cleo_mark=None if f.cleo == ANY else f.cleo,
    )
    ids_in: set[str] | None = None
    ids_out: set[str] = set()
    if tags is not None and f.coverage == "uncited":
        ids_out |= {i for c in ("cited", "reinforced") for i in tags.ids_with_coverage(c)}
    elif tags is not None and f.coverage != ANY:
        ids_in = set(tags.ids_with_coverage(f.coverage))
    if tags is not None and not tags.protection_pending and f.protected != ANY:  # (else shown once known)
        protected = set(tags.protected_ids())
        if f.protected == "yes":
            ids_in = protected if ids_in is None else ids_in & protected
        else:
            ids_out |= protected
    if ids_in is not None:
        q = q.with_(ids_in=tuple(sorted(ids_in - ids_out)))
    elif ids_out:
        q = q.with_(ids_not_in=tuple(sorted(ids_out)))
    lead = None
    if sort == "coverage" and tags is not None:
        cited = sorted(((n, i) for i, n in tags.citation_counts().items() if n),
                       key=lambda pair: (-pair[0], pair[1]))
        lead = [i for _, i in cited]
    return q, lead
