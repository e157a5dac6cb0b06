"""Scanning a brain's observations into columns: what tags and the pruner both read.

A million observations as a million Python objects cost about a gigabyte and
seconds to build, so a scan keeps numbers in numpy arrays and only the ids,
dates and sessions as Python lists. Each row's relevance is computed in SQL
(`mapping.relevance_rule_sql`), and its detector findings (identifiers, text
reasons) come from a per-brain cache file in the platform cache directory, keyed
by rowid and a hash of the row's title and narrative: reopening a brain analyses
only rows that are new or edited. A scan can be brought up to date with the rows
that arrived since (`scan_rows_since`, `BrainScan.updated`) without reading the
others again.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import operator
import os
import sqlite3
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.connection import decode_text
from cleo_tui.brain.migrations import OVERRIDES
from cleo_tui.brain.store import Brain
from cleo_tui.config import cache_dir
from cleo_tui.memory import detectors, mapping
from cleo_tui.memory.detectors import Findings
from cleo_tui.memory.seed_types import render_line
from cleo_tui.memory.token_cache import CountStats, Progress, TokenCache, count_line_units
from cleo_tui.memory.tokenizers import Tokenizer, utf16_length

SCAN_CHUNK = 8_000
_CRITICAL = mapping.RELEVANCES.index("critical")
_EMPTY: Findings = ((), ())
_ASCII_BLANKS = b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"  # what str.isspace() accepts in ASCII
_REFLECTION_TEXT = ((cs.PATTERNS, "pattern || ' ' || coalesce(context, '')"), (cs.LEARNINGS, "insight"))


@dataclass
class BrainScan:
    """Observations in columns (index i is the i-th row scanned), with what tagging needs besides."""

    ids: list[str]
    created: list[str]
    sessions: list[str | None]
    rowids: np.ndarray      # int64
    live: np.ndarray        # bool
    rules: np.ndarray       # uint8, see mapping.relevance_rule_sql
    quality: list[Any]      # quality_score of low-quality rows (for their reason), else None
    findings: np.ndarray    # int32 index into `table`
    table: list[Findings]   # distinct (identifiers, text reasons); table[0] is the empty one
    citations: dict[str, set[str]]
    reflection_counts: Counter[str]  # identifier → live patterns and learnings holding it
    edges: EdgeSet | None = None   # the reflection edges read, to read only new ones next time
    units: np.ndarray | None = None  # int64 line units, for the rows in `unit_scope`
    unit_scope: str | None = None    # the session the units were measured for (None: all)
    count_stats: CountStats = field(default_factory=CountStats)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def high_water(self) -> int:
        return int(self.rowids.max()) if len(self.rowids) else 0

    @cached_property
    def index(self) -> dict[str, int]:
        """Row index by id."""
        return dict(zip(self.ids, range(len(self.ids)), strict=False))

    @cached_property
    def relevance(self) -> np.ndarray:
        """uint8 index into mapping.RELEVANCES of each row."""
        codes = np.array([mapping.RELEVANCES.index(r) for r in _RULE_RELEVANCE], dtype=np.uint8)
        return np.asarray(codes[self.rules])

    def relevance_of(self, i: int) -> str:
        return mapping.RELEVANCES[self.relevance[i]]

    def relevance_reason_of(self, i: int) -> str:
        return _reason_of_rule(int(self.rules[i]), self.quality[i])

    @cached_property
    def counts(self) -> Counter[str]:
        """Identifier → live observations and reflections holding it."""
        per_entry = np.bincount(self.findings[self.live], minlength=len(self.table))
        counts = Counter(self.reflection_counts)
        for entry in np.flatnonzero(per_entry):
            for identifier in self.table[entry][0]:
                counts[identifier] += int(per_entry[entry])
        return counts

    @cached_property
    def citation_counts(self) -> np.ndarray:
        """int32 count of distinct live reflections citing each row."""
        counts = np.zeros(len(self.ids), dtype=np.int32)
        index = self.index
        for obs_id, cited in self.citations.items():
            i = index.get(obs_id)
            if i is not None:
                counts[i] = len(cited)
        return counts

    def coverage_codes(self) -> np.ndarray:
        """0 reinforced, 1 cited, 2 uncited (the drop order's coverage rank)."""
        counts = self.citation_counts
        return np.where(counts >= mapping.REINFORCED_AT, 0, np.where(counts > 0, 1, 2)).astype(np.uint8)

    @cached_property
    def entry_protected(self) -> np.ndarray:
        """bool per table entry: its findings protect a live row (a text reason, a unique identifier)."""
        counts = self.counts
        return np.array([bool(reasons) or any(counts.get(i, 0) <= 1 for i in ids) for ids, reasons in self.table],
                        dtype=bool)

    def prepare_updates(self) -> None:
        """Build now (in a worker) the indexes the first `updated` would otherwise build."""
        _ = self.table_index, self.entries_of_identifier, self.index, self.entry_protected, self.citation_counts

    @cached_property
    def table_index(self) -> dict[Findings, int]:
        return {entry: k for k, entry in enumerate(self.table)}

    @cached_property
    def entries_of_identifier(self) -> dict[str, list[int]]:
        """The table entries holding each identifier (to re-judge only what a change touches)."""
        holders: dict[str, list[int]] = {}
        for k, (ids, _) in enumerate(self.table):
            for identifier in ids:
                holders.setdefault(identifier, []).append(k)
        return holders

    @property
    def protected(self) -> np.ndarray:
        """bool: live and protected (critical relevance, a text detector, a unique identifier)."""
        return np.asarray(self.live & ((self.relevance == _CRITICAL) | self.entry_protected[self.findings]))

    def reasons_of(self, i: int) -> list[str]:
        """Every reason protecting row i (computed as if live for an evicted one)."""
        ids, text_reasons = self.table[self.findings[i]]
        relevance, why = mapping.relevance_of_rule(int(self.rules[i]), self.quality[i])
        reasons = [f"critical relevance: {why}"] if relevance == "critical" else []
        reasons += text_reasons
        reasons += detectors.unique_identifier_reasons(ids, self.counts, own=1 if self.live[i] else 0)
        return reasons

    def ids_where(self, mask: np.ndarray) -> list[str]:
        ids = self.ids
        return [ids[i] for i in np.flatnonzero(mask).tolist()]

    def updated(self, delta: BrainScan) -> BrainScan:
        """This scan with `delta`'s rows put in (replacing rows of the same id, else appended),
        and delta's citations and reflections; self is left unchanged."""
        index = self.index
        known = [(j, index[d]) for j, d in enumerate(delta.ids) if d in index]
        new = [j for j, d in enumerate(delta.ids) if d not in index]
        table, remap, where = _merged_table(self.table, delta.table, self.table_index)
        delta_findings = remap[delta.findings] if len(delta.findings) else delta.findings
        ids, created, sessions, quality = list(self.ids), list(self.created), list(self.sessions), list(self.quality)
        arrays = {"rowids": self.rowids.copy(), "live": self.live.copy(), "rules": self.rules.copy(),
                  "findings": self.findings.copy()}
        units = None if self.units is None else self.units.copy()
        for j, i in known:
            created[i], sessions[i], quality[i] = delta.created[j], delta.sessions[j], delta.quality[j]
            for name, column in arrays.items():
                column[i] = delta_findings[j] if name == "findings" else getattr(delta, name)[j]
            if units is not None and delta.units is not None:
                units[i] = delta.units[j]
        if new:
            take = np.array(new, dtype=np.int64)
            ids += [delta.ids[j] for j in new]
            created += [delta.created[j] for j in new]
            sessions += [delta.sessions[j] for j in new]
            quality += [delta.quality[j] for j in new]
            for name in arrays:
                extra = delta_findings[take] if name == "findings" else getattr(delta, name)[take]
                arrays[name] = np.concatenate([arrays[name], extra])
            if units is not None:
                units = np.concatenate([units, delta.units[take] if delta.units is not None
                                        else np.zeros(len(new), dtype=np.int64)])
        scan = BrainScan(ids, created, sessions, table=table, quality=quality, citations=delta.citations,
                         reflection_counts=delta.reflection_counts, edges=delta.edges, units=units,
                         unit_scope=self.unit_scope, count_stats=delta.count_stats, **arrays)
        scan.__dict__["table_index"] = where
        index_now = index if not new else {**index, **{ids[i]: i for i in range(len(self.ids), len(ids))}}
        scan.__dict__["index"] = index_now
        self._carry_counts(scan, [i for _, i in known], len(self.table))
        if not _dates_in_order(created, [i for _, i in known] + list(range(len(self.ids), len(ids)))):
            return scan.sorted_by_date()
        return scan

    def _carry_counts(self, scan: BrainScan, replaced: list[int], old_table: int) -> None:
        """Give `scan` its identifier counts and entry protection from this scan's, adjusted for
        what changed (replaced and new rows, reflections), instead of recounting every row."""
        old = self.counts
        counts = Counter(old)
        counts.subtract(self.reflection_counts)
        counts.update(scan.reflection_counts)
        touched = set(self.reflection_counts) | set(scan.reflection_counts)
        for i in replaced:
            if self.live[i]:
                counts.subtract(self.table[self.findings[i]][0])
            touched.update(self.table[self.findings[i]][0])
        for i in [*replaced, *range(len(self.ids), len(scan.ids))]:
            if scan.live[i]:
                counts.update(scan.table[scan.findings[i]][0])
            touched.update(scan.table[scan.findings[i]][0])
        for identifier in touched:
            if counts.get(identifier, 0) <= 0:
                counts.pop(identifier, None)
        scan.__dict__["counts"] = counts
        flipped = [x for x in touched if (old.get(x, 0) <= 1) != (counts.get(x, 0) <= 1)]
        holders = dict(self.entries_of_identifier)  # lists are copied where they grow
        for k in range(old_table, len(scan.table)):
            for identifier in scan.table[k][0]:
                holders[identifier] = [*holders.get(identifier, ()), k]
        scan.__dict__["entries_of_identifier"] = holders
        protected = np.concatenate([self.entry_protected, np.zeros(len(scan.table) - old_table, dtype=bool)])
        for k in {k for x in flipped for k in holders.get(x, ())} | set(range(old_table, len(scan.table))):
            ids, reasons = scan.table[k]
            protected[k] = bool(reasons) or any(counts.get(i, 0) <= 1 for i in ids)
        scan.__dict__["entry_protected"] = protected

    def sorted_by_date(self) -> BrainScan:
        """The same rows oldest first (ties by rowid), as a full scan would hold them."""
        order = sorted(range(len(self.ids)), key=lambda i: (self.created[i], int(self.rowids[i])))
        take = np.array(order, dtype=np.int64)
        scan = BrainScan(
            [self.ids[i] for i in order], [self.created[i] for i in order], [self.sessions[i] for i in order],
            self.rowids[take], self.live[take], self.rules[take], [self.quality[i] for i in order],
            self.findings[take], self.table, self.citations, self.reflection_counts, self.edges,
            None if self.units is None else self.units[take], self.unit_scope, self.count_stats)
        for name in ("counts", "entry_protected", "entries_of_identifier", "table_index"):
            if name in self.__dict__:
                scan.__dict__[name] = self.__dict__[name]
        return scan


def _dates_in_order(created: list[str], touched: list[int]) -> bool:
    """Whether rows are still oldest first after the rows at `touched` changed or arrived."""
    last = len(created) - 1
    return all((i == 0 or created[i - 1] <= created[i]) and (i == last or created[i] <= created[i + 1])
               for i in touched)


@lru_cache(maxsize=4096)
def _reason_of_rule(code: int, quality: Any) -> str:
    return mapping.relevance_of_rule(code, quality)[1]


def _merged_table(table: list[Findings], extra: list[Findings],
                  where: dict[Findings, int]) -> tuple[list[Findings], np.ndarray, dict[Findings, int]]:
    """`table` with the entries of `extra` it lacks appended, where each of extra's went, and the
    merged table's index (`where` is copied only when something is added)."""
    merged = list(table)
    remap = np.zeros(len(extra), dtype=np.int32)
    grown = where
    for k, entry in enumerate(extra):
        at = grown.get(entry)
        if at is None:
            grown = dict(where) if grown is where else grown
            at = grown[entry] = len(merged)
            merged.append(entry)
        remap[k] = at
    return merged, remap, grown


@dataclass
class EdgeSet:
    """The reflection edges of a brain as read: (observation id, reflection node id) pairs."""

    pairs: list[tuple[str, str]]
    high_water: int  # largest edge rowid read
    count: int       # edges of a reflection type then


def _edge_stats(brain: Brain) -> tuple[int, int]:
    types = ",".join(f"'{t}'" for t in mapping.REFLECTION_EDGE_TYPES)
    row = brain.query_one(f"SELECT count(*), coalesce(max(rowid), 0) FROM {cs.EDGES} WHERE edge_type IN ({types})")
    return (int(row[0]), int(row[1])) if row is not None else (0, 0)


def _read_edges(brain: Brain, since: int) -> list[tuple[str, str]]:
    types = ",".join(f"'{t}'" for t in mapping.REFLECTION_EDGE_TYPES)
    return [(obs_id, source) for obs_id, source in brain.query(
        f"SELECT substr(to_id, 13), from_id FROM {cs.EDGES} WHERE edge_type IN ({types}) "
        f"AND to_id LIKE 'observation:%' AND rowid > ?", (since,))]


def _live_reflections(brain: Brain) -> set[str]:
    """Node ids of live patterns, live learnings and live observer notes."""
    live = lambda table: "invalid_at IS NULL" if brain.features.has_column(table, "invalid_at") else "1"  # noqa: E731
    # `+`: walk the source_type index (a few notes), not invalid_at's (nearly every row).
    sources = [f"SELECT 'observation:' || id FROM {cs.OBSERVATIONS} "
               f"WHERE source_type = '{mapping.OBSERVER_SOURCE_TYPE}' AND +{live(cs.OBSERVATIONS)}"]
    for table, prefix in ((cs.PATTERNS, "pattern:"), (cs.LEARNINGS, "learning:")):
        if brain.features.has_table(table):
            sources.append(f"SELECT '{prefix}' || id FROM {table} WHERE {live(table)}")
    return {r[0] for r in brain.query(" UNION ALL ".join(sources))}


def _citations(brain: Brain, previous: EdgeSet | None) -> tuple[dict[str, set[str]], EdgeSet | None]:
    """mapping.reflection_citations, reading only the edges added since `previous` when edges
    were only added (the reflections' liveness is read again: a few thousand rows)."""
    if not brain.features.has_table(cs.EDGES):
        return {}, None
    try:
        count, high = _edge_stats(brain)
        if previous is not None and high >= previous.high_water and count >= previous.count:
            pairs = previous.pairs + _read_edges(brain, previous.high_water)
        else:
            pairs = _read_edges(brain, 0)
        edges = EdgeSet(pairs, high, count) if len(pairs) == count else None
    except sqlite3.OperationalError:  # no rowid to read by: read them all, as recall does
        return mapping.reflection_citations(brain), None
    if edges is None and previous is not None:  # edges were deleted and added: read all again
        return _citations(brain, None)
    live = _live_reflections(brain)
    cited: dict[str, set[str]] = {}
    for obs_id, source in pairs:
        if source in live and source != f"observation:{obs_id}":
            cited.setdefault(obs_id, set()).add(source)
    return cited, edges


# --- reading ---------------------------------------------------------------------------


def _column(have: Collection[str]) -> Callable[[str], str]:
    return lambda name: f'o."{name}"' if name in have else "NULL"


# str.isspace() in ASCII, for SQLite's trim(): an ASCII narrative made only of these is blank.
_SQL_BLANKS = "' ' || char(9, 10, 11, 12, 13, 28, 29, 30, 31)"


def _ascii_units_sql(col: Any) -> str:
    """SQL for a chars4 line's units less its relevance word, for the usual row (ASCII id and
    narrative, a YYYY-MM-DD HH:MM date); NULL otherwise, and Python measures that row."""
    oid, created, narrative = (f"CAST({col(c)} AS TEXT)" for c in ("id", "created_at", "narrative"))
    return (f"CASE WHEN length({oid}) = length(CAST({oid} AS BLOB)) "
            f"AND length({narrative}) = length(CAST({narrative} AS BLOB)) "
            f"AND trim({narrative}, {_SQL_BLANKS}) != '' "
            f"AND length({created}) >= 16 AND substr({created}, 5, 1) = '-' "
            f"AND substr({created}, 11, 1) IN (' ', 'T') AND substr({created}, 1, 1) NOT IN (' ', char(9), char(10)) "
            f"THEN 7 + 16 + length({oid}) + length({narrative}) END")


def _scan_sql(brain: Brain, where: str, sessions: bool = True, chars4: bool = False) -> str:
    """The scan's SELECT; `sessions` and `chars4` (line units in SQL) add what a pool needs."""
    have = brain.features.columns(cs.OBSERVATIONS)
    col = _column(have)
    override = "ov.relevance" if brain.features.has_table(OVERRIDES) else None
    join = f" LEFT JOIN {OVERRIDES} ov ON ov.observation_id = o.id" if override else ""
    live = "o.invalid_at IS NULL" if "invalid_at" in have else "1"
    quality = col("quality_score")
    low_quality = f"CASE WHEN typeof({quality}) IN ('integer', 'real') AND {quality} < 0.4 THEN {quality} END"
    return (f"SELECT o.rowid, CAST({col('id')} AS TEXT), coalesce(CAST({col('created_at')} AS TEXT), ''), "
            f"{'CAST(' + col('source_session_id') + ' AS TEXT)' if sessions else 'NULL'}, {live}, "
            f"CAST(coalesce({col('title')}, '') AS BLOB), CAST(coalesce({col('narrative')}, '') AS BLOB), "
            f"{mapping.relevance_rule_sql(col, override)}, {low_quality}, "
            f"{_ascii_units_sql(col) if chars4 else 'NULL'} "
            f"FROM {cs.OBSERVATIONS} o{join}{where}")  # in rowid order; sorted by date in Python (cheaper)


@contextmanager
def _plain_text(conn: sqlite3.Connection, strict: bool) -> Iterator[None]:
    """Let SQLite decode the short text columns in C (`strict`), or leniently in Python."""
    previous = conn.text_factory
    conn.text_factory = str if strict else decode_text
    try:
        yield
    finally:
        conn.text_factory = previous


class _Undecodable(Exception):
    """An id, date or session holds invalid UTF-8: read again with the lenient decoder."""


def _fetch_chunks(brain: Brain, sql: str, params: Sequence[Any], strict: bool) -> Iterator[list[tuple]]:
    """The query's rows a chunk at a time, as one statement under the brain's lock.

    With `strict`, ids, dates and sessions are decoded by SQLite (in C) and invalid
    UTF-8 there raises _Undecodable; titles and narratives are read as bytes either way.
    """
    with brain.lock, _plain_text(brain.conn, strict):
        cursor = brain.conn.execute(sql, params)
        try:
            while True:
                try:
                    rows = cursor.fetchmany(SCAN_CHUNK)
                except sqlite3.OperationalError as exc:
                    if strict and "decode" in str(exc).lower():
                        raise _Undecodable() from None
                    raise
                if not rows:
                    return
                yield rows
        finally:
            cursor.close()


def _content_hash(title: bytes, narrative: bytes) -> bytes:
    return hashlib.blake2b(title + b"\x00" + narrative, digest_size=8).digest()


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _judged_text(title: str, narrative: str) -> str:
    content = narrative if narrative.strip() else title
    return content if not title or content.startswith(title) else f"{title}\n{content}"


def judged_text(row: dict[str, Any]) -> str:
    """The text the detectors read for a row read with POOL_COLUMNS: the content, titled when that adds."""
    return _judged_text(mapping.as_text(row.get("title")), mapping.as_text(row.get("narrative")))


def _content(title: bytes, narrative: bytes) -> str:
    narrative_text = _decode(narrative)
    return narrative_text if narrative_text.strip() else _decode(title)


def _minute_length(created: str) -> int:
    """len(mapping.minute_timestamp(created)), without building it for the usual shape."""
    if len(created) >= 16 and created[4] == "-" and created[10] in " T" and not created[0].isspace():
        return 16
    return len(mapping.minute_timestamp(created))


def _content_units(title: bytes, narrative: bytes) -> int:
    """UTF-16 length of the seed's content (narrative, or title when it is blank)."""
    if narrative.isascii() and narrative.strip(_ASCII_BLANKS):
        return len(narrative)
    return utf16_length(_content(title, narrative))


@dataclass
class _Chunk:
    rowids: list[int]
    ids: list[str]
    created: list[str]
    sessions: list[str | None]
    live: list[int]
    titles: list[bytes]
    narratives: list[bytes]
    rules: list[int]
    quality: list[Any]
    units: list[int | None]  # chars4 units less the relevance word, when SQL could tell


def _columns_of(rows: list[tuple]) -> _Chunk:
    rowids, ids, created, sessions, live, titles, narratives, rules, quality, units = map(
        list, zip(*rows, strict=False))
    return _Chunk(rowids, [i if i is not None else "" for i in ids], created, sessions, live,
                  titles, narratives, rules, quality, units)


class _FindingsFile:
    """The per-brain cache of findings by (rowid, content hash), next to the token cache."""

    def __init__(self, brain: Brain) -> None:
        name = hashlib.sha256(os.path.abspath(str(brain.path)).encode("utf-8", "surrogatepass")).hexdigest()[:20]
        self.path = cache_dir() / "row_findings" / f"{name}-{detectors.RULES_KEY}.npz"
        self.rowids = np.zeros(0, dtype=np.int64)
        self.keys = np.zeros(0, dtype=np.uint64)
        self.entries = np.zeros(0, dtype=np.int32)
        self.table: list[Findings] = [_EMPTY]
        try:
            with np.load(self.path, allow_pickle=False) as data:
                rowids, keys, entries = data["rowids"], data["keys"], data["entries"]
                table = bytes(data["table"]).decode("utf-8", "surrogatepass").split("\x1d")
            order = np.argsort(rowids, kind="stable")
            self.rowids, self.keys, self.entries = rowids[order], keys[order], entries[order]
            self.table = [detectors._decode(t) for t in table]
            if not self.table or self.table[0] != _EMPTY or (len(entries) and entries.max() >= len(self.table)):
                raise ValueError("damaged")
        except (OSError, KeyError, ValueError, UnicodeDecodeError):
            self.rowids = np.zeros(0, dtype=np.int64)
            self.keys = np.zeros(0, dtype=np.uint64)
            self.entries = np.zeros(0, dtype=np.int32)
            self.table = [_EMPTY]

    def lookup(self, rowids: np.ndarray, keys: np.ndarray) -> np.ndarray:
        """int32 table index of each row whose cached hash matches, else -1."""
        found = np.full(len(rowids), -1, dtype=np.int32)
        if not len(self.rowids) or not len(rowids):
            return found
        at = np.searchsorted(self.rowids, rowids).clip(0, len(self.rowids) - 1)
        hit = (self.rowids[at] == rowids) & (self.keys[at] == keys)
        found[hit] = self.entries[at[hit]]
        return found

    def save(self, rowids: np.ndarray, keys: np.ndarray, entries: np.ndarray, table: list[Findings]) -> None:
        """Replace the file (atomically); a failure only costs speed next time."""
        # Rows this scan did not read (evicted ones, when only live rows were read) keep theirs.
        keep = ~np.isin(self.rowids, rowids)
        if keep.any():
            rowids = np.concatenate([rowids, self.rowids[keep]])
            keys = np.concatenate([keys, self.keys[keep]])
            entries = np.concatenate([entries, self.entries[keep]])
        blob = "\x1d".join(detectors._encode(t) for t in table).encode("utf-8", "surrogatepass")
        tmp = self.path.with_name(f"{self.path.stem}.{os.getpid()}.tmp.npz")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            np.savez(tmp, rowids=rowids, keys=keys, entries=entries, table=np.frombuffer(blob, dtype=np.uint8))
            os.replace(tmp, self.path)
        except OSError:
            tmp.unlink(missing_ok=True)


def live_reflection_texts(brain: Brain) -> list[str]:
    """Texts of live patterns and learnings (observer notes are observations already)."""
    texts = []
    for table, expression in _REFLECTION_TEXT:
        if not brain.features.has_table(table):
            continue
        live = "invalid_at IS NULL" if brain.features.has_column(table, "invalid_at") else "1"
        try:
            texts += [mapping.as_text(r[0]) for r in brain.query(f"SELECT {expression} FROM {table} WHERE {live}")]
        except sqlite3.OperationalError:  # an older layout without these columns: nothing to compare with
            continue
    return texts


def _reflection_counts(brain: Brain) -> Counter[str]:
    counts: Counter[str] = Counter()
    for identifiers in detectors.identifiers_of(live_reflection_texts(brain)):
        counts.update(identifiers)
    return counts


def _scan(brain: Brain, where: str, params: Sequence[Any], tokenizer: Tokenizer | None, session: str | None,
          progress: Progress | None, cache_file: bool, edges: EdgeSet | None = None) -> BrainScan:
    stored = _FindingsFile(brain) if cache_file else None
    try:
        scan, fresh = _scan_pass(brain, where, params, tokenizer, session, progress, stored, strict=True)
    except _Undecodable:
        scan, fresh = _scan_pass(brain, where, params, tokenizer, session, progress, stored, strict=False)
    scan.citations, scan.edges = _citations(brain, edges)
    if stored is not None and fresh:
        stored.save(scan.rowids, _keys_of(scan), scan.findings, scan.table)
    return scan


def _keys_of(scan: BrainScan) -> np.ndarray:
    keys: np.ndarray = scan.__dict__.pop("_keys")
    return keys


def _scan_pass(brain: Brain, where: str, params: Sequence[Any], tokenizer: Tokenizer | None, session: str | None,
               progress: Progress | None, stored: _FindingsFile | None, strict: bool) -> tuple[BrainScan, int]:
    """One reading of the rows, a chunk at a time (only a chunk's texts are held at once)."""
    table = list(stored.table) if stored else [_EMPTY]
    where_entry = {entry: k for k, entry in enumerate(table)}
    parts: dict[str, list] = {name: [] for name in ("rowids", "ids", "created", "sessions", "live", "rules",
                                                    "quality", "keys", "entries", "units")}
    fresh = 0
    stats = CountStats()
    cache = TokenCache() if tokenizer is not None and tokenizer.cached else None
    done = 0
    total = _count(brain, where, params) if progress and tokenizer is not None else 0
    try:
        sql = _scan_sql(brain, where, sessions=session is not None or tokenizer is None,
                        chars4=tokenizer is not None and not tokenizer.cached)
        for rows in _fetch_chunks(brain, sql, params, strict):
            c = _columns_of(rows)
            rowids = np.array(c.rowids, dtype=np.int64)
            keys = np.frombuffer(b"".join(map(_content_hash, c.titles, c.narratives)), dtype=np.uint64)
            entries = stored.lookup(rowids, keys) if stored else np.full(len(rowids), -1, dtype=np.int32)
            missing = np.flatnonzero(entries < 0).tolist()
            if missing:
                fresh += len(missing)
                texts = [_judged_text(_decode(c.titles[i]), _decode(c.narratives[i])) for i in missing]
                for i, findings in zip(missing, detectors.analyse_texts(texts), strict=False):
                    at = where_entry.get(findings)
                    if at is None:
                        at = where_entry[findings] = len(table)
                        table.append(findings)
                    entries[i] = at
            if tokenizer is not None:
                parts["units"].append(_chunk_units(c, tokenizer, session, cache, stats))
                done += len(rows)
                if progress:
                    progress(done, max(total, done))
            for name in ("ids", "created", "sessions", "live", "rules", "quality"):
                parts[name] += getattr(c, name)
            parts["rowids"].append(rowids)
            parts["keys"].append(keys)
            parts["entries"].append(entries)
    finally:
        if cache is not None:
            cache.close()
    order = _date_order(parts["created"], parts["rowids"])
    lists = {name: parts[name] if order is None else [parts[name][i] for i in order]
             for name in ("ids", "created", "sessions", "live", "rules", "quality")}
    arrays = {name: _joined(parts[name], dtype) for name, dtype in
              (("rowids", np.int64), ("entries", np.int32), ("keys", np.uint64), ("units", np.int64))}
    if order is not None:
        arrays = {name: column[order] if len(column) else column for name, column in arrays.items()}
    scan = BrainScan(
        ids=lists["ids"], created=lists["created"], sessions=_shared(lists["sessions"]),
        rowids=arrays["rowids"], live=np.array(lists["live"], dtype=bool),
        rules=np.array(lists["rules"], dtype=np.uint8), quality=lists["quality"],
        findings=arrays["entries"], table=table,
        citations={}, reflection_counts=_reflection_counts(brain),
        units=arrays["units"] if tokenizer is not None else None, unit_scope=session, count_stats=stats)
    scan.__dict__["_keys"] = arrays["keys"]
    return scan, fresh + (0 if stored is None else len(stored.rowids) != len(scan.rowids))


def _date_order(created: list[str], rowid_chunks: list[np.ndarray]) -> np.ndarray | None:
    """The permutation putting rows (read in rowid order) oldest first, ties by rowid; None when
    they already are (CLEO writes in date order, so this is usually a check, not a sort)."""
    if all(map(operator.le, created, itertools.islice(created, 1, None))):
        return None
    return np.array(sorted(range(len(created)), key=created.__getitem__), dtype=np.int64)  # stable: rowid ties


def _joined(arrays: list[np.ndarray], dtype: Any) -> np.ndarray:
    return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype=dtype)


def _count(brain: Brain, where: str, params: Sequence[Any]) -> int:
    return int(brain.scalar(f"SELECT count(*) FROM {cs.OBSERVATIONS} o{where}", params))


_RULE_RELEVANCE = [mapping.relevance_of_rule(code, 0.0)[0] if code in range(1, 10) or code >= mapping.RULE_OVERRIDE
                   else "medium" for code in range(mapping.RULE_OVERRIDE + len(mapping.RELEVANCES))]


def _chunk_units(c: _Chunk, tokenizer: Tokenizer, session: str | None, cache: TokenCache | None,
                 stats: CountStats) -> np.ndarray:
    """Line units of a chunk's rows in scope (`[id] YYYY-MM-DD HH:MM [relevance] content`); 0 elsewhere."""
    units = np.zeros(len(c.ids), dtype=np.int64)
    in_scope = range(len(c.ids)) if session is None else [i for i, s in enumerate(c.sessions) if s == session]
    if not in_scope:
        return units
    relevance = [_RULE_RELEVANCE[r] for r in c.rules]
    if not tokenizer.cached:  # chars4: UTF-16 lengths, no line is built; SQL measured most rows
        known = c.units
        values = [known[i] + len(relevance[i]) if known[i] is not None else  # type: ignore[operator]
                  7 + utf16_length(c.ids[i]) + _minute_length(c.created[i]) + len(relevance[i])
                  + _content_units(c.titles[i], c.narratives[i]) for i in in_scope]
        chunk_stats = CountStats(lines=len(values), counted=len(values))
    else:
        lines = [render_line(c.ids[i], mapping.minute_timestamp(c.created[i]), relevance[i],
                             _content(c.titles[i], c.narratives[i])) for i in in_scope]
        values, chunk_stats = count_line_units(lines, tokenizer, None, cache)
    units[np.fromiter(in_scope, dtype=np.int64, count=len(in_scope))] = values
    stats.lines += chunk_stats.lines
    stats.from_cache += chunk_stats.from_cache
    stats.counted += chunk_stats.counted
    stats.cache_used = stats.cache_used or chunk_stats.cache_used
    stats.seconds += chunk_stats.seconds
    return units


def _shared(values: list[str | None]) -> list[str | None]:
    """The same list with equal strings made one object (sessions repeat a lot)."""
    seen: dict[str | None, str | None] = {}
    return [seen.setdefault(v, v) for v in values]


def scan_brain(brain: Brain, live_only: bool = False, tokenizer: Tokenizer | None = None,
               session: str | None = None, progress: Progress | None = None) -> BrainScan:
    """Read and analyse every observation (or every live one) once, oldest first.

    With a tokenizer, each row in scope (one session's, or all when `session` is
    None) also gets the size of its pool line; `progress(done, total)` follows it.
    """
    have = brain.features.columns(cs.OBSERVATIONS)
    where = " WHERE o.invalid_at IS NULL" if live_only and "invalid_at" in have else ""
    return _scan(brain, where, (), tokenizer, session, progress, cache_file=True)


def scan_rows_since(brain: Brain, high_water: int, changed_ids: Iterable[str] = (),
                    tokenizer: Tokenizer | None = None, session: str | None = None,
                    base: BrainScan | None = None) -> BrainScan:
    """The rows above rowid `high_water` and the rows `changed_ids` (live or not), with the
    brain's current citations and reflections: what `BrainScan.updated` folds in.

    With `base` (the scan it will be folded into), only the edges added since it are read.
    """
    changed = list(dict.fromkeys(changed_ids))
    where = " WHERE o.rowid > ?"
    params: list[Any] = [int(high_water)]
    if changed:
        where += " OR o.id IN (SELECT value FROM json_each(?))"
        params.append(json.dumps(changed))
    return _scan(brain, where, params, tokenizer, session, None, cache_file=False,
                 edges=None if base is None else base.edges)


__all__ = ["BrainScan", "live_reflection_texts", "scan_brain", "scan_rows_since"]
