"""Reflection edges, the citations they make (observation id → the live reflections citing it),
and the identifiers held by live patterns and learnings; read again only where they changed.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.store import Brain
from cleo_tui.memory import detectors, mapping
from cleo_tui.memory import packed_strings as packed
from cleo_tui.memory.pool_scan.containers import AppendedList
from cleo_tui.memory.pool_scan.reading import plain_text

REFLECTION_TEXT = ((cs.PATTERNS, "pattern || ' ' || coalesce(context, '')"), (cs.LEARNINGS, "insight"))


@dataclass
class EdgeSet:
    """The reflection edges of a brain as read: each edge's observation id and reflection node id,
    in two lists (a tuple per edge costs 56 bytes: 16 MB at 300,000 edges)."""

    observations: Sequence[str]  # packed when they fit
    sources: Sequence[str]       # (a few thousand reflections: their strings are shared)
    high_water: int  # largest edge rowid read
    count: int       # edges of a reflection type then
    live: frozenset[str] = frozenset()  # the live reflections the citations were judged on

    def __len__(self) -> int:
        return len(self.observations)

    def pairs(self) -> Iterator[tuple[str, str]]:
        """(observation id, reflection node id) of each edge, in the order read."""
        return zip(self.observations, self.sources, strict=True)

    def plus(self, added: list[tuple[str, str]]) -> tuple[Sequence[str], Sequence[str]]:
        """These edges' two columns with `added` pairs after them (self is left unchanged; neither
        column is copied as a list of objects)."""
        if not added:
            return self.observations, self.sources
        return (packed.appended(self.observations, [o for o, _ in added]),
                AppendedList.of(self.sources, [s for _, s in added]))


def split_pairs(pairs: list[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """The observation ids and the reflection node ids of the pairs, as two lists."""
    return [o for o, _ in pairs], [s for _, s in pairs]


def edge_stats(brain: Brain) -> tuple[int, int]:
    """(reflection edges, the largest edge rowid of any type): the rowid's max is read from the
    table's b-tree at once; edges above it are read with the type filter anyway."""
    types = ",".join(f"'{t}'" for t in mapping.REFLECTION_EDGE_TYPES)
    row = brain.query_one(f"SELECT (SELECT count(*) FROM {cs.EDGES} WHERE edge_type IN ({types})), "
                          f"(SELECT coalesce(max(rowid), 0) FROM {cs.EDGES})")
    return (int(row[0]), int(row[1])) if row is not None else (0, 0)


def read_edges(brain: Brain, since: int, sources: Collection[str] | None = None,
                upto: int | None = None) -> list[tuple[str, str]]:
    """(observation id, reflection node id) of the reflection edges above rowid `since` (and at
    most `upto`), or only those from `sources`."""
    types = ",".join(f"'{t}'" for t in mapping.REFLECTION_EDGE_TYPES)
    sql = (f"SELECT substr(to_id, 13), from_id FROM {cs.EDGES} WHERE edge_type IN ({types}) "
           f"AND to_id LIKE 'observation:%' AND rowid > ?")
    params: list[Any] = [since]
    if upto is not None:
        sql += " AND rowid <= ?"
        params.append(upto)
    if sources is not None:
        sql += " AND from_id IN (SELECT value FROM json_each(?))"
        params.append(json.dumps(list(sources)))
    return plain_rows(brain, sql, params)


def plain_rows(brain: Brain, sql: str, params: Sequence[Any] = ()) -> list[Any]:
    """The rows as plain tuples, text decoded in C (leniently in Python only if some is invalid UTF-8)."""
    for strict in (True, False):
        with brain.lock, plain_text(brain.conn, strict):
            cursor = brain.conn.cursor()
            cursor.row_factory = None
            try:
                return cursor.execute(sql, params).fetchall()
            except sqlite3.OperationalError as exc:
                if not strict or "decode" not in str(exc).lower():
                    raise
            finally:
                cursor.close()
    raise AssertionError("unreachable")


def live_reflections(brain: Brain, notes: Collection[str]) -> set[str]:
    """Node ids of live patterns, live learnings and the live observer notes given (the scan's)."""

    def live(table: str) -> str:
        return "invalid_at IS NULL" if brain.features.has_column(table, "invalid_at") else "1"

    sources = [f"SELECT '{prefix}' || id FROM {table} WHERE {live(table)}"
               for table, prefix in ((cs.PATTERNS, "pattern:"), (cs.LEARNINGS, "learning:"))
               if brain.features.has_table(table)]
    reflections = set(notes)
    if sources:
        reflections.update(r[0] for r in brain.query(" UNION ALL ".join(sources)))
    return reflections


def read_citations(brain: Brain, notes: Collection[str], previous: EdgeSet | None,
               previous_cited: dict[str, Collection[str]] | None = None, judged: bool = True
               ) -> tuple[dict[str, Collection[str]], EdgeSet | None, set[str] | None]:
    """mapping.reflection_citations, reading only the edges added since `previous` when edges
    were only added (the liveness of patterns and learnings is read again: a few thousand
    rows; the live observer notes `notes` come from the scan).

    With `previous_cited` (the citations judged on `previous`), only what changed is
    judged again: the new edges, and the old ones whose reflection was evicted or
    arrived. The third value is then the observation ids whose citations may have
    changed (None: any may have).

    Without `judged`, a first read that keeps its edges leaves the citations empty: for a scan
    saved to be loaded elsewhere (`load_snapshot` judges them from the edges it stored).
    """
    if not brain.supports("graph_edges"):
        return {}, None, None
    try:
        count, high = edge_stats(brain)
        added: list[tuple[str, str]] | None = None
        if previous is not None and high >= previous.high_water and count >= previous.count:
            added = read_edges(brain, previous.high_water)
            observations, sources = previous.plus(added)
        else:
            observations, sources = split_pairs(read_edges(brain, 0))
    except sqlite3.OperationalError:  # no rowid to read by: read them all, as recall does
        return dict(mapping.reflection_citations(brain)), None, None
    if len(observations) != count:
        if previous is not None:  # edges were deleted and added: read all again
            return read_citations(brain, notes, None)
        return cited_by(zip(observations, sources, strict=True), live_reflections(brain, notes)), None, None
    live = frozenset(live_reflections(brain, notes))
    if added is None or previous is None or previous_cited is None:
        cited = cited_by(zip(observations, sources, strict=True), live) if judged else {}  # (before packing)
        return cited, EdgeSet(packed.pack(observations), sources, high, count, live), None
    cited, touched = cited_since(brain, previous_cited, previous, added, live)
    return cited, EdgeSet(observations, sources, high, count, live), touched


def cited_by(pairs: Iterable[tuple[str, str]], live: Collection[str]) -> dict[str, Collection[str]]:
    """Observation id → the live reflections citing it (a note citing itself does not count),
    each as a tuple: a set per cited row costs 160 bytes more (35 MB at a million rows).

    A row's tuple grows by one source at a time while it is short (most rows have one to three
    citers): half the CPU of a set per row turned into a tuple (0.22 against 0.43 s for 295,000
    edges); a row cited more than `_FEW` times gathers the rest in a set, so no row costs a square."""
    cited: dict[str, Collection[str]] = {}
    many: dict[str, set[str]] = {}  # (the rows cited more than _FEW times, while read)
    get = cited.get
    for obs_id, source in pairs:
        # (`endswith` first: no string is built for the usual pattern or learning)
        if source not in live or (source.endswith(obs_id) and source == f"observation:{obs_id}"):
            continue
        have = get(obs_id)
        if have is None:
            cited[obs_id] = (source,)
        elif obs_id in many:
            many[obs_id].add(source)
        elif source not in have:
            if len(have) < _FEW:
                cited[obs_id] = (*have, source)
            else:
                many[obs_id] = {*have, source}
    for obs_id, sources in many.items():
        cited[obs_id] = tuple(sources)
    return cited


_FEW = 8


def cited_since(brain: Brain, before: dict[str, Collection[str]], previous: EdgeSet,
                 added: list[tuple[str, str]], live: frozenset[str]) -> tuple[dict[str, Collection[str]], set[str]]:
    """`cited_by(previous.pairs() + added, live)` from `before` (`cited_by(previous.pairs(),
    previous.live)`), judging only what changed; `before` and its sets are left as they were."""
    gone, came = previous.live - live, live - previous.live
    cited = dict(before)
    changing: dict[str, set[str]] = {}  # the touched rows' citations, as sets while they change

    def own(obs_id: str) -> set[str]:  # copied from `before` on first change
        sources = changing.get(obs_id)
        if sources is None:
            sources = changing[obs_id] = set(cited.get(obs_id, ()))
        return sources

    if gone or came:  # the old edges of those reflections, read again by their source (indexed)
        for obs_id, source in read_edges(brain, 0, gone | came, previous.high_water):
            if source in gone:
                own(obs_id).discard(source)
            elif source in came and source != f"observation:{obs_id}":
                own(obs_id).add(source)
    for obs_id, source in added:
        if source in live and source != f"observation:{obs_id}":
            own(obs_id).add(source)
    for obs_id, sources in changing.items():
        if sources:
            cited[obs_id] = tuple(sources)
        else:
            cited.pop(obs_id, None)
    return cited, set(changing)




def live_reflection_texts(brain: Brain) -> list[str]:
    """Texts of live patterns and learnings (observer notes are observations already)."""
    texts = []
    for table, expression in REFLECTION_TEXT:
        if not brain.features.has_table(table):
            continue
        live = "invalid_at IS NULL" if brain.features.has_column(table, "invalid_at") else "1"
        try:
            texts += [r[0] if type(r[0]) is str else mapping.as_text(r[0])
                      for r in plain_rows(brain, f"SELECT {expression} FROM {table} WHERE {live}")]
        except sqlite3.OperationalError:  # an older layout without these columns: nothing to compare with
            continue
    return texts


def reflection_counts_of(brain: Brain, known: dict[str, frozenset[str]]
                       ) -> tuple[Counter[str], dict[str, frozenset[str]]]:
    """Identifier → live patterns and learnings holding it, and each text's identifiers
    (`known`: those of an earlier read, so only new or edited texts are analysed again)."""
    texts = live_reflection_texts(brain)
    fresh = [t for t in dict.fromkeys(texts) if t not in known]
    found = dict(zip(fresh, map(frozenset, detectors.identifiers_of(fresh)), strict=True))
    identifiers = {t: known[t] if t in known else found[t] for t in texts}
    return Counter(itertools.chain.from_iterable(identifiers[t] for t in texts)), identifiers


