"""What each kind of brain is and supports, in one place: the brain-kind contract.

A kind says how a file is recognised (`detect`, tried in the order of `KINDS`), what it is
called, whether cleo-tui ever writes it, what every file of the kind holds (`promises`), what
a file of the kind may hold depending on its tables (`optional`, each read by a probe in
`PROBES`), whose recall traces it records, and which modules read and write it. Panes and
commands ask `brain.supports(capability)` or `brain.kind`, never the kind's name.

    kind          detected by                                  written  promises
    hippo         no brain_observations, a `memories` table      no       hippo memories
    cleo-tui      brain_observations + cleo-tui's meta row       yes      observations, tags
    cleo          brain_observations + tables of CLEO's others   yes      observations, tags
    cleo-legacy   brain_observations, brain tables only          yes      observations, tags

Column probes that describe one file's optional columns (CLEO's history makes most columns
optional) stay `brain.features.has_column(...)`; a probe that decides a feature is a capability
here. docs/brain-kinds.md is the recipe for adding a kind.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol, get_args

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.errors import NotABrain
from cleo_tui.brain.migrations import META, RUN_CHANGES, RUNS, TRACE_OUTCOMES, TRACE_RESULTS, TRACES
from cleo_tui.safe_text import safe_path

Capability = Literal[
    "observations",         # CLEO's brain_observations: the observation panes, tags, liveness, bridge, secrets
    "tags",                 # cleo-tui tags every observation (noise, duplicate, stale …)
    "hippo_memories",       # hippo's `memories` table: what hippo forgets is gone from there
    "traces",               # recall traces (recall_traces, _results, _outcomes)
    "retrieval_log",        # CLEO's brain_retrieval_log with the columns it has always had
    "fts",                  # CLEO's observations FTS5 index, readable by this SQLite
    "sweeps",               # CLEO's sweep run log and staging table, as the Sweeps pane reads them
    "sweep_runs",           # CLEO's backfill runs with approval times and the provenance a sweep sets
    "journal",              # cleo-tui's journal of its own runs (undo, history)
    "consolidation_times",  # CLEO's consolidation log with the start time of each run
    "graph_edges",          # CLEO's page edges (merges re-point them)
]
CAPABILITIES: tuple[Capability, ...] = get_args(Capability)
TraceOrigin = Literal["cleo-tui", "hippo"]

KIND_CLEO = "cleo"              # consolidated .cleo/cleo.db (brain beside tasks etc.)
KIND_CLEO_LEGACY = "cleo-legacy"  # .cleo/brain.db of CLEO before 2026.6.0
KIND_CLEO_TUI = "cleo-tui"      # created by `cleo-tui init` or `cleo-tui demo`
KIND_HIPPO = "hippo"            # hippo-memory store, opened for its traces

CONSOLIDATION_EVENTS = "brain_consolidation_events"
HIPPO_MEMORIES = "memories"
# Tables that a brain-only file may hold besides CLEO's brain_* tables.
OWN_PREFIXES = ("brain_", "sqlite_", "cleo_tui_", "recall_trace")


class Tables(Protocol):
    """What a probe reads of a file: its tables and columns (store.Features)."""

    def has_table(self, table: str) -> bool: ...

    def columns(self, table: str) -> frozenset[str]: ...

    @property
    def fts(self) -> bool: ...


Detect = Callable[[sqlite3.Connection, frozenset[str]], bool]

PROBES: dict[Capability, Callable[[Tables], bool]] = {
    "traces": lambda t: all(t.has_table(n) for n in (TRACES, TRACE_RESULTS, TRACE_OUTCOMES)),
    "retrieval_log": lambda t: {"id", "query", "entry_ids", "source", "created_at"} <= t.columns(cs.RETRIEVAL_LOG),
    "fts": lambda t: t.fts,
    "sweeps": lambda t: ({"id", "kind", "status"} <= t.columns(cs.BACKFILL_RUNS)
                         and {"id", "source_table", "source_id", "sweep_run_id", "action", "validation_status"}
                         <= t.columns(cs.SWEEP_STAGING)),
    "sweep_runs": lambda t: ("approved_at" in t.columns(cs.BACKFILL_RUNS)
                             and "provenance_class" in t.columns(cs.OBSERVATIONS)),
    "journal": lambda t: t.has_table(RUNS) and t.has_table(RUN_CHANGES),
    "consolidation_times": lambda t: "started_at" in t.columns(CONSOLIDATION_EVENTS),
    "graph_edges": lambda t: t.has_table(cs.EDGES),
}


@dataclass(frozen=True, eq=False)
class BrainKind:
    """One kind of brain file: how it is told apart, what it supports, who reads and writes it.

    A kind compares equal to its name (`brain.kind == "hippo"`), so it can stand where
    the name stood (JSON, messages, tests)."""

    name: str
    label: str
    detect: Detect
    promises: frozenset[Capability]  # every file of this kind has these
    optional: frozenset[Capability] = frozenset()  # a file of this kind may have these: probed (PROBES)
    read_only_reason: str | None = None  # set: cleo-tui never writes this kind and says why
    trace_origin: TraceOrigin = "cleo-tui"  # whose recall traces a file of this kind records
    readers: tuple[str, ...] = ()  # modules that read this kind
    writers: tuple[str, ...] = ()  # modules that write it (through the journal)

    @property
    def writable(self) -> bool:
        """cleo-tui curates this kind (a file may still open read-only: permissions, a newer cleo-tui)."""
        return self.read_only_reason is None

    def supports(self, capability: Capability, tables: Tables) -> bool:
        """The file (`tables`) of this kind has `capability`: promised, or optional and found there."""
        if capability in self.promises:
            return True
        return capability in self.optional and PROBES[capability](tables)

    def capabilities(self, tables: Tables) -> frozenset[Capability]:
        """Every capability the file has."""
        return frozenset(c for c in CAPABILITIES if self.supports(c, tables))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, BrainKind):
            return self.name == other.name
        return isinstance(other, str) and self.name == other

    def __hash__(self) -> int:
        return hash(self.name)

    def __str__(self) -> str:
        return self.name


def _created_by_cleo_tui(conn: sqlite3.Connection, tables: frozenset[str]) -> bool:
    if cs.OBSERVATIONS not in tables or META not in tables:
        return False
    row = conn.execute(f"SELECT value FROM {META} WHERE key = 'created_by'").fetchone()
    return bool(row) and row[0] == "cleo-tui"


CLEO_OPTIONAL: frozenset[Capability] = frozenset(CAPABILITIES) - {"observations", "tags", "hippo_memories"}
CLEO_READERS = ("cleo_tui.brain.observations", "cleo_tui.memory.tags", "cleo_tui.memory.pruner",
                "cleo_tui.memory.duplicates", "cleo_tui.memory.sweeps", "cleo_tui.memory.life",
                "cleo_tui.memory.bridge", "cleo_tui.recall.search", "cleo_tui.recall.recorded",
                "cleo_tui.recall.reader")
CLEO_WRITERS = ("cleo_tui.brain.journal", "cleo_tui.memory.curation", "cleo_tui.memory.pruner",
                "cleo_tui.memory.dedup_merge", "cleo_tui.memory.redaction", "cleo_tui.recall.traces",
                "cleo_tui.llm.proposals")


def _cleo_like(name: str, label: str, detect: Detect) -> BrainKind:
    return BrainKind(name, label, detect, promises=frozenset({"observations", "tags"}), optional=CLEO_OPTIONAL,
                     readers=CLEO_READERS, writers=CLEO_WRITERS)


HIPPO = BrainKind(
    KIND_HIPPO, "hippo store",
    lambda conn, tables: cs.OBSERVATIONS not in tables and HIPPO_MEMORIES in tables,
    promises=frozenset({"hippo_memories"}), optional=frozenset({"traces"}),
    read_only_reason="hippo stores are opened for reading", trace_origin="hippo",
    readers=("cleo_tui.recall.reader", "cleo_tui.recall.search", "cleo_tui.recall.resolve", "cleo_tui.memory.life",
             "cleo_tui.memory.timeline"))
CLEO_TUI = _cleo_like(KIND_CLEO_TUI, "cleo-tui brain", _created_by_cleo_tui)
CLEO = _cleo_like(KIND_CLEO, "CLEO brain", lambda conn, tables: cs.OBSERVATIONS in tables and any(
    not t.startswith(OWN_PREFIXES) for t in tables))
CLEO_LEGACY = _cleo_like(KIND_CLEO_LEGACY, "CLEO legacy brain", lambda conn, tables: cs.OBSERVATIONS in tables)

# Every kind, in the order they are tried: the first whose `detect` holds is the file's kind.
KINDS: list[BrainKind] = [HIPPO, CLEO_TUI, CLEO, CLEO_LEGACY]


def register(kind: BrainKind, before: str | None = None) -> BrainKind:
    """Add a kind (tried before the kind named `before`, else after all of them)."""
    names = [k.name for k in KINDS]
    KINDS.insert(names.index(before) if before in names else len(KINDS), kind)
    return kind


def kind_named(name: str) -> BrainKind:
    """The registered kind called `name`."""
    for kind in KINDS:
        if kind.name == name:
            return kind
    raise KeyError(name)


def detect_kind(path: object, conn: sqlite3.Connection, tables: frozenset[str]) -> BrainKind:
    """The kind of the file at `path` (open on `conn`, holding `tables`); NotABrain when none fits."""
    for kind in KINDS:
        if kind.detect(conn, tables):
            return kind
    raise NotABrain(
        f"{safe_path(path)} is a SQLite database but not a brain: it has no {cs.OBSERVATIONS} table "
        "(CLEO) and no memories table (hippo). Point --db at .cleo/cleo.db or .cleo/brain.db."
    )
