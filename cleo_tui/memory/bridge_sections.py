"""The sections of CLEO's memory bridge: CLEO's queries, the line it writes per row, and the marks.

Each section is one of CLEO's queries in `generateMemoryBridgeContent` (see `memory.bridge` for the
rules, read in CLEO's packages/core/src/memory/memory-bridge.ts); `read_section` runs it and renders
each row exactly as CLEO writes it (raising where Node would throw), `mark_items` adds what
cleo-tui knows of each row: evicted, hidden from CLEO's search, evicting, missing.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.store import Brain
from cleo_tui.memory.js_values import (
    JsTypeError,
    js_date_ms,
    js_parse_float,
    js_slice,
    js_text,
    js_to_fixed,
    js_truthy,
    utf16_units,
)
from cleo_tui.safe_text import one_line

CHARS_PER_TOKEN = 4  # CLEO's own estimate (its maxTokens cut); cleo-tui's chars4 tokenizer counts the same way
DECAY_RATE = 0.5
DECAY_HALF_LIFE_DAYS = 90
MIN_EFFECTIVE_CONFIDENCE = 0.6
MS_PER_DAY = 86_400_000
MAX_OBSERVATIONS, MAX_LEARNINGS, MAX_PATTERNS, MAX_DECISIONS = 10, 8, 8, 5
SEARCH_QUALITY_FLOOR = 0.3  # CLEO's `memory find` drops rows whose quality_score is below this

DECISIONS, LEARNINGS, FOLLOW, AVOID, OBSERVATIONS = (
    "decisions", "learnings", "patterns_follow", "patterns_avoid", "observations")

_PATTERN_NOISE = ("pattern NOT LIKE 'Recurring label%'", "pattern NOT LIKE 'Test pattern%'", "pattern NOT LIKE 'test'",
                  "pattern NOT LIKE 'Audit probe:%'", "LENGTH(pattern) > 20")


@dataclass(frozen=True)
class SectionQuery:
    """One section of the bridge: CLEO's heading, and its query in parts (columns, conditions, order, limit)."""

    name: str
    heading: str
    table: str
    columns: str
    where: tuple[str, ...]
    order: str
    limit: int

    def sql(self, live_only: bool = False) -> str:
        """CLEO's query (`LIMIT ?`); `live_only`: also without evicted rows, and unlimited (the caller stops)."""
        where = [*self.where, *(["invalid_at IS NULL"] if live_only else [])]
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        return (f"SELECT {self.columns} FROM {self.table}{clause} ORDER BY {self.order}"
                + ("" if live_only else " LIMIT ?"))


SECTION_QUERIES: tuple[SectionQuery, ...] = (
    SectionQuery(DECISIONS, "## Recent Decisions", cs.DECISIONS, "id, decision, created_at", (),
                 "created_at DESC", MAX_DECISIONS),
    SectionQuery(LEARNINGS, "## Key Learnings", cs.LEARNINGS, "id, insight, confidence, created_at, updated_at",
                 ("CAST(confidence AS REAL) >= 0.3", "insight NOT LIKE 'Completed:%'"),
                 "confidence DESC, created_at DESC", MAX_LEARNINGS * 3),
    SectionQuery(FOLLOW, "## Patterns to Follow", cs.PATTERNS, "id, pattern, type, impact, extracted_at",
                 ("type IN ('success', 'workflow', 'optimization')", *_PATTERN_NOISE), "extracted_at DESC",
                 MAX_PATTERNS),
    SectionQuery(AVOID, "## Anti-Patterns to Avoid", cs.PATTERNS, "id, pattern, type, impact, extracted_at",
                 ("type IN ('failure', 'blocker')", *_PATTERN_NOISE), "extracted_at DESC", MAX_PATTERNS),
    SectionQuery(OBSERVATIONS, "## Recent Observations", cs.OBSERVATIONS, "id, title, type, created_at",
                 ("type != 'change'", "title NOT LIKE 'File changed:%'", "title NOT LIKE 'Task start:%'",
                  "title NOT LIKE 'Task complete:%'", "title NOT LIKE '[hook]%'"), "created_at DESC",
                 MAX_OBSERVATIONS),
)
SECTION_TITLES = {q.name: q.heading.removeprefix("## ") for q in SECTION_QUERIES}


def chars4_tokens(text: str) -> int:
    """Tokens at 4 UTF-16 code units a token, rounded up (CLEO's estimate)."""
    return -(-utf16_units(text) // CHARS_PER_TOKEN)


@dataclass(frozen=True)
class BridgeItem:
    """One line CLEO writes for one row, with what cleo-tui knows of the row."""

    id: str
    section: str
    table: str
    line: str  # exactly as CLEO writes it ("- [D001] … (2026-05-01)"); untrusted text
    tokens: int  # chars4 tokens of the line
    evicted: bool = False  # invalid_at is set: evicted, and CLEO injects it anyway
    hidden: bool = False  # quality_score below 0.3: hidden from CLEO's search, injected anyway
    evicting: bool = False  # the pending step would evict it; CLEO would still inject it
    missing: bool = False  # no row holds this id when the marks were read (deleted meanwhile)
    detail: dict[str, Any] = field(default_factory=dict)  # per section: confidence, type, date…
    problem: str | None = None  # why CLEO's generator would stop at this row
    tokenizer_tokens: int | None = None  # the line's tokens with cleo-tui's chosen tokenizer

    @property
    def marks(self) -> list[str]:
        """Short words for the marks: evicted, hidden, evicting, missing."""
        flags = (("evicted", self.evicted), ("hidden", self.hidden), ("evicting", self.evicting),
                 ("missing", self.missing))
        return [name for name, on in flags if on]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "table": self.table, "line": self.line, "tokens": self.tokens,
                               "marks": self.marks, **self.detail}
        if self.tokenizer_tokens is not None:
            out["tokenizer_tokens"] = self.tokenizer_tokens
        if self.problem:
            out["problem"] = self.problem
        return out


@dataclass(frozen=True)
class BridgeSection:
    """A section of the bridge; `note` says why it is empty when CLEO's query failed."""

    name: str
    heading: str
    items: tuple[BridgeItem, ...]
    note: str | None = None

    @property
    def title(self) -> str:
        return self.heading.removeprefix("## ")

    def lines(self) -> list[str]:
        """The section's markdown lines as CLEO writes them (nothing at all when empty)."""
        return [self.heading, "", *(i.line for i in self.items), ""] if self.items else []

    @property
    def tokens(self) -> int:
        return chars4_tokens("\n".join(self.lines())) if self.items else 0


# -- the sections -------------------------------------------------------------------------------

def _date10(value: Any, what: str) -> str:
    """`(value ?? '').slice(0, 10)`."""
    return "" if value is None else js_slice(value, 10, what)


def _render(name: str, row: sqlite3.Row | dict[str, Any], extra: dict[str, Any]) -> str:
    """The line CLEO writes for `row` of section `name` (raises JsTypeError where Node would throw)."""
    ident = js_text(row["id"])
    if name == DECISIONS:
        return (f"- [{ident}] {js_slice(row['decision'], 300, 'decision')} "
                f"({_date10(row['created_at'], 'created_at')})")
    if name == LEARNINGS:
        return f"- [{ident}] {js_slice(row['insight'], 400, 'insight')} (confidence: {extra['confidence']})"
    if name == FOLLOW:
        return f"- [{ident}] {js_slice(row['pattern'], 300, 'pattern')} ({js_text(row['type'])})"
    if name == AVOID:
        return f"- [{ident}] AVOID: {js_slice(row['pattern'], 300, 'pattern')}"
    date = _date10(row["created_at"], "created_at")
    return f"- [{ident}] {date}: {js_slice(row['title'], 200, 'title')}"


def effective_confidence(confidence: Any, created_at: Any, updated_at: Any, now_ms: float) -> float:
    """CLEO's decayed confidence: parseFloat(confidence) × 0.5^(age / 90 days); NaN when the date is unreadable."""
    reference = updated_at if js_truthy(updated_at) else created_at
    age_days = (now_ms - js_date_ms(reference)) / MS_PER_DAY
    age_days = age_days if math.isnan(age_days) else max(0.0, age_days)
    raw = js_parse_float(confidence)
    raw = raw if js_truthy(raw) else 0.0
    return float(raw * DECAY_RATE ** (age_days / DECAY_HALF_LIFE_DAYS))


def _learnings(rows: list[sqlite3.Row], now_ms: float) -> list[tuple[sqlite3.Row, dict[str, Any]]]:
    """Decay, keep ≥ 0.6, strongest first (a stable sort: ties keep the query's order), 8 at most."""
    scored = [(row, effective_confidence(row["confidence"], row["created_at"], row["updated_at"], now_ms))
              for row in rows]
    kept = [(row, value) for row, value in scored if value >= MIN_EFFECTIVE_CONFIDENCE]
    kept.sort(key=lambda pair: -pair[1])
    return [(row, {"confidence": js_to_fixed(value, 2), "raw_confidence": js_text(row["confidence"]),
                   "effective_confidence": value,
                   "age_from": "updated_at" if js_truthy(row["updated_at"]) else "created_at"})
            for row, value in kept[:MAX_LEARNINGS]]


def _details(name: str, row: sqlite3.Row) -> dict[str, Any]:
    if name in (FOLLOW, AVOID):
        return {"type": js_text(row["type"]), "extracted_at": row["extracted_at"]}
    return {"created_at": row["created_at"]}


def _query_section(brain: Brain, query: SectionQuery,
                   skip: frozenset[str] | None = None) -> tuple[list[sqlite3.Row], str | None]:
    """CLEO's rows for a section; a failing query gives none, as CLEO's try/catch does, with the reason.

    `skip` (not None): as eviction intends — without evicted rows and without the ids in `skip`,
    the first `limit` of what is left in CLEO's order.
    """
    if not brain.features.has_table(query.table):
        return [], f"no {query.table} table: CLEO's query fails, so it writes no section"
    try:
        if skip is None:
            return brain.query(query.sql(), (query.limit,)), None
        live_only = brain.features.has_column(query.table, "invalid_at")
        rows: list[sqlite3.Row] = []
        with brain.lock:
            for row in brain.conn.execute(query.sql(live_only=live_only)):
                if js_text(row[0]) not in skip:
                    rows.append(row)
                    if len(rows) == query.limit:
                        break
        return rows, None
    except sqlite3.DatabaseError as exc:
        return [], f"CLEO's query fails here ({one_line(exc, 120)}), so it writes no section"


def read_section(brain: Brain, query: SectionQuery, now_ms: float,
                 skip: frozenset[str] | None = None) -> BridgeSection:
    """One section's items as CLEO would write them (marks are added later); `skip`: see _query_section."""
    rows, note = _query_section(brain, query, skip)
    chosen = (_learnings(rows, now_ms) if query.name == LEARNINGS
              else [(row, _details(query.name, row)) for row in rows[:query.limit]])
    items = []
    for row, extra in chosen:
        problem = None
        try:
            line = _render(query.name, row, extra)
        except JsTypeError as exc:
            line, problem = f"- [{js_text(row['id'])}] (CLEO stops here)", str(exc)
        items.append(BridgeItem(id=js_text(row["id"]), section=query.name, table=query.table, line=line,
                                tokens=chars4_tokens(line), detail=extra, problem=problem))
    return BridgeSection(query.name, query.heading, tuple(items), note)


# -- the marks ----------------------------------------------------------------------------------

def _row_states(brain: Brain, table: str, ids: list[str]) -> dict[str, tuple[bool, bool]]:
    """id → (evicted, hidden from CLEO's search) for the rows of `table` that exist."""
    columns = brain.features.columns(table)
    evicted = "invalid_at IS NOT NULL" if "invalid_at" in columns else "0"
    hidden = (f"quality_score IS NOT NULL AND quality_score < {SEARCH_QUALITY_FLOOR}"
              if "quality_score" in columns else "0")
    found: dict[str, tuple[bool, bool]] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        sql = f"SELECT id, {evicted}, {hidden} FROM {table} WHERE id IN ({', '.join('?' for _ in chunk)})"
        for ident, is_evicted, is_hidden in brain.query(sql, chunk):
            found[js_text(ident)] = (bool(is_evicted), bool(is_hidden))
    return found


def mark_items(brain: Brain, sections: Iterable[BridgeSection], evicting: frozenset[str]) -> list[BridgeSection]:
    """The sections with each item's marks: evicted, hidden, evicting (ids of the pending step), missing."""
    sections = list(sections)
    by_table: dict[str, list[str]] = {}
    for item in (i for s in sections for i in s.items):
        by_table.setdefault(item.table, []).append(item.id)
    states: dict[tuple[str, str], tuple[bool, bool]] = {}
    read: set[str] = set()
    for table, ids in by_table.items():
        try:
            for ident, found in _row_states(brain, table, ids).items():
                states[(table, ident)] = found
        except sqlite3.DatabaseError:
            continue  # the rows were read a moment ago; no marks rather than a failure
        read.add(table)
    out = []
    for section in sections:
        items = []
        for item in section.items:
            state = states.get((item.table, item.id))
            items.append(replace(item, evicted=bool(state and state[0]), hidden=bool(state and state[1]),
                                 missing=state is None and item.table in read, evicting=item.id in evicting))
        out.append(replace(section, items=tuple(items)))
    return out
