"""The life of one memory: how it was written, what touched it, its edges, why it is gone.

`memory_life(brain, id)` answers for an observation, a pattern or a learning of a
CLEO brain, a memory of a hippo store, and an id that no row holds but edges,
traces, outcomes or cleo-tui's journal still name ("missing": deleted outside
cleo-tui, or forgotten by hippo). It returns None for an id named nowhere.
Pure data: the CLI and the TUI render the same `MemoryLife`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.migrations import RUN_CHANGES, RUNS, TRACE_OUTCOMES, TRACE_RESULTS, TRACES
from cleo_tui.brain.store import Brain
from cleo_tui.memory import causes as c
from cleo_tui.memory.cleo_marks import CleoMark, KeepAdvice, cleo_marks, keep_advice
from cleo_tui.memory.evidence import EvictionCause, consolidation_events, explain_eviction, sweep_cause
from cleo_tui.memory.mapping import as_text
from cleo_tui.safe_text import plural

LifeState = Literal["live", "evicted", "superseded", "missing", "forgotten"]
LifeKind = Literal["observation", "pattern", "learning", "hippo", "unknown"]  # unknown: missing or forgotten
LIVE: Final = "live"
EVICTED: Final = "evicted"
MISSING: Final = "missing"
FORGOTTEN: Final = "forgotten"
SUPERSEDED: Final = "superseded"
HIPPO_MEMORIES = "memories"
MENTION_LIMIT = 200
TITLE_CHARS = 120


@dataclass(frozen=True)
class Written:
    """When and how a memory was written (absent columns read as None)."""

    at: str | None
    source_type: str | None
    session_id: str | None
    agent: str | None
    type: str | None
    source_confidence: str | None = None


@dataclass(frozen=True)
class JournalStep:
    """One cleo-tui step that changed the row: the run and the values before and after."""

    run_id: int
    kind: str
    at: str
    summary: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    undone_by: int | None


@dataclass(frozen=True)
class EdgeRef:
    """A graph edge to or from the memory; `other_exists` says whether its far end has a row."""

    direction: str  # 'out' or 'in'
    other_id: str
    edge_type: str
    provenance: str | None
    created_at: str | None
    weight: float | None
    other_exists: bool


@dataclass(frozen=True)
class Mention:
    """Somewhere an id is named: `where` is edge, node, trace, outcome or journal."""

    where: str
    ref: str
    at: str | None


@dataclass(frozen=True)
class TraceHit:
    """A recall trace that returned the memory."""

    trace_id: int
    ts: str
    rank: int
    score: float
    pipeline: str


@dataclass
class MemoryLife:
    id: str
    kind: LifeKind   # observation, pattern, learning, hippo, or unknown (missing)
    state: LifeState  # live, evicted, superseded, missing, forgotten
    title: str = ""
    written: Written | None = None
    journal: list[JournalStep] = field(default_factory=list)
    edges: list[EdgeRef] = field(default_factory=list)
    cause: EvictionCause | None = None
    mentions: list[Mention] = field(default_factory=list)
    traces: list[TraceHit] = field(default_factory=list)
    cleo_marks: list[CleoMark] = field(default_factory=list)  # what CLEO's automation will do to it
    keep: KeepAdvice | None = None  # and whether cleo-tui can make CLEO keep it

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "kind": self.kind, "state": self.state, "title": self.title,
            "written": None if self.written is None else self.written.__dict__,
            "journal": [s.__dict__ for s in self.journal], "edges": [e.__dict__ for e in self.edges],
            "cause": None if self.cause is None else self.cause.to_dict(),
            "mentions": [m.__dict__ for m in self.mentions], "traces": [t.__dict__ for t in self.traces],
            "cleo_marks": [m.to_dict() for m in self.cleo_marks],
            "keep_in_cleo": None if self.keep is None else self.keep.to_dict(),
        }


@dataclass(frozen=True)
class _Spec:
    kind: LifeKind
    table: str
    title: str
    date: str
    gone: str  # the column set when the row is evicted


_SPECS = (
    _Spec("observation", cs.OBSERVATIONS, "title", "created_at", "invalid_at"),
    _Spec("pattern", cs.PATTERNS, "pattern", "extracted_at", "invalid_at"),
    _Spec("learning", cs.LEARNINGS, "insight", "created_at", "invalid_at"),
    _Spec("hippo", HIPPO_MEMORIES, "content", "created", "superseded_by"),
)
_NODE_KINDS = ("observation", "pattern", "learning", "decision")


def _text(value: Any) -> str | None:
    return None if value is None else as_text(value)


def _col(brain: Brain, table: str, column: str) -> str:
    return f'"{column}"' if brain.features.has_column(table, column) else "NULL"


def _find_row(brain: Brain, memory_id: str) -> tuple[_Spec, dict[str, Any]] | None:
    for spec in _SPECS:
        if not brain.features.has_column(spec.table, "id"):
            continue
        cols = {"title": spec.title, "date": spec.date, "gone": spec.gone, "source_type": "source_type",
                "session_id": "source_session_id", "agent": "agent", "type": "type",
                "source_confidence": "source_confidence", "narrative": "narrative"}
        select = ", ".join(f"{_col(brain, spec.table, col)} AS {name}" for name, col in cols.items())
        row = brain.query_one(f'SELECT {select} FROM "{spec.table}" WHERE id = ?', (memory_id,))
        if row is not None:
            return spec, dict(zip(row.keys(), row, strict=False))
    return None


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0][:TITLE_CHARS] if lines else ""


def _key_json(memory_id: str) -> str:
    return json.dumps({"id": memory_id}, sort_keys=True, ensure_ascii=False)  # as the journal writes it


def _loads(text: Any) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(as_text(text))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def journal_steps(brain: Brain, table: str, memory_id: str) -> list[JournalStep]:
    """Every cleo-tui change to the row, oldest first."""
    if not brain.supports("journal"):
        return []
    rows = brain.query(
        f"SELECT r.id, r.kind, r.created_at, r.summary, ch.before_json, ch.after_json, r.undone_by "
        f"FROM {RUN_CHANGES} ch JOIN {RUNS} r ON r.id = ch.run_id WHERE ch.table_name = ? AND ch.row_key = ? "
        "ORDER BY ch.run_id, ch.seq", (table, _key_json(memory_id)))
    return [JournalStep(int(r[0]), as_text(r[1]), as_text(r[2]), as_text(r[3]), _loads(r[4]), _loads(r[5]),
                        None if r[6] is None else int(r[6])) for r in rows]


def _exists(brain: Brain, node_id: str) -> bool:
    kind, _, record_id = node_id.partition(":")
    table = {"observation": cs.OBSERVATIONS, "pattern": cs.PATTERNS, "learning": cs.LEARNINGS,
             "decision": cs.DECISIONS}.get(kind)
    if table is None:
        return brain.features.has_table(cs.NODES) and brain.scalar(
            f"SELECT count(*) FROM {cs.NODES} WHERE id = ?", (node_id,)) > 0
    return brain.features.has_column(table, "id") and brain.query_one(
        f'SELECT 1 FROM "{table}" WHERE id = ?', (record_id,)) is not None


def edges_of_node(brain: Brain, node_id: str, limit: int = MENTION_LIMIT) -> list[EdgeRef]:
    """Edges from and to a graph node, each saying whether its other end still exists."""
    if not brain.supports("graph_edges"):
        return []
    prov, created, weight = (_col(brain, cs.EDGES, n) for n in ("provenance", "created_at", "weight"))
    out: list[EdgeRef] = []
    for direction, mine, other in (("out", "from_id", "to_id"), ("in", "to_id", "from_id")):
        rows = brain.query(f"SELECT {other}, edge_type, {prov}, {created}, {weight} FROM {cs.EDGES} "
                           f"WHERE {mine} = ? ORDER BY {created} LIMIT ?", (node_id, limit))
        for r in rows:
            other_id = as_text(r[0])
            out.append(EdgeRef(direction, other_id, as_text(r[1]), _text(r[2]), _text(r[3]),
                               None if r[4] is None else float(r[4]), _exists(brain, other_id)))
    return out


def trace_hits(brain: Brain, memory_id: str, limit: int = MENTION_LIMIT) -> list[TraceHit]:
    """Recall traces whose results include the id, newest first."""
    if not (brain.features.has_table(TRACE_RESULTS) and brain.features.has_table(TRACES)):
        return []
    rows = brain.query(f"SELECT t.id, t.ts, r.result_rank, r.score, t.pipeline FROM {TRACE_RESULTS} r "
                       f"JOIN {TRACES} t ON t.id = r.trace_id WHERE r.memory_id = ? ORDER BY t.id DESC LIMIT ?",
                       (memory_id, limit))
    return [TraceHit(int(r[0]), as_text(r[1]), int(r[2]), float(r[3] or 0), as_text(r[4])) for r in rows]


def _outcome_mentions(brain: Brain, memory_id: str) -> list[Mention]:
    if not brain.features.has_table(TRACE_OUTCOMES):
        return []
    rows = brain.query(f"SELECT id, trace_id, ts, outcome, memory_ids_json FROM {TRACE_OUTCOMES} "
                       "WHERE instr(memory_ids_json, ?) > 0 ORDER BY id LIMIT ?",
                       (json.dumps(memory_id, ensure_ascii=False), MENTION_LIMIT))
    out = []
    for r in rows:
        try:
            ids = json.loads(as_text(r[4]))
        except ValueError:
            continue
        if isinstance(ids, list) and memory_id in ids:
            out.append(Mention("outcome", f"{as_text(r[3])} outcome {int(r[0])} on trace {int(r[1])}", _text(r[2])))
    return out


def mentions_of(brain: Brain, memory_id: str) -> list[Mention]:
    """Where the id is named: edges, graph nodes, traces, outcomes, cleo-tui's journal."""
    out: list[Mention] = []
    for kind in _NODE_KINDS:
        node = f"{kind}:{memory_id}"
        for edge in edges_of_node(brain, node):
            arrow = f"{node} -{edge.edge_type}-> {edge.other_id}" if edge.direction == "out" \
                else f"{edge.other_id} -{edge.edge_type}-> {node}"
            out.append(Mention("edge", arrow + (f" ({edge.provenance})" if edge.provenance else ""), edge.created_at))
        if brain.features.has_table(cs.NODES) and brain.query_one(
                f"SELECT 1 FROM {cs.NODES} WHERE id = ?", (node,)) is not None:
            out.append(Mention("node", f"graph node {node}", None))
    out += [Mention("trace", f"trace {h.trace_id} returned it at rank {h.rank} ({h.pipeline})", h.ts)
            for h in trace_hits(brain, memory_id)]
    out += _outcome_mentions(brain, memory_id)
    for table in (cs.OBSERVATIONS, cs.PATTERNS, cs.LEARNINGS):
        out += [Mention("journal", f"cleo-tui run {s.run_id} ({s.kind}) changed it in {table}", s.at)
                for s in journal_steps(brain, table, memory_id)]
    return out


def _deletion_hint(brain: Brain) -> list[str]:
    """Why a CLEO row may be gone: its consolidation hard-deletes, and says so in its log."""
    hint = [("CLEO's consolidation hard-deletes rows with prune_candidate=1, quality_score < 0.2, "
             "no citations, older than 30 days")]
    events = consolidation_events(brain, 1)
    if events:
        e = events[0]
        hint.append(f"newest consolidation run: {e.id} (trigger {e.trigger or '?'}) at {e.started_at or '?'}")
    elif brain.features.has_table(c.CONSOLIDATION_EVENTS):
        hint.append(f"{c.CONSOLIDATION_EVENTS} holds no run")
    return hint


def _missing(brain: Brain, memory_id: str) -> MemoryLife | None:
    mentions = mentions_of(brain, memory_id)
    if not mentions:
        return None
    hippo = brain.supports("hippo_memories")  # hippo forgets: what it forgot is not "missing"
    cause = c.HIPPO_FORGET if hippo else c.DELETED_OUTSIDE
    counts: dict[str, int] = {}
    for m in mentions:
        counts[m.where] = counts.get(m.where, 0) + 1
    evidence = ("named by " + ", ".join(plural(n, f"{where} mention") for where, n in counts.items())
                + " (see mentions)",)
    tables = ", ".join(s.table for s in _SPECS if brain.features.has_table(s.table))
    checked = (f"no row of {tables} holds this id",) + (() if hippo else tuple(_deletion_hint(brain)))
    return MemoryLife(memory_id, "unknown", FORGOTTEN if hippo else MISSING,
                      cause=EvictionCause(cause, c.cause_label(cause), None, evidence, checked),
                      mentions=mentions, traces=trace_hits(brain, memory_id),
                      journal=[s for t in (cs.OBSERVATIONS, cs.PATTERNS, cs.LEARNINGS)
                               for s in journal_steps(brain, t, memory_id)])


def _strip_node_prefix(memory_id: str) -> str:
    kind, sep, rest = memory_id.partition(":")
    return rest if sep and kind in _NODE_KINDS and rest else memory_id


def memory_life(brain: Brain, memory_id: str) -> MemoryLife | None:
    """Everything known about one memory id, or None when nothing holds or names it."""
    memory_id = _strip_node_prefix(memory_id.strip())
    found = _find_row(brain, memory_id)
    if found is None:
        return _missing(brain, memory_id)
    spec, row = found
    gone = row["gone"]
    title = _first_line(as_text(row["title"]) or as_text(row.get("narrative")))
    written = Written(_text(row["date"]), _text(row["source_type"]), _text(row["session_id"]), _text(row["agent"]),
                      _text(row["type"]), _text(row["source_confidence"]))
    life = MemoryLife(memory_id, spec.kind, LIVE if gone is None else EVICTED, title, written,
                      journal_steps(brain, spec.table, memory_id), traces=trace_hits(brain, memory_id))
    if spec.kind == "hippo":
        if gone is not None:
            life.state = SUPERSEDED
            life.cause = EvictionCause(c.HIPPO_SUPERSEDE, c.cause_label(c.HIPPO_SUPERSEDE), None,
                                       (f"superseded_by = {as_text(gone)}",))
        return life
    life.edges = edges_of_node(brain, f"{spec.kind}:{memory_id}")
    if spec.kind == "observation":
        life.cleo_marks = cleo_marks(brain, memory_id)
        life.keep = keep_advice(brain, memory_id, life.cleo_marks) if life.cleo_marks else None
    if gone is not None:
        if spec.kind == "observation":
            life.cause = explain_eviction(brain, memory_id, as_text(gone))
        else:
            life.cause = _journal_only_cause(life, as_text(gone), brain, spec.table)
    return life


def _journal_only_cause(life: MemoryLife, at: str, brain: Brain | None = None,
                        table: str | None = None) -> EvictionCause:
    """Patterns and learnings: cleo-tui's journal, and CLEO's sweeps, are the only records of who evicted them
    (an undo is never a cause: it puts back what something else wrote)."""
    for step in reversed(life.journal):
        if step.kind != c.UNDO_KIND and step.after and step.after.get("invalid_at") == at:
            cause = c.CLEO_TUI_PREFIX + step.kind
            return EvictionCause(cause, c.cause_label(cause), at,
                                 (f"cleo-tui run {step.run_id} ({step.kind}, {step.at}) set invalid_at = {at}",),
                                 (), step.run_id, step.kind)
    if brain is not None and table is not None and _swept(brain, table, life.id, at):
        return sweep_cause(brain, table, life.id, at)
    return EvictionCause(c.UNKNOWN, c.cause_label(c.UNKNOWN), at, (),
                         (f"cleo-tui's journal: no run set this row's invalid_at to {at}",
                          "CLEO's reflector and consolidation evict observations, not patterns or learnings"))


def _swept(brain: Brain, table: str, row_id: str, at: str) -> bool:
    """The row carries CLEO's noise-purged provenance and a backfill run was approved at its invalid_at."""
    if not (brain.features.has_column(table, "provenance_class")
            and brain.features.has_column(cs.BACKFILL_RUNS, "approved_at")):
        return False
    return brain.query_one(f'SELECT 1 FROM "{table}" t WHERE t.id = ? AND t.invalid_at = ? AND '
                           f"{c.sweep_condition('t')}", (row_id, at)) is not None


@dataclass(frozen=True)
class MissingId:
    """An id something still names but no row holds; `named_by` lists edge, trace, outcome, journal."""

    id: str
    named_by: tuple[str, ...]


def _held(brain: Brain, expr: str) -> str:
    """SQL: some memory row holds the id `expr`."""
    tables = [s.table for s in _SPECS if brain.features.has_column(s.table, "id")]
    return " OR ".join(f'EXISTS (SELECT 1 FROM "{t}" WHERE id = {expr})' for t in tables) or "0"


def missing_memories(brain: Brain, limit: int = 1000) -> list[MissingId]:
    """Ids named by edges, traces, outcomes or cleo-tui's journal that no row holds (SQL anti-joins)."""
    parts: list[str] = []
    if brain.supports("graph_edges"):
        for column in ("to_id", "from_id"):
            parts.append(f"SELECT substr({column}, 13) AS id, 'edge' AS src FROM {cs.EDGES} "
                         f"WHERE substr({column}, 1, 12) = 'observation:'")
    if brain.features.has_table(TRACE_RESULTS):
        parts.append(f"SELECT memory_id AS id, 'trace' AS src FROM {TRACE_RESULTS}")
    if brain.features.has_table(TRACE_OUTCOMES):
        parts.append(f"SELECT j.value AS id, 'outcome' AS src FROM {TRACE_OUTCOMES} o, json_each("
                     "CASE WHEN json_valid(o.memory_ids_json) THEN o.memory_ids_json ELSE '[]' END) j")
    if brain.supports("journal"):
        parts.append("SELECT CASE WHEN json_valid(row_key) THEN json_extract(row_key, '$.id') END AS id, "
                     "'journal' AS src "
                     f"FROM {RUN_CHANGES} WHERE table_name IN ('{cs.OBSERVATIONS}', '{cs.PATTERNS}', "
                     f"'{cs.LEARNINGS}')")
    if not parts:
        return []
    rows = brain.query(f"SELECT n.id, group_concat(DISTINCT n.src) FROM ({' UNION ALL '.join(parts)}) n "
                       f"WHERE n.id IS NOT NULL AND NOT ({_held(brain, 'n.id')}) GROUP BY n.id ORDER BY n.id LIMIT ?",
                       (int(limit),))
    return [MissingId(as_text(r[0]), tuple(sorted(as_text(r[1]).split(",")))) for r in rows]
