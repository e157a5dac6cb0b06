"""What CLEO injects at session start: its memory bridge, selected as CLEO selects it.

CLEO's memory bridge (`.cleo/memory-bridge.md`, @-referenced from AGENTS.md) is built by
`generateMemoryBridgeContent` in CLEO's packages/core/src/memory/memory-bridge.ts (read in
kryptobaseddev/cleo at 77fb47e). This module runs the same queries on the brain and writes the
same lines, so each item's text, and so its token count, is what the agent reads:

- **Last Session**: `getLastHandoff` (sessions/handoff.ts) reads CLEO's `sessions` table (the
  task store, in the same `cleo.db` since 2026.6.0, in `tasks.db` before): ended sessions with an
  `ended_at`, newest end first, the first whose `handoff_json` parses (else `debrief_json`'s
  `handoff`). No sessions table here: the section is "unknown", said so.
- **Recent Decisions**: the 5 newest `brain_decisions` by `created_at`.
- **Key Learnings**: up to 24 candidates with `CAST(confidence AS REAL) >= 0.3` and an insight
  not starting `Completed:`, by confidence then `created_at`; each decayed by
  0.5^(age / 90 days), age counted from `updated_at` (or `created_at` when it is empty); those
  still ≥ 0.6 kept, strongest first, 8 at most, shown with the decayed confidence.
- **Patterns to Follow** (`success`, `workflow`, `optimization`) and **Anti-Patterns to Avoid**
  (`failure`, `blocker`): 8 each, newest `extracted_at` first, without CLEO's noise
  (`Recurring label…`, `Test pattern…`, `test`, `Audit probe:…`, 20 characters or fewer).
- **Recent Observations**: the 10 newest by `created_at` whose type is not `change` and whose
  title does not start `File changed:`, `Task start:`, `Task complete:` or `[hook]`.

None of these queries looks at `invalid_at` (nor at `quality_score`): rows cleo-tui evicted,
and rows hidden from CLEO's search, are injected all the same. `Bridge` marks them, and the
rows a pending step would evict (`evicting`): the step does not change what CLEO injects.
Beside it, `Bridge.intended` is the bridge *as eviction intends* (evicted rows and the step's left
out, the next rows in CLEO's order in their places): not what CLEO does, what a user may expect.

Not reproduced: CLEO's context-aware variant (`generateContextAwareContent`: up to 5
`hybridSearch` hits and a cut to `brain.memoryBridge.maxTokens` at 4 characters a token) — no
caller in CLEO passes the scope it needs (`refreshMemoryBridge(projectRoot)` everywhere, and
`cleo refresh-memory` calls `writeMemoryBridge` directly), so the file CLEO writes is never cut;
the global config (`~/.cleo/config.json`) is not read, only the project's.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.connection import connect
from cleo_tui.brain.project_config import load_project_settings
from cleo_tui.brain.store import Brain
from cleo_tui.memory.js_values import (
    JsTypeError,
    js_date_ms,
    js_iso_seconds,
    js_join,
    js_parse_float,
    js_slice,
    js_text,
    js_to_fixed,
    js_truthy,
    utf16_units,
)
from cleo_tui.safe_text import one_line, plural

CHARS_PER_TOKEN = 4  # CLEO's own estimate (its maxTokens cut); cleo-tui's chars4 tokenizer counts the same way
DECAY_RATE = 0.5
DECAY_HALF_LIFE_DAYS = 90
MIN_EFFECTIVE_CONFIDENCE = 0.6
MS_PER_DAY = 86_400_000
MAX_OBSERVATIONS, MAX_LEARNINGS, MAX_PATTERNS, MAX_DECISIONS = 10, 8, 8, 5
DEFAULT_MAX_TOKENS = 2000
DEFAULT_MODE = "cli"
SEARCH_QUALITY_FLOOR = 0.3  # CLEO's `memory find` drops rows whose quality_score is below this
BRIDGE_FILE = "memory-bridge.md"
REFRESH_COMMAND = ("cleo", "refresh-memory")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

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


@dataclass(frozen=True)
class Handoff:
    """The "Last Session" section: `state` is found, none (CLEO writes no section) or unknown."""

    state: str
    session_id: str | None = None
    lines: tuple[str, ...] = ()
    note: str = ""
    problem: str | None = None

    @property
    def tokens(self) -> int:
        return chars4_tokens("\n".join(self.lines)) if self.lines else 0

    def to_json(self) -> dict[str, Any]:
        return {"state": self.state, "session_id": self.session_id, "lines": list(self.lines),
                "tokens": self.tokens, "note": self.note, **({"problem": self.problem} if self.problem else {})}


@dataclass(frozen=True)
class BridgeSettings:
    """CLEO's `brain.memoryBridge` settings from the project's config.json (its defaults when absent)."""

    mode: str = DEFAULT_MODE
    context_aware: bool = True
    max_tokens: int = DEFAULT_MAX_TOKENS
    config_path: str | None = None
    warning: str | None = None

    @property
    def mode_note(self) -> str:
        """What CLEO does with the bridge in this mode."""
        if self.mode == "file":
            return ("mode 'file': CLEO writes .cleo/memory-bridge.md and AGENTS.md @-references it; "
                    "this is what it writes")
        if self.mode == "disabled":
            return ("mode 'disabled': CLEO writes no bridge and injects none; this is what it would write "
                    "in mode 'file'")
        return (f"mode {one_line(self.mode, 20)!r}: CLEO writes no memory-bridge.md (its default since "
                "T999); AGENTS.md tells the agent to run `cleo memory digest --brief` instead. This is what "
                "`cleo refresh-memory` writes in mode 'file'")


@dataclass(frozen=True)
class OnDisk:
    """`.cleo/memory-bridge.md` beside the brain: present, and whether it says what CLEO would write now."""

    path: str | None
    exists: bool
    matches: bool | None = None  # compared as CLEO compares: without the "Auto-generated at" line
    written_at: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "exists": self.exists, "matches": self.matches, "written_at": self.written_at}


@dataclass(frozen=True)
class Bridge:
    """The whole bridge: the handoff, the sections in CLEO's order, the text, its tokens, the marks."""

    generated_at: str
    handoff: Handoff
    sections: tuple[BridgeSection, ...]
    settings: BridgeSettings = field(default_factory=BridgeSettings)
    on_disk: OnDisk = field(default_factory=lambda: OnDisk(None, False))
    evicting_count: int = 0  # how many ids the pending step evicts (0: no step)
    tokenizer: str | None = None  # cleo-tui's tokenizer, when one other than chars4 was asked for
    tokenizer_tokens: int | None = None
    honours_eviction: bool = False  # built as eviction intends: evicted rows (and the step's) left out
    intended: Bridge | None = None  # the same bridge as eviction intends, when asked for

    def section(self, name: str) -> BridgeSection:
        return next(s for s in self.sections if s.name == name)

    @property
    def items(self) -> list[BridgeItem]:
        return [item for s in self.sections for item in s.items]

    def ids(self, *names: str) -> list[str]:
        return [i.id for name in names for i in self.section(name).items]

    @property
    def text(self) -> str:
        """The markdown CLEO writes (lines joined by newlines; it ends with one)."""
        return "\n".join(document_lines(self.generated_at, self.handoff.lines,
                                        [line for s in self.sections for line in s.lines()]))

    @property
    def tokens(self) -> int:
        return chars4_tokens(self.text)

    @property
    def failure(self) -> str | None:
        """Why CLEO's generator would throw and write no bridge at all (None: it writes one)."""
        if self.handoff.problem:
            return f"the last session's handoff: {self.handoff.problem}"
        for item in self.items:
            if item.problem:
                return f"{SECTION_TITLES[item.section]} [{one_line(item.id, 40)}]: {item.problem}"
        return None

    def marked(self, mark: str) -> list[BridgeItem]:
        return [i for i in self.items if mark in i.marks]

    def after_line(self, step: str = "this step") -> str:
        """What a pending step (its ids in `evicting`) changes in the bridge: nothing, and which rows that hides."""
        evicting = self.marked("evicting")
        same = f"After {step} CLEO injects the same {len(self.items)} rows (its bridge ignores invalid_at)"
        if not evicting:
            return f"{same}; none of them is among the {self.evicting_count:,} rows the step evicts."
        return (f"{same}: {len(evicting)} of them are among the {self.evicting_count:,} rows the step evicts, "
                "and CLEO will still inject them.")

    def summary_lines(self) -> list[str]:
        """Sentences about the marks: what eviction does not change in what CLEO injects."""
        lines = []
        evicted, hidden = self.marked("evicted"), self.marked("hidden")
        if evicted:
            lines.append(f"{plural(len(evicted), 'injected row')} are evicted: CLEO's bridge ignores invalid_at, "
                         "so the agent still reads them.")
        if hidden:
            lines.append(f"{plural(len(hidden), 'injected row')} are hidden from CLEO's search (quality below 0.3); "
                         "the bridge injects them anyway.")
        if self.evicting_count:
            lines.append(self.after_line())
        if self.failure:
            lines.append(f"CLEO's generator would stop here and write no bridge: {self.failure}.")
        return lines

    def differences(self, other: Bridge) -> tuple[list[str], list[str]]:
        """(ids this bridge injects that `other` does not, ids `other` injects that this one does not)."""
        mine, theirs = [i.id for i in self.items], [i.id for i in other.items]
        return [i for i in mine if i not in set(theirs)], [i for i in theirs if i not in set(mine)]

    def intended_json(self) -> dict[str, Any] | None:
        """The bridge as eviction intends, in brief: ids per section, tokens, what leaves and what comes in."""
        if self.intended is None:
            return None
        other = self.intended
        gone, instead = self.differences(other)
        return {"observations": other.ids(OBSERVATIONS), "learnings": other.ids(LEARNINGS),
                "patterns": other.ids(FOLLOW, AVOID), "decisions": other.ids(DECISIONS), "tokens": other.tokens,
                "left_out": gone, "instead": instead}

    def to_json(self) -> dict[str, Any]:
        """`bridge --json`: ids per section (the contract), then the detail."""
        out: dict[str, Any] = {
            "observations": self.ids(OBSERVATIONS),
            "learnings": self.ids(LEARNINGS),
            "patterns": self.ids(FOLLOW, AVOID),
            "decisions": self.ids(DECISIONS),
            "tokens": self.tokens,
            "chars": utf16_units(self.text),
            "handoff": self.handoff.to_json(),
            "sections": {s.name: {"title": s.title, "tokens": s.tokens, "note": s.note,
                                  "items": [i.to_json() for i in s.items]} for s in self.sections},
            "marks": {"evicted_injected": [i.id for i in self.marked("evicted")],
                      "hidden_injected": [i.id for i in self.marked("hidden")],
                      "evicting_injected": [i.id for i in self.marked("evicting")],
                      "evicting": self.evicting_count},
            "generated_at": self.generated_at,
            "mode": self.settings.mode,
            "mode_note": self.settings.mode_note,
            "max_tokens": self.settings.max_tokens,
            "cut_applied": False,
            "failure": self.failure,
            "on_disk": self.on_disk.to_json(),
            "text": self.text,
        }
        if self.intended is not None:
            out["as_eviction_intends"] = self.intended_json()
        if self.tokenizer:
            out["tokenizer"] = self.tokenizer
            out["tokenizer_tokens"] = self.tokenizer_tokens
        return out


def document_lines(generated_at: str, handoff: Sequence[str], body: Sequence[str]) -> list[str]:
    """CLEO's header, the handoff section, then the sections' lines."""
    return ["# CLEO Memory Bridge", "", f"> Auto-generated at {generated_at}",
            "> Do not edit manually. Regenerate with `cleo refresh-memory`.", "", *handoff, *body]


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


# -- the handoff --------------------------------------------------------------------------------

SESSION_COLUMNS = ("id", "status", "ended_at", "handoff_json", "debrief_json")


def _no_js_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # JSON.parse refuses NaN and Infinity; Python's json accepts them


def _js_json(text: str) -> Any:
    return json.loads(text, parse_constant=_no_js_constants)


def pick_handoff(rows: Iterable[sqlite3.Row | dict[str, Any]]) -> tuple[str, Any] | None:
    """`getLastHandoff`: ended sessions (status 'ended' and an ended_at), newest end first, the first whose
    handoff_json parses, else whose debrief_json holds a truthy `handoff`."""
    ended = [r for r in rows if r["status"] == "ended" and js_truthy(r["ended_at"])]
    ended.sort(key=lambda r: _sort_key(js_date_ms(r["ended_at"])))
    for row in ended:
        if isinstance(row["handoff_json"], str):
            try:
                return js_text(row["id"]), _js_json(row["handoff_json"])
            except (ValueError, RecursionError):
                pass
        if isinstance(row["debrief_json"], str):
            try:
                debrief = _js_json(row["debrief_json"])
            except (ValueError, RecursionError):
                continue
            if isinstance(debrief, dict) and js_truthy(debrief.get("handoff")):
                return js_text(row["id"]), debrief["handoff"]
    return None


def _sort_key(ms: float) -> tuple[int, float]:
    """Newest first; an unreadable end date (NaN in JavaScript, whose sort then leaves it anywhere) last."""
    return (1, 0.0) if math.isnan(ms) else (0, -ms)


def _list_field(handoff: dict[str, Any], key: str) -> str | None:
    """`h[key].length > 0 ? h[key].join(', ') : skip`, as JavaScript runs it."""
    value = handoff.get(key)
    if value is None:
        raise JsTypeError(f"{key} is missing, and CLEO reads its .length")
    if isinstance(value, list):
        return js_join(value, ", ") if value else None
    if isinstance(value, str) and value:
        raise JsTypeError(f"{key} is text, which has no .join()")
    return None


def handoff_lines(session_id: str, handoff: Any) -> list[str]:
    """The "Last Session" lines CLEO writes for a handoff (JsTypeError where Node would throw)."""
    if not isinstance(handoff, dict):
        if handoff is None:
            raise JsTypeError("the handoff is null")
        handoff = {}  # a number, text or list: every field reads as undefined
    lines = ["## Last Session", "", f"- **Session**: {session_id}"]
    if js_truthy(handoff.get("lastTask")):
        lines.append(f"- **Last focused task**: {js_text(handoff['lastTask'])}")
    for key, label in (("tasksCompleted", "Completed"), ("nextSuggested", "Next suggested"),
                       ("openBlockers", "Open blockers")):
        text = _list_field(handoff, key)
        if text is not None:
            lines.append(f"- **{label}**: {text}")
    if js_truthy(handoff.get("note")):
        lines.append(f"- **Note**: {js_text(handoff['note'])}")
    return [*lines, ""]


def _sessions_source(brain: Brain) -> tuple[sqlite3.Connection | None, str, bool]:
    """(connection, where, owned): the brain's own sessions table, else a `tasks.db` beside an old brain.db."""
    if brain.features.has_table("sessions"):
        return brain.conn, "sessions", False
    beside = Path(brain.path).parent / "tasks.db"
    if Path(brain.path).parent.name == ".cleo" and beside.is_file():
        try:
            return connect(beside, True), f"{beside.name}'s sessions", True
        except Exception:
            return None, str(beside.name), False
    return None, "", False


def read_handoff(brain: Brain) -> Handoff:
    """The Last Session section CLEO would write, or why there is none (or why it cannot be known)."""
    conn, where, owned = _sessions_source(brain)
    if conn is None:
        return Handoff("unknown", note="no sessions table in this brain file (CLEO keeps sessions in its task "
                                       "store); the Last Session section cannot be shown")
    try:
        return _handoff_from(brain, conn, where)
    finally:
        if owned:
            conn.close()


def _handoff_from(brain: Brain, conn: sqlite3.Connection, where: str) -> Handoff:
    try:
        with brain.lock:
            have = {r[1] for r in conn.execute("PRAGMA table_info(sessions)")}
            lacking = [c for c in SESSION_COLUMNS if c not in have]
            if lacking:
                return Handoff("none", note=f"{where} lacks {', '.join(lacking)}: CLEO's read of its sessions "
                                            "fails, so it writes no Last Session section")
            rows = conn.execute(f"SELECT {', '.join(SESSION_COLUMNS)} FROM sessions").fetchall()
    except sqlite3.DatabaseError as exc:
        return Handoff("unknown", note=f"{where} could not be read ({one_line(exc, 100)})")
    picked = pick_handoff([dict(zip(SESSION_COLUMNS, row, strict=True)) for row in rows])
    if picked is None:
        return Handoff("none", note="no ended session holds a handoff: CLEO writes no Last Session section")
    session_id, handoff = picked
    try:
        return Handoff("found", session_id, tuple(handoff_lines(session_id, handoff)), note=f"from {where}")
    except JsTypeError as exc:
        return Handoff("found", session_id, (), note=f"from {where}", problem=str(exc))


# -- settings, the file on disk, the whole bridge ------------------------------------------------

def bridge_settings(brain: Brain) -> BridgeSettings:
    """`brain.memoryBridge` from the project's config.json, CLEO's defaults where absent."""
    settings = load_project_settings(brain)
    node: Any = settings.raw.get("brain") if isinstance(settings.raw, dict) else None
    node = node.get("memoryBridge") if isinstance(node, dict) else None
    node = node if isinstance(node, dict) else {}
    mode = node.get("mode") if isinstance(node.get("mode"), str) else DEFAULT_MODE
    max_tokens = node.get("maxTokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, (int, float)):
        max_tokens = DEFAULT_MAX_TOKENS
    return BridgeSettings(mode=mode, context_aware=node.get("contextAware") is not False,
                          max_tokens=int(max_tokens),
                          config_path=str(settings.path) if settings.path else None, warning=settings.warning)


def project_dir(brain: Brain) -> Path | None:
    """The CLEO project the brain belongs to (the folder holding its `.cleo`), or None."""
    folder = Path(brain.path).resolve().parent
    return folder.parent if folder.name == ".cleo" else None


def _strip_stamp(text: str) -> str:
    return "\n".join("" if line.startswith("> Auto-generated at ") else line for line in text.split("\n"))


def read_on_disk(brain: Brain, text: str) -> OnDisk:
    """The bridge file CLEO last wrote, compared with `text` as CLEO compares (the stamp line left out)."""
    project = project_dir(brain)
    if project is None:
        return OnDisk(None, False)
    path = project / ".cleo" / BRIDGE_FILE
    try:
        stored = path.read_bytes()[:4_000_000].decode("utf-8", "replace")
    except OSError:
        return OnDisk(str(path), False)
    stamp = next((line.removeprefix("> Auto-generated at ") for line in stored.split("\n")
                  if line.startswith("> Auto-generated at ")), None)
    return OnDisk(str(path), True, _strip_stamp(stored) == _strip_stamp(text), stamp)


def build_bridge(brain: Brain, now: datetime, evicting: Iterable[str] = frozenset(),
                 count_tokens: Callable[[str], int] | None = None, tokenizer_name: str | None = None,
                 with_intended: bool = False, honour_eviction: bool = False) -> Bridge:
    """The bridge CLEO would write at `now`, marked; `evicting`: ids a pending step would evict.

    `count_tokens` (with `tokenizer_name`) adds each line's and the document's count with cleo-tui's
    chosen tokenizer beside CLEO's 4-characters-a-token estimate. `with_intended` also builds
    `intended`: the bridge as eviction intends (`honour_eviction`: evicted rows and the step's left out,
    the next rows in CLEO's order taking their places) — not what CLEO does, what the user may expect.
    """
    evicting = frozenset(str(i) for i in evicting)
    now_ms = float((now - EPOCH) // timedelta(milliseconds=1))  # Date.now(): whole milliseconds
    skip = evicting if honour_eviction else None
    sections = [read_section(brain, query, now_ms, skip) for query in SECTION_QUERIES]
    sections = mark_items(brain, sections, evicting)
    if count_tokens is not None:
        sections = [replace(s, items=tuple(replace(i, tokenizer_tokens=count_tokens(i.line)) for i in s.items))
                    for s in sections]
    bridge = Bridge(js_iso_seconds(now), read_handoff(brain), tuple(sections), bridge_settings(brain),
                    evicting_count=len(evicting), honours_eviction=honour_eviction)
    if not honour_eviction:
        bridge = replace(bridge, on_disk=read_on_disk(brain, bridge.text))
    if count_tokens is not None:
        bridge = replace(bridge, tokenizer=tokenizer_name, tokenizer_tokens=count_tokens(bridge.text))
    if with_intended and not honour_eviction:
        bridge = replace(bridge, intended=build_bridge(brain, now, evicting, count_tokens, tokenizer_name,
                                                       honour_eviction=True))
    return bridge


def injected(brain: Brain, evicting: Iterable[str] = frozenset(), now: datetime | None = None) -> Bridge:
    """What CLEO injects now (cleo-tui's clock: $CLEO_TUI_NOW in tests), marked with the rows `evicting`
    (a pending step's ids) would evict — for any pane or command that asks."""
    from cleo_tui.brain.clock import current_time

    return build_bridge(brain, now or current_time(), evicting)


def read_bridge(brain: Brain, now: datetime, evicting: Iterable[str] = frozenset(),
                count_tokens: Callable[[str], int] | None = None, tokenizer_name: str | None = None,
                with_intended: bool = False) -> Bridge:
    """`build_bridge` on a reader connection of its own (for a worker thread)."""
    reader = brain.reader()
    try:
        return build_bridge(reader, now, evicting, count_tokens, tokenizer_name, with_intended)
    finally:
        reader.close()


# -- regenerating through CLEO ------------------------------------------------------------------

REFRESH_TIMEOUT_S = 120


@dataclass(frozen=True)
class RefreshOutcome:
    """What `cleo refresh-memory` answered: its exit status and its output (untrusted text)."""

    command: tuple[str, ...]
    cwd: str
    returncode: int | None
    stdout: str
    stderr: str
    error: str | None = None  # it could not be run (or timed out)

    @property
    def ok(self) -> bool:
        return self.error is None and self.returncode == 0

    def to_json(self) -> dict[str, Any]:
        return {"command": list(self.command), "cwd": self.cwd, "returncode": self.returncode,
                "stdout": self.stdout, "stderr": self.stderr, "error": self.error}


def cleo_executable() -> str | None:
    """The `cleo` on PATH, or None."""
    import shutil

    return shutil.which(REFRESH_COMMAND[0])


def refresh_through_cleo(project: Path, executable: str | None = None) -> RefreshOutcome:
    """Run `cleo refresh-memory` in `project`: CLEO regenerates its bridge; cleo-tui never writes the file."""
    import subprocess

    program = executable or cleo_executable() or REFRESH_COMMAND[0]
    command = (program, *REFRESH_COMMAND[1:])
    try:
        done = subprocess.run(command, cwd=project, capture_output=True, timeout=REFRESH_TIMEOUT_S,
                              stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        return RefreshOutcome(command, str(project), None, "", "",
                              error=f"it did not finish within {REFRESH_TIMEOUT_S} s and was stopped")
    except OSError as exc:
        return RefreshOutcome(command, str(project), None, "", "", error=f"it could not be run ({exc.strerror})")
    return RefreshOutcome(command, str(project), done.returncode,
                          done.stdout[:100_000].decode("utf-8", "replace"),
                          done.stderr[:100_000].decode("utf-8", "replace"))
