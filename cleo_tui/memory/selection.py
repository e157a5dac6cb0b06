"""A selection: the observations one set of filters shows, the same in the Observations pane and the
CLI (`evict|restore|pin|export [filters]`), with a sentence naming it.

State, type, tier, session, search and dates filter in SQL; coverage and protection come from the
tags (`TagTable`), as the pane's filter bar does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.observations import ObservationQuery, iter_observations
from cleo_tui.brain.rows import ObservationListRow, Row
from cleo_tui.brain.store import Brain
from cleo_tui.memory.tags import TagTable, tag_brain
from cleo_tui.safe_text import one_line

COVERAGES = ("uncited", "cited", "reinforced")


@dataclass(frozen=True)
class Selection:
    """Which observations: None (or "all") means no filter on that field."""

    state: str = "live"  # live, evicted or all
    type: str | None = None
    coverage: str | None = None
    protected: bool | None = None
    tier: str | None = None
    session: str | None = None
    search: str = ""
    since: str | None = None
    before: str | None = None
    day: str | None = None  # YYYY-MM-DD: created that day (the History pane's "show this day")
    ids: tuple[str, ...] = ()  # only these observations (the CLI's ids); none: no filter on ids

    @property
    def needs_tags(self) -> bool:
        return self.coverage is not None or self.protected is not None

    def describe(self) -> str:
        """"type diary, before 2026-06-01, live" — what a confirmation names."""
        parts = [f"id{'s' if len(self.ids) > 1 else ''} {', '.join(self.ids)}" if self.ids else "",
                 f"type {self.type}" if self.type else "", f"coverage {self.coverage}" if self.coverage else "",
                 {True: "protected", False: "not protected", None: ""}[self.protected],
                 f"tier {self.tier}" if self.tier else "", f"session {self.session}" if self.session else "",
                 f"search '{self.search}'" if self.search else "", f"since {self.since}" if self.since else "",
                 f"before {self.before}" if self.before else "", f"created {self.day}" if self.day else "",
                 {"live": "live", "evicted": "evicted", "all": "live and evicted"}.get(self.state, self.state)]
        return one_line(", ".join(p for p in parts if p), 300)

    def query(self, tags: TagTable | None) -> ObservationQuery:
        """The SQL-side query, coverage and protection turned into id lists from `tags`."""
        q = ObservationQuery(state=self.state, types=(self.type,) if self.type else (), tier=self.tier,
                             session=self.session, search=self.search, since=self.since, before=self.before,
                             day=self.day, sort="date", descending=True)
        ids_in: set[str] | None = set(self.ids) if self.ids else None
        ids_out: set[str] = set()
        if not self.needs_tags or tags is None:
            return q.with_(ids_in=tuple(sorted(ids_in))) if ids_in is not None else q
        if self.coverage == "uncited":
            ids_out |= {i for c in ("cited", "reinforced") for i in tags.ids_with_coverage(c)}
        elif self.coverage is not None:
            covered = set(tags.ids_with_coverage(self.coverage))
            ids_in = covered if ids_in is None else ids_in & covered
        if self.protected is not None:
            protected = set(tags.protected_ids())
            if self.protected:
                ids_in = protected if ids_in is None else ids_in & protected
            else:
                ids_out |= protected
        if ids_in is not None:
            return q.with_(ids_in=tuple(sorted(ids_in - ids_out)))
        return q.with_(ids_not_in=tuple(sorted(ids_out))) if ids_out else q


def unknown_ids(brain: Brain, ids: Iterable[str]) -> list[str]:
    """Those of `ids` that no observation has, live or evicted (in the order given, each once)."""
    wanted = list(dict.fromkeys(ids))
    found = {row[0] for row in brain.query(f"SELECT id FROM {cs.OBSERVATIONS} WHERE id IN "
                                           "(SELECT value FROM json_each(?))", (json.dumps(wanted),))}
    return [i for i in wanted if i not in found]


def has_id(row: Mapping[str, Any]) -> bool:
    """The row has an id to be written by: CLEO and cleo-tui find a row by its id, so a row whose id
    is NULL or empty can be listed but never evicted, restored or pinned."""
    return row.get("id") not in (None, "")


def selected_rows(brain: Brain, selection: Selection, tags: TagTable | None = None) -> Iterator[ObservationListRow]:
    """Every row the selection shows, newest first, with the listing's columns (tags computed here
    when it needs them: a first look's cannot tell protection)."""
    if selection.needs_tags and (tags is None or (selection.protected is not None and tags.protection_pending)):
        tags = tag_brain(brain)
    return iter_observations(brain, selection.query(tags))


def whole_rows(brain: Brain, rows: Iterable[ObservationListRow], batch: int = 500) -> Iterator[Row]:
    """Every column of each of `rows` (the listing's rows hold some columns, the narrative cut), in order.

    Found by rowid, which every row has (an id may be NULL, or an INTEGER CLEO's history left), and
    kept only while the row there still has the id listed: a row deleted meanwhile is left out."""
    listed: list[tuple[int, Any]] = []

    def read() -> Iterator[Row]:
        rows = brain.query(f"SELECT *, rowid AS _rowid FROM {cs.OBSERVATIONS} "
                           "WHERE rowid IN (SELECT value FROM json_each(?))", (json.dumps([r for r, _ in listed]),))
        names = rows[0].keys() if rows else []
        found = {r["_rowid"]: dict(zip(names, r, strict=True)) for r in rows}
        for rowid, listed_id in listed:
            row = found.get(rowid)
            if row is not None and row["id"] == listed_id:
                yield row

    for row in rows:
        listed.append((row["_rowid"], row["id"]))
        if len(listed) >= batch:
            yield from read()
            listed = []
    if listed:
        yield from read()
