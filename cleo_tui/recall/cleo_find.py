"""CLEO's `cleo memory find`, reproduced: the same FTS5 queries, filters, fusion and limit.

What CLEO does (packages/core/src/memory, v2026.8.9), restated:

- `searchBrainCompact` (retrieval/search.ts) answers `memory find`. An empty or blank query
  returns nothing. The limit defaults to 10. Without `--agent` it takes the rank-fusion path
  (logged as `find-rrf`); with `--agent` (or `useRRF` off) the plain FTS path (logged `find`).
- `buildFts5Queries` (brain-search.ts) splits the trimmed query on whitespace, strips leading
  and trailing non-word characters (JavaScript's ASCII `\\W`) from each piece, drops pieces
  shorter than two characters, de-duplicates case-insensitively and writes each as a quoted
  prefix term `"tok"*`; the AND form joins them with AND, the OR form with OR. No term left:
  the MATCH expression is `""`, which matches nothing.
- `searchWithFts5` runs, per table (decisions, patterns, learnings, observations), one
  statement: the table's FTS5 index MATCH the expression, joined to the table by rowid,
  `quality_score IS NULL OR quality_score >= 0.3`, `ORDER BY bm25(...) LIMIT n`, first with
  the AND form and, when that finds nothing in this table and there are two terms or more,
  with the OR form (`matchConjunctiveFirst`). A statement that fails (an FTS syntax error)
  falls back to a LIKE `%query%` search of that table ordered by date (frequency for
  patterns, confidence for learnings). **Nothing filters `invalid_at`.**
- `hybridSearch` asks each table for 3×(2×limit) rows, interleaves the four lists round-robin
  (a decision, a pattern, a learning, an observation, the second of each, …), adds vector hits
  (only with `brain.embedding.enabled` and sqlite-vec: off by default) and graph neighbours of
  the nodes `concept:<query>`, `task:<query>`, `doc:<query>`, fuses them with reciprocal rank
  fusion (score Σ 1/(60 + rank), a stable sort) and keeps 2×limit. `searchBrainCompact` keeps
  only ids that a second FTS search (3×limit a table) returned — graph node ids never pass —
  and cuts to the limit.
- `ensureFts5Tables` creates the four FTS tables and their triggers when missing, and the
  first search of a process rebuilds them from their tables: CLEO always searches an index
  that matches the rows. Here a missing or out-of-date index is rebuilt in memory instead
  (the brain is never written), and the result says so.

Here each table's FTS index is ranked once per MATCH expression (rowids by bm25, read lazily)
and the rows CLEO's join and quality filter would drop are skipped by rowid: the same order as
CLEO's statement (ties stay in rowid order either way), for every limit. Ids to leave out (rows a
step would hide or evict) are skipped the same way, so the order among the rows that stay is CLEO's.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Literal

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.store import Brain
from cleo_tui.memory.mapping import as_text

DEFAULT_LIMIT = 10  # searchBrainCompact: `limit ?? 10`
QUALITY_THRESHOLD = 0.3  # QUALITY_SCORE_THRESHOLD in quality-scoring.ts
RRF_K = 60
FindPath = Literal["rrf", "fts"]

# JavaScript's `\s` (and what String.prototype.trim removes): not Python's, which adds \x1c-\x1f.
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_JS_SPLIT = re.compile(f"[{_JS_SPACE}]+")
_EDGE_NON_WORD = re.compile(r"^\W+|\W+\Z", re.ASCII)  # JavaScript's \W is ASCII-only


@dataclass(frozen=True)
class FtsQueries:
    """The AND and OR MATCH expressions CLEO builds for a query, and how many terms it kept."""

    conjunctive: str
    disjunctive: str
    terms: int


def js_trim(text: str) -> str:
    """`text.trim()` as JavaScript does it."""
    return text.strip(_JS_SPACE.replace("\u2000-\u200a", "".join(chr(c) for c in range(0x2000, 0x200B))))


def fts_queries(query: str) -> FtsQueries:
    """CLEO's `buildFts5Queries`: quoted prefix terms, deduplicated, AND- and OR-joined."""
    seen: set[str] = set()
    terms: list[str] = []
    for token in _JS_SPLIT.split(js_trim(query)):
        stripped = _EDGE_NON_WORD.sub("", token)
        if len(stripped) < 2:
            continue  # after stripping it starts and ends with an ASCII word character, so length agrees
        lower = stripped.lower()
        if lower in seen:
            continue
        seen.add(lower)
        terms.append('"' + stripped.replace('"', '""') + '"*')
    if not terms:
        return FtsQueries('""', '""', 0)
    return FtsQueries(" AND ".join(terms), " OR ".join(terms), len(terms))


@dataclass(frozen=True)
class TableSpec:
    """One of the four tables CLEO's find searches, with its FTS index's columns."""

    name: str
    table: str
    fts: str
    text_columns: tuple[str, str]
    date_column: str  # the LIKE fallback's order for observations and decisions
    like_order: str

    @property
    def kind(self) -> str:
        return self.name.removesuffix("s")


# In hybridSearch's interleaving order.
TABLES = (
    TableSpec("decisions", cs.DECISIONS, "brain_decisions_fts", ("decision", "rationale"), "created_at",
              "created_at DESC"),
    TableSpec("patterns", cs.PATTERNS, "brain_patterns_fts", ("pattern", "context"), "extracted_at",
              "frequency DESC"),
    TableSpec("learnings", cs.LEARNINGS, "brain_learnings_fts", ("insight", "source"), "created_at",
              "confidence DESC"),
    TableSpec("observations", cs.OBSERVATIONS, cs.OBSERVATIONS_FTS, ("title", "narrative"), "created_at",
              "created_at DESC"),
)


def fts_ddl(spec: TableSpec) -> list[str]:
    """The FTS5 table and sync triggers CLEO's `ensureFts5Tables` creates for one table.

    cleo-tui never runs these on a user's brain; tests and benchmarks build CLEO-written files with them.
    """
    cols = ("id", *spec.text_columns)
    new = ", ".join(f"new.{c}" for c in cols)
    old = ", ".join(f"old.{c}" for c in cols)
    names = ", ".join(cols)
    delete = f"INSERT INTO {spec.fts}({spec.fts}, rowid, {names}) VALUES ('delete', old.rowid, {old});"
    insert = f"INSERT INTO {spec.fts}(rowid, {names}) VALUES (new.rowid, {new});"
    return [
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {spec.fts} USING fts5({names}, content={spec.table}, content_rowid=rowid)",
        f"CREATE TRIGGER IF NOT EXISTS {spec.table}_ai AFTER INSERT ON {spec.table} BEGIN {insert} END",
        f"CREATE TRIGGER IF NOT EXISTS {spec.table}_ad AFTER DELETE ON {spec.table} BEGIN {delete} END",
        f"CREATE TRIGGER IF NOT EXISTS {spec.table}_au AFTER UPDATE ON {spec.table} BEGIN {delete} {insert} END",
    ]


@dataclass
class TableSource:
    """Where one table is searched: the brain's own FTS index, an in-memory rebuild, or nowhere.

    `ids` maps the rowid of every row CLEO's search may return (quality NULL or at least 0.3, as
    its SQL compares) to its id: ranking the FTS index alone and keeping those rowids gives
    CLEO's statement's order (its join and filter only drop rows; ties stay in rowid order).
    """

    spec: TableSpec
    conn: sqlite3.Connection | None  # None: the table is missing
    where: Literal["brain", "memory", "missing"]
    quality_filter: bool
    note: str | None = None
    ids: dict[int, str] = field(default_factory=dict)

    def rank(self, expression: str) -> sqlite3.Cursor | None:
        """A cursor over the FTS index's rowids for one MATCH expression, best bm25 first (raises
        sqlite3.DatabaseError where CLEO's statement would fail and fall back to LIKE)."""
        if self.conn is None:
            return None
        fts = self.spec.fts
        return self.conn.execute(f"SELECT rowid FROM {fts} WHERE {fts} MATCH ? ORDER BY bm25({fts})", (expression,))


@dataclass
class FindSetup:
    """What the reproduction found on this brain, said once: index sources and what differs from CLEO."""

    sources: list[TableSource]
    notes: list[str] = field(default_factory=list)
    graph: bool = False
    like_conn: sqlite3.Connection | None = None  # the brain, for the LIKE fallback


def _docs_indexed(brain: Brain, spec: TableSpec) -> int | None:
    """How many rows the FTS index holds (its docsize table), None when unreadable."""
    try:
        return int(brain.scalar(f"SELECT count(*) FROM {spec.fts}_docsize"))
    except (sqlite3.DatabaseError, TypeError):
        return None


def _searchable(quality: bool) -> str:
    return f"WHERE quality_score IS NULL OR quality_score >= {QUALITY_THRESHOLD!r}" if quality else ""


def _memory_index(brain: Brain, spec: TableSpec, quality: bool) -> sqlite3.Connection:
    """The table's rows and CLEO's FTS5 index over them, in memory (what CLEO's rebuild gives)."""
    first, second = spec.text_columns
    mem = sqlite3.connect(":memory:", check_same_thread=False)
    mem.text_factory = lambda raw: raw.decode("utf-8", "replace")
    mem.execute(f"CREATE TABLE {spec.table} (id TEXT, {first} TEXT, {second} TEXT)")
    mem.execute(f"CREATE VIRTUAL TABLE {spec.fts} USING fts5(id, {first}, {second}, "
                f"content={spec.table}, content_rowid=rowid)")
    columns = brain.features.columns(spec.table)
    picked = ", ".join(c if c in columns else "NULL" for c in ("id", first, second))
    rows = brain.query(f"SELECT rowid, {picked} FROM {spec.table}")
    mem.executemany(f"INSERT INTO {spec.table}(rowid, id, {first}, {second}) VALUES (?, ?, ?, ?)",
                    [tuple(r) for r in rows])
    mem.execute(f"INSERT INTO {spec.fts}({spec.fts}) VALUES ('rebuild')")
    return mem


def _source(brain: Brain, spec: TableSpec) -> TableSource:
    features = brain.features
    if not features.has_table(spec.table) or "id" not in features.columns(spec.table):
        return TableSource(spec, None, "missing", False,
                           note=f"{spec.table} is missing: CLEO's find would fail on this brain; replayed without it")
    quality = "quality_score" in features.columns(spec.table)
    note = None if quality else f"{spec.table} has no quality_score column: no quality filter on it"
    ids = {int(r[0]): as_text(r[1]) for r in brain.query(f"SELECT rowid, id FROM {spec.table} {_searchable(quality)}")}
    if features.has_table(spec.fts):
        indexed = _docs_indexed(brain, spec)
        rows = brain.scalar(f"SELECT count(*) FROM {spec.table}")
        if indexed is not None and indexed == rows:
            return TableSource(spec, brain.conn, "brain", quality, note, ids)
        why = (f"{spec.fts} holds {indexed:,} of {rows:,} rows" if indexed is not None
               else f"{spec.fts} cannot be read here")
    else:
        why = f"{spec.fts} does not exist yet"
    extra = f"{why}: indexed in memory, as CLEO's first search would rebuild it"
    return TableSource(spec, _memory_index(brain, spec, quality), "memory", quality,
                       f"{note}; {extra}" if note else extra, ids)


def prepare_find(brain: Brain) -> FindSetup:
    """Inspect the brain once: which FTS index serves each table, and whether graph expansion can run."""
    sources = [_source(brain, spec) for spec in TABLES]
    setup = FindSetup(sources, [s.note for s in sources if s.note], like_conn=brain.conn)
    setup.graph = (brain.features.has_table(cs.NODES) and brain.supports("graph_edges")
                   and {"from_id", "to_id"} <= brain.features.columns(cs.EDGES))
    if brain.features.has_table("brain_embeddings"):
        setup.notes.append("brain_embeddings exists: CLEO adds vector hits only when brain.embedding.enabled "
                           "is set and sqlite-vec loads (off by default); vector search is not reproduced")
    return setup


def _like_rows(conn: sqlite3.Connection, spec: TableSpec, query: str, quality: bool) -> list[str]:
    """CLEO's LIKE fallback for one table (after an FTS statement failed), every match in its order."""
    first, second = spec.text_columns
    pattern = f"%{query}%"
    where = f"AND (quality_score IS NULL OR quality_score >= {QUALITY_THRESHOLD!r})" if quality else ""
    try:
        rows = conn.execute(f"SELECT id FROM {spec.table} WHERE ({first} LIKE ? OR {second} LIKE ?) {where} "
                            f"ORDER BY {spec.like_order}", (pattern, pattern)).fetchall()
    except sqlite3.DatabaseError:
        return []  # CLEO's whole search would fail here; nothing from this table
    return [as_text(r[0]) for r in rows]


def interleave(lists: Iterable[list[str]]) -> list[str]:
    """CLEO's `interleaveRanked`: rank 1 of every list, then rank 2 of every list, …"""
    lists = list(lists)
    longest = max((len(items) for items in lists), default=0)
    return [items[i] for i in range(longest) for items in lists if i < len(items)]


def rrf_fuse(ranked_lists: Iterable[list[str]], k: int = RRF_K) -> list[str]:
    """CLEO's `reciprocalRankFusion`: Σ 1/(k + rank) per id, a stable sort by score."""
    scores: dict[str, float] = {}
    for items in ranked_lists:
        for rank, item in enumerate(items):
            scores[item] = scores.get(item, 0.0) + 1 / (k + rank)
    return [item for item, _ in sorted(scores.items(), key=lambda pair: -pair[1])]


class _Ranking:
    """One statement's ranking of searchable ids, read lazily and kept, so every mode reuses it."""

    BATCH = 256

    def __init__(self, cursor: sqlite3.Cursor | None, ids: dict[int, str], listed: list[str] | None = None) -> None:
        self.cursor = cursor
        self.rowids = ids
        self.ids: list[str] = list(listed or [])
        self.complete = cursor is None

    def _more(self) -> bool:
        """Read the next batch; False when the ranking is exhausted."""
        while not self.complete:
            try:
                batch = self.cursor.fetchmany(self.BATCH) if self.cursor is not None else []
            except sqlite3.DatabaseError:
                batch = []
            if len(batch) < self.BATCH:
                self.close()
            found = [self.rowids[r[0]] for r in batch if r[0] in self.rowids]
            if found:
                self.ids += found
                return True
        return False

    def first(self, depth: int, leave_out: Collection[str]) -> list[str]:
        """The first `depth` ids once `leave_out` ids are removed."""
        kept: list[str] = []
        i = 0
        while len(kept) < depth:
            if i == len(self.ids) and not self._more():
                break
            item = self.ids[i]
            i += 1
            if item not in leave_out:
                kept.append(item)
        return kept

    def close(self) -> None:
        self.complete = True
        if self.cursor is not None:
            self.cursor.close()
            self.cursor = None


class PreparedQuery:
    """One query against one brain: each table's ranking runs once and serves every limit and mode.

    `find()` answers for any limit and any set of ids to leave out. Close it (or use it as a
    context manager) so no statement stays open.
    """

    def __init__(self, setup: FindSetup, query: str) -> None:
        self.setup = setup
        self.query = query
        self.blank = not js_trim(query)
        self.expressions = fts_queries(query)
        self._rankings: dict[tuple[str, str], _Ranking] = {}
        self.fell_back: set[str] = set()  # tables whose FTS statement failed (LIKE used, as CLEO does)
        self._graph: list[str] | None = None

    def __enter__(self) -> PreparedQuery:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for ranking in self._rankings.values():
            ranking.close()

    def _ranking(self, source: TableSource, expression: str) -> _Ranking:
        key = (source.spec.name, expression)
        ranking = self._rankings.get(key)
        if ranking is None:
            try:
                ranking = _Ranking(source.rank(expression), source.ids)
            except sqlite3.DatabaseError:  # CLEO falls back to LIKE for this table
                self.fell_back.add(source.spec.name)
                listed = ([] if self.setup.like_conn is None else
                          _like_rows(self.setup.like_conn, source.spec, self.query, source.quality_filter))
                ranking = _Ranking(None, source.ids, listed)
            self._rankings[key] = ranking
        return ranking

    def _kept(self, source: TableSource, expression: str, depth: int, leave_out: Collection[str]) -> list[str]:
        """The first `depth` ids of one statement's ranking once `leave_out` ids are removed."""
        return self._ranking(source, expression).first(depth, leave_out)

    def table_hits(self, source: TableSource, depth: int, leave_out: Collection[str] = ()) -> list[str]:
        """`matchConjunctiveFirst` for one table: AND, else (two terms or more) OR."""
        rows = self._kept(source, self.expressions.conjunctive, depth, leave_out)
        if rows or self.expressions.terms < 2:
            return rows
        return self._kept(source, self.expressions.disjunctive, depth, leave_out)

    def graph_hits(self) -> list[str]:
        """hybridSearch's graph expansion: neighbours of `concept:<query>`, `task:<query>`, `doc:<query>`."""
        if self._graph is None:
            self._graph = []
            conn = self.setup.like_conn
            if self.setup.graph and conn is not None:
                concept = "concept:" + _JS_SPLIT.sub("-", self.query.lower())
                for node in (concept, f"task:{self.query}", f"doc:{self.query}"):
                    try:
                        if conn.execute(f"SELECT 1 FROM {cs.NODES} WHERE id = ?", (node,)).fetchone() is None:
                            continue
                        rows = conn.execute(f"SELECT e.to_id FROM {cs.EDGES} e JOIN {cs.NODES} n ON n.id = e.to_id "
                                            "WHERE e.from_id = ? ORDER BY e.to_id, e.edge_type", (node,)).fetchall()
                    except sqlite3.DatabaseError:
                        continue
                    self._graph += [as_text(r[0]) for r in rows]
        return self._graph

    def find(self, limit: int = DEFAULT_LIMIT, path: FindPath = "rrf", leave_out: Collection[str] = ()) -> list[str]:
        """The ids `cleo memory find` returns, in order, with `leave_out` rows gone from the index's answers."""
        if self.blank or limit <= 0:
            return []
        sources = self.setup.sources
        if path == "fts":  # searchBrainCompact without RRF: each table's list, concatenated
            return [i for s in sources for i in self.table_hits(s, limit, leave_out)]
        per_table = [self.table_hits(s, limit * 6, leave_out) for s in sources]  # hybridSearch: 3 × (2 × limit)
        fused = rrf_fuse([interleave(per_table), self.graph_hits()])[: limit * 2]
        dated = {i for hits in per_table for i in hits[: limit * 3]}  # the second search's ids (3 × limit a table)
        return [i for i in fused if i in dated][:limit]


def cleo_find(brain: Brain, query: str, limit: int = DEFAULT_LIMIT, path: FindPath = "rrf",
              leave_out: Collection[str] = ()) -> list[str]:
    """One `cleo memory find QUERY --limit N` on this brain, as CLEO would answer it (ids in rank order)."""
    with PreparedQuery(prepare_find(brain), query) as prepared:
        return prepared.find(limit, path, leave_out)


def fetch_order(ids: Iterable[str], present: Collection[str]) -> list[str]:
    """CLEO's `memory fetch`: the ids that exist, decisions first, then patterns, learnings, observations."""
    groups: dict[str, list[str]] = {"decision": [], "pattern": [], "learning": [], "observation": []}
    for item in ids:
        kind = id_kind(item)
        if kind is not None and item in present:
            groups[kind].append(item)
    return [i for kind in ("decision", "pattern", "learning", "observation") for i in groups[kind]]


def id_kind(item: str) -> str | None:
    """CLEO's `parseIdPrefix`: which table an id names by its prefix."""
    if item.startswith("D-") or re.match(r"D\d", item):
        return "decision"
    if item.startswith("P-") or re.match(r"P\d", item):
        return "pattern"
    if item.startswith("L-") or re.match(r"L\d", item):
        return "learning"
    if item.startswith(("O", "CM-")):
        return "observation"
    return None
