"""Candidate memories for a query, each with a raw BM25 relevance (higher is better).

Observations come from CLEO's FTS5 table `brain_observations_fts`. Patterns,
learnings and a hippo store's memories have no FTS table cleo-tui can rely
on, so their live rows containing a query word (SQL LIKE) are copied into a
temporary in-memory FTS5 table and scored there with the same BM25;
observations fall back to that path when the brain's FTS table is missing
or unreadable. A query without a word (only punctuation) is matched as plain
text instead (`instr`). The brain itself is only ever read.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.numbers import finite_int_or_none, finite_or_none
from cleo_tui.brain.store import Brain
from cleo_tui.memory.mapping import as_text, content_of

MAX_TERMS = 16
LIKE_PATTERN_LIMIT = 50_000  # bytes: SQLite's SQLITE_MAX_LIKE_PATTERN_LENGTH ("pattern too complex")
LIKE_SCAN_LIMIT = 5000  # rows copied into the in-memory index per table, newest first
TEXT_LIMIT = 4000       # characters of a memory's text used for scoring and similarity

_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Candidate:
    """One memory that matched the query, with what the rerank stages need."""

    memory_id: str
    kind: str               # observation, pattern, learning
    title: str
    text: str
    created_at: str | None
    quality_score: float | None
    memory_tier: str | None
    citation_count: int
    relevance: float        # −bm25: higher is a better match
    term_share: float       # share of the query's words found in the memory's words (as prefixes)


@dataclass(frozen=True)
class Source:
    """A table searched through the in-memory index.

    Its text columns, date column, the column that is set once a row is
    evicted, and the column read as its quality (0..1).
    """

    kind: str
    table: str
    text_columns: tuple[str, ...]
    date_column: str
    evicted_column: str = "invalid_at"
    quality_column: str = "quality_score"


PATTERNS = Source("pattern", cs.PATTERNS, ("pattern", "context"), "extracted_at")
LEARNINGS = Source("learning", cs.LEARNINGS, ("insight", "application"), "created_at")
OBSERVATIONS_SCAN = Source("observation", cs.OBSERVATIONS, ("title", "narrative"), "created_at")
# A hippo store's memories: superseded ones are its evicted ones; strength stands in for quality.
HIPPO_MEMORIES = Source("hippo", "memories", ("content",), "created", "superseded_by", "strength")


def query_terms(query: str) -> list[str]:
    """The distinct lower-cased words of a query (at most 16); one-letter words only if alone."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))
    longer = [w for w in words if len(w) > 1]
    return (longer or words)[:MAX_TERMS]


def match_expression(terms: list[str]) -> str:
    """An FTS5 query matching any of `terms` as a prefix; quoting keeps operators literal."""
    return " OR ".join('"' + t.replace('"', '""') + '"*' for t in terms)


def _column(brain: Brain, table: str, column: str, alias: str | None = None) -> str:
    name = alias or column
    return f'"{column}" AS "{name}"' if brain.features.has_column(table, column) else f'NULL AS "{name}"'


def _live(brain: Brain, table: str, prefix: str = "", column: str = "invalid_at") -> str:
    return f"{prefix}{column} IS NULL" if brain.features.has_column(table, column) else "1"


def term_share(text: str, terms: list[str]) -> float:
    """Share of `terms` that begin at least one word of `text` (FTS5's prefix match, roughly)."""
    if not terms:
        return 0.0
    words = {w.lower() for w in _WORD.findall(text)}
    return sum(1 for t in terms if any(w.startswith(t) for w in words)) / len(terms)


def _candidate(kind: str, row: sqlite3.Row, text: str, title: str, relevance: float,
               terms: list[str], share: float | None = None) -> Candidate:
    text = text[:TEXT_LIMIT]
    return Candidate(
        memory_id=as_text(row["id"]), kind=kind, title=title, text=text,
        created_at=None if row["created_at"] is None else as_text(row["created_at"]),
        quality_score=finite_or_none(row["quality_score"]),
        memory_tier=None if row["memory_tier"] is None else as_text(row["memory_tier"]),
        citation_count=finite_int_or_none(row["citation_count"]) or 0, relevance=relevance,
        term_share=term_share(f"{title}\n{text}", terms) if share is None else share,
    )


def _shared_columns(brain: Brain, source: Source) -> str:
    """Quality, tier, citation count and date under their brain names, NULL where absent."""
    table = source.table
    parts = [_column(brain, table, source.quality_column, "quality_score"),
             _column(brain, table, "memory_tier"), _column(brain, table, "citation_count"),
             _column(brain, table, source.date_column, "created_at")]
    return ", ".join(parts)


def search_observations_fts(brain: Brain, terms: list[str], limit: int) -> list[Candidate]:
    """Live observations matching any term, best BM25 first, from CLEO's FTS5 table."""
    fts = cs.OBSERVATIONS_FTS
    have = brain.features.columns(cs.OBSERVATIONS)
    narrative = f"substr(o.narrative, 1, {TEXT_LIMIT})" if "narrative" in have else "NULL"
    select = ", ".join(
        f'o."{c}" AS "{c}"' if c in have else f'NULL AS "{c}"'
        for c in ("id", "title", "quality_score", "memory_tier", "citation_count"))
    date = 'o."created_at"' if "created_at" in have else "NULL"
    sql = (f"SELECT {select}, {narrative} AS narrative, {date} AS created_at, -{fts}.rank AS relevance "
           f"FROM {fts} JOIN {cs.OBSERVATIONS} o ON o.rowid = {fts}.rowid "
           f"WHERE {fts} MATCH ? AND {_live(brain, cs.OBSERVATIONS, 'o.')} ORDER BY {fts}.rank LIMIT ?")
    out = []
    for row in brain.query(sql, (match_expression(terms), limit)):
        text = content_of({"narrative": row["narrative"], "title": row["title"]})
        out.append(_candidate("observation", row, text, as_text(row["title"]) or text,
                              finite_or_none(row["relevance"]) or 0.0,
                              terms))
    return out


def _ascii_lower(text: str) -> str:
    """`text` with only A-Z folded, as SQLite's lower() and LIKE fold."""
    return text.translate(_ASCII_LOWER)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _like_rows(brain: Brain, source: Source, terms: list[str]) -> list[sqlite3.Row]:
    """Live rows of `source` whose text holds at least one term (newest first, capped)."""
    columns = [c for c in source.text_columns if brain.features.has_column(source.table, c)]
    if not columns or not brain.features.has_column(source.table, "id"):
        return []
    likes, params = [], []
    for term in terms:
        pattern = "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        if len(pattern.encode("utf-8", "surrogatepass")) > LIKE_PATTERN_LIMIT:
            # SQLite refuses a longer LIKE pattern; instr on lower() matches the same (LIKE folds ASCII only)
            for col in columns:
                likes.append(f"instr(lower(\"{col}\"), ?) > 0")
                params.append(_ascii_lower(term))
            continue
        for col in columns:
            likes.append(f"\"{col}\" LIKE ? ESCAPE '\\'")
            params.append(pattern)
    texts = ", ".join(f'substr("{c}", 1, {TEXT_LIMIT}) AS "{c}"' for c in columns)
    live = _live(brain, source.table, column=source.evicted_column)
    sql = (f'SELECT "id" AS id, {texts}, {_shared_columns(brain, source)} FROM "{source.table}" '
           f'WHERE {live} AND ({" OR ".join(likes)}) ORDER BY rowid DESC LIMIT {LIKE_SCAN_LIMIT}')
    return brain.query(sql, params)


def _source_text(source: Source, row: sqlite3.Row) -> tuple[str, str]:
    """(title, text) of a row of `source`."""
    if source.kind == "observation":
        text = content_of({k: row[k] if k in row.keys() else None for k in ("narrative", "title")})
        title = as_text(row["title"]) if "title" in row.keys() else ""
        return title or text, text
    parts = [as_text(row[c]) for c in source.text_columns if c in row.keys() and row[c]]
    return (parts[0] if parts else ""), "\n".join(parts)


def bm25_in_memory(texts: list[str], terms: list[str]) -> dict[int, float]:
    """−bm25 of each text that matches, keyed by its index, from a throwaway FTS5 table."""
    scratch = sqlite3.connect(":memory:")
    try:
        scratch.execute("CREATE VIRTUAL TABLE doc USING fts5(body)")
        scratch.executemany("INSERT INTO doc(rowid, body) VALUES (?, ?)",
                            ((i + 1, t) for i, t in enumerate(texts)))
        rows = scratch.execute("SELECT rowid, -rank FROM doc WHERE doc MATCH ?", (match_expression(terms),))
        return {rowid - 1: finite_or_none(score) or 0.0 for rowid, score in rows}
    finally:
        scratch.close()


def search_scanned(brain: Brain, source: Source, terms: list[str]) -> list[Candidate]:
    """Live rows of a table without a usable FTS index, scored by in-memory BM25."""
    if not brain.features.has_table(source.table):
        return []
    rows = _like_rows(brain, source, terms)
    titled = [_source_text(source, row) for row in rows]
    scores = bm25_in_memory([text for _, text in titled], terms)
    return [_candidate(source.kind, rows[i], titled[i][1], titled[i][0], score, terms)
            for i, score in scores.items()]


def _literal_rows(brain: Brain, source: Source, literal: str) -> list[sqlite3.Row]:
    """Live rows of `source` whose text contains `literal` as typed (newest first, capped)."""
    columns = [c for c in source.text_columns if brain.features.has_column(source.table, c)]
    if not columns or not brain.features.has_column(source.table, "id"):
        return []
    texts = ", ".join(f'substr("{c}", 1, {TEXT_LIMIT}) AS "{c}"' for c in columns)
    found = " OR ".join(f'instr(CAST("{c}" AS TEXT), ?) > 0' for c in columns)
    live = _live(brain, source.table, column=source.evicted_column)
    sql = (f'SELECT "id" AS id, {texts}, {_shared_columns(brain, source)} FROM "{source.table}" '
           f'WHERE {live} AND ({found}) ORDER BY rowid DESC LIMIT {LIKE_SCAN_LIMIT}')
    return brain.query(sql, [literal] * len(columns))


def search_literal(brain: Brain, source: Source, literal: str) -> list[Candidate]:
    """Live rows holding `literal` (a query FTS has no word for, such as `-` or `'`).

    Relevance is how often the text holds it; every match holds the whole
    query, so its share of the query's words is 1.
    """
    if not brain.features.has_table(source.table):
        return []
    out = []
    for row in _literal_rows(brain, source, literal):
        title, text = _source_text(source, row)
        out.append(_candidate(source.kind, row, text, title, float(max(1, f"{title}\n{text}".count(literal))),
                              [], share=1.0))
    return out


def find_literal(brain: Brain, literal: str, pool: int) -> list[Candidate]:
    """Every source's rows holding `literal`: at most `pool` observations (most occurrences first)."""
    found = sorted(search_literal(brain, OBSERVATIONS_SCAN, literal), key=lambda c: -c.relevance)[:pool]
    for source in (PATTERNS, LEARNINGS, HIPPO_MEMORIES):
        found += search_literal(brain, source, literal)
    return found


def find_candidates(brain: Brain, query: str, pool: int) -> list[Candidate]:
    """Every source's candidates for `query`: at most `pool` observations, all matching others.

    In a hippo store (no brain tables) its live memories are the candidates. A
    query with no word for FTS (only punctuation, e.g. `-`, `*`, `'`) falls back
    to a plain text match of the query as typed (trimmed); a blank query finds nothing.
    """
    terms = query_terms(query)
    if not terms:
        literal = query.strip()
        return find_literal(brain, literal, pool) if literal else []
    found: list[Candidate] = []
    if brain.features.has_table(cs.OBSERVATIONS):
        if brain.features.fts:
            found += search_observations_fts(brain, terms, pool)
        else:
            found += sorted(search_scanned(brain, OBSERVATIONS_SCAN, terms),
                            key=lambda c: -c.relevance)[:pool]
    found += search_scanned(brain, PATTERNS, terms)
    found += search_scanned(brain, LEARNINGS, terms)
    found += search_scanned(brain, HIPPO_MEMORIES, terms)
    return found
