"""Replay CLEO's recorded queries: what `memory find` returns now, and after a curation step.

For each distinct query CLEO logged in `brain_retrieval_log` (newest first, up to a bound), the
reproduced find (cleo_find.py) runs against the brain as it is, which is compared with the ids
CLEO logged (the agreement: same ids in the same order, or why not where that can be told), and
against the brain as it would be after a step in two modes:

- *as CLEO behaves today*: its find ignores `invalid_at`, so only the rows the step hides from
  its search (quality lowered below 0.3, `--hide-from-cleo`) leave the results;
- *as eviction intends*: every evicted row is gone (the step's and those evicted before), as a
  find that honoured `invalid_at` would answer.

Per query: recall@k against what it returns today (k = today's result count), each lost result
with what takes its place. `fetch` rows (by id) are replayed as CLEO's fetch answers them: the
ids asked for that still exist. Other sources are counted and skipped. Nothing is written.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from cleo_tui.brain.store import Brain
from cleo_tui.memory.mapping import as_text
from cleo_tui.recall.cleo_find import (
    DEFAULT_LIMIT,
    QUALITY_THRESHOLD,
    TABLES,
    FindPath,
    FindSetup,
    PreparedQuery,
    fetch_order,
    prepare_find,
)
from cleo_tui.recall.recorded import RecordedRetrieval, iter_cleo_retrievals
from cleo_tui.safe_text import plural

DEFAULT_QUERIES = 200
FIND_SOURCES: dict[str, FindPath] = {"find-rrf": "rrf", "find": "fts"}
FETCH = "fetch"
Agreement = Literal["exact", "prefix", "same-set", "differs", "unreadable"]
AGREEMENTS: tuple[Agreement, ...] = ("exact", "prefix", "same-set", "differs", "unreadable")
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Step:
    """A pending curation step as the replay sees it: rows it evicts, rows it hides from CLEO's search."""

    evict: frozenset[str] = frozenset()
    hide: frozenset[str] = frozenset()
    label: str = "no step"

    @property
    def empty(self) -> bool:
        return not self.evict and not self.hide


NO_STEP = Step()


@dataclass(frozen=True)
class LoggedQuery:
    """The newest log row of one distinct (source, query), and how often CLEO ran it."""

    row: RecordedRetrieval
    times: int

    @property
    def query(self) -> str:
        return self.row.query or ""


@dataclass(frozen=True)
class Lost:
    """A result today's find returns that the step takes away, and what takes its place."""

    id: str
    rank: int  # 1-based, in today's results
    replaced_by: str | None
    cause: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "rank": self.rank, "replaced_by": self.replaced_by, "cause": self.cause}


@dataclass(frozen=True)
class ModeResult:
    """What the find returns after the step in one mode, against what it returns today."""

    returned: tuple[str, ...]
    recall: float | None  # |returned ∩ today| / |today|; None when today returns nothing
    lost: tuple[Lost, ...]
    new: tuple[str, ...]

    @property
    def affected(self) -> bool:
        return bool(self.lost)

    def to_json(self) -> dict[str, Any]:
        return {"returned": list(self.returned), "recall": self.recall, "lost": [x.to_json() for x in self.lost],
                "new": list(self.new)}


@dataclass(frozen=True)
class QueryReplay:
    """One distinct logged query replayed."""

    logged: LoggedQuery
    path: str  # rrf, fts or fetch
    limit: int
    today: tuple[str, ...]  # the replay of the current brain
    agreement: Agreement
    reasons: tuple[str, ...]
    cleo_today: ModeResult
    intends: ModeResult

    def to_json(self) -> dict[str, Any]:
        row = self.logged.row
        return {"log_id": row.id, "created_at": row.created_at, "source": row.source, "query": row.query,
                "times": self.logged.times, "path": self.path, "limit": self.limit,
                "logged": list(row.returned), "replayed": list(self.today), "agreement": self.agreement,
                "reasons": list(self.reasons), "cleo_today": self.cleo_today.to_json(),
                "eviction_intends": self.intends.to_json()}


@dataclass(frozen=True)
class ModeSummary:
    affected: int
    lost: int
    mean_recall: float | None

    def to_json(self) -> dict[str, Any]:
        return {"affected_queries": self.affected, "lost_results": self.lost, "mean_recall": self.mean_recall}


@dataclass
class ReplayReport:
    """Every replayed query, the agreement with CLEO's log, and both modes' totals."""

    step: Step
    bound: int
    queries: list[QueryReplay] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)  # log rows not replayed, by reason
    notes: list[str] = field(default_factory=list)
    logged_rows: int = 0

    def agreement_counts(self) -> dict[Agreement, int]:
        counts = dict.fromkeys(AGREEMENTS, 0)
        for q in self.queries:
            counts[q.agreement] += 1
        return counts

    def summary(self, mode: Literal["cleo_today", "intends"]) -> ModeSummary:
        results = [getattr(q, mode) for q in self.queries]
        recalls = [r.recall for r in results if r.recall is not None]
        return ModeSummary(sum(r.affected for r in results), sum(len(r.lost) for r in results),
                           round(sum(recalls) / len(recalls), 4) if recalls else None)

    def differences(self) -> list[QueryReplay]:
        return [q for q in self.queries if q.agreement not in ("exact",)]

    def to_json(self) -> dict[str, Any]:
        counts = self.agreement_counts()
        return {
            "queries_replayed": len(self.queries), "bound": self.bound, "logged_rows": self.logged_rows,
            "step": {"label": self.step.label, "evict": len(self.step.evict), "hide_from_cleo": len(self.step.hide)},
            "agreement": {"compared": len(self.queries), **{k.replace("-", "_"): v for k, v in counts.items()}},
            "cleo_today": self.summary("cleo_today").to_json(),
            "eviction_intends": self.summary("intends").to_json(),
            "skipped": self.skipped, "notes": self.notes,
            "queries": [q.to_json() for q in self.queries],
        }


def _kind(row: RecordedRetrieval) -> str | None:
    if row.source in FIND_SOURCES:
        return row.source
    return FETCH if row.source == FETCH else None


def distinct_queries(brain: Brain, bound: int = DEFAULT_QUERIES) -> tuple[list[LoggedQuery], dict[str, int], int]:
    """The newest row of each distinct (source, query) CLEO logged, newest first, at most `bound`;
    the rows left out by reason; and how many rows the log holds."""
    newest: dict[tuple[str, str], RecordedRetrieval] = {}
    times: dict[tuple[str, str], int] = {}
    skipped: dict[str, int] = {}
    total = 0
    for row in iter_cleo_retrievals(brain):
        total += 1
        kind = _kind(row)
        if kind is None:
            reason = f"source {row.source!r} (not find or fetch)"
        elif row.query is None:
            reason = "no query text"
        else:
            key = (kind, row.query)
            if key in newest:
                times[key] += 1
            elif len(newest) < bound:
                newest[key] = row
                times[key] = 1
            continue
        skipped[reason] = skipped.get(reason, 0) + 1
    return [LoggedQuery(row, times[key]) for key, row in newest.items()], skipped, total


def _stamp(text: str) -> str:
    """A timestamp as CLEO's `datetime('now')` writes it (ISO `T`/`Z`/milliseconds folded), for comparing."""
    return text.replace("T", " ")[:19]


class BrainFacts:
    """What the reasons need about rows: which exist, when each was added, its quality, evicted or not.

    The evicted ids are read at once (an indexed column); every row's date and quality only when a
    reason or a fetch first needs them, so a replay whose queries all agree never reads them.
    """

    def __init__(self, brain: Brain) -> None:
        self.brain = brain
        self.evicted: set[str] = set()
        for spec in TABLES:
            if {"id", "invalid_at"} <= self.brain.features.columns(spec.table):
                self.evicted.update(as_text(r[0]) for r in brain.query(
                    f"SELECT id FROM {spec.table} WHERE invalid_at IS NOT NULL"))
        self._added: dict[str, str] | None = None
        self._quality: dict[str, float | None] = {}
        self._dates: list[str] | None = None

    @classmethod
    def read(cls, brain: Brain) -> BrainFacts:
        return cls(brain)

    def _load(self) -> dict[str, str]:
        added: dict[str, str] = {}
        for spec in TABLES:
            columns = self.brain.features.columns(spec.table)
            if "id" not in columns:
                continue
            date = spec.date_column if spec.date_column in columns else "NULL"
            quality = "quality_score" if "quality_score" in columns else "NULL"
            for row in self.brain.query(f"SELECT id, {date}, {quality} FROM {spec.table}"):
                key = as_text(row[0])
                added[key] = "" if row[1] is None else _stamp(as_text(row[1]))
                self._quality[key] = row[2] if isinstance(row[2], int | float) else None
        return added

    @property
    def added(self) -> dict[str, str]:
        """Every row's id (the four tables) → when it was added (`YYYY-MM-DD HH:MM:SS`, or "")."""
        if self._added is None:
            self._added = self._load()
        return self._added

    def added_after(self, stamp: str) -> int:
        """How many rows (of the four tables) were added after `stamp`."""
        if self._dates is None:
            self._dates = sorted(self.added.values())
        return len(self._dates) - bisect.bisect_right(self._dates, _stamp(stamp))

    def below_threshold(self, item: str) -> bool:
        if self._added is None:  # the qualities are read with the dates
            self._added = self._load()
        value = self._quality.get(item)
        return value is not None and value < QUALITY_THRESHOLD


def compare(logged: Sequence[str], replayed: Sequence[str]) -> Agreement:
    """Same ids in the same order; the log is a prefix of the replay; the same ids; or neither."""
    if list(logged) == list(replayed):
        return "exact"
    if logged and list(replayed[: len(logged)]) == list(logged):
        return "prefix"
    if set(logged) == set(replayed) and len(logged) == len(replayed):
        return "same-set"
    return "differs"


def reasons_for(item: LoggedQuery, replayed: Sequence[str], agreement: Agreement, facts: BrainFacts,
                setup: FindSetup, path: str) -> list[str]:
    """Why the replay of the current brain differs from what CLEO logged, as far as the brain tells."""
    row = item.row
    if agreement == "exact":
        return []
    if agreement == "unreadable":
        return ["the log row's entry_ids is not a JSON list of ids"]
    out: list[str] = []
    logged = list(row.returned)
    extra = list(replayed[len(logged):])
    if agreement == "prefix" and not all(facts.added.get(i, "") > _stamp(row.created_at) for i in extra):
        out.append(f"CLEO returned the first {len(logged)}: it ran with a smaller --limit (the limit is not logged)")
    gone = [i for i in logged if i not in facts.added]
    if gone:
        out.append(f"deleted since (no row holds them): {', '.join(gone[:5])}" + (" …" if len(gone) > 5 else ""))
    low = [i for i in logged if facts.below_threshold(i)]
    if low:
        out.append(f"now below CLEO's quality threshold {QUALITY_THRESHOLD}: {', '.join(low[:5])}")
    newer = [i for i in replayed if i not in logged and facts.added.get(i, "") > _stamp(row.created_at)]
    if newer:
        out.append(f"added after the query: {', '.join(newer[:5])}")
    later = facts.added_after(row.created_at)
    if later and not out and agreement != "prefix":  # nothing else explains it
        out.append(f"{plural(later, 'row')} added after the query {'changes' if later == 1 else 'change'} bm25's "
                   "statistics (ranking)")
    if path == "fts":
        out.append("logged as `find` (no rank fusion): CLEO ran it with --agent, whose value is not logged")
    if agreement == "same-set" and not (later or low):
        out.append("same rows in another order: bm25 ties")
    if not out:
        rebuilt = [s.spec.fts for s in setup.sources if s.where == "memory"]
        out.append(f"not known from the brain: {', '.join(rebuilt)} rebuilt in memory (see the notes)" if rebuilt
                   else "not known from the brain (an FTS index out of step with its rows, or vector hits)")
    return out


def mode_result(today: Sequence[str], after: Sequence[str], step: Step, evicted_before: Collection[str]) -> ModeResult:
    """Recall of `after` against `today`; each lost result with the newcomer that fills its slot."""
    kept = set(after)
    present = set(today)
    new = [i for i in after if i not in present]
    lost: list[Lost] = []
    for rank, item in enumerate(today, 1):
        if item in kept:
            continue
        if item in step.hide:
            cause = "hidden from CLEO's search by this step"
        elif item in step.evict:
            cause = "evicted by this step"
        elif item in evicted_before:
            cause = "evicted before this step"
        else:
            cause = "pushed out"
        lost.append(Lost(item, rank, new[len(lost)] if len(lost) < len(new) else None, cause))
    recall = None if not today else round(sum(1 for i in today if i in kept) / len(today), 4)
    return ModeResult(tuple(after), recall, tuple(lost), tuple(new))


def replay_limit(logged: Sequence[str]) -> int:
    """The limit CLEO ran with, as far as the log tells: 10 unless it returned more."""
    return max(DEFAULT_LIMIT, len(logged))


class Replayer:
    """Replays logged queries on one brain; build once, then `replay_one` each query."""

    def __init__(self, brain: Brain, step: Step = NO_STEP) -> None:
        self.brain = brain
        self.step = step
        self.setup = prepare_find(brain)
        self.facts = BrainFacts.read(brain)
        self.today_leave_out = frozenset(step.hide)
        self.intends_leave_out = frozenset(step.evict | step.hide | self.facts.evicted)

    def replay_one(self, item: LoggedQuery) -> QueryReplay:
        row = item.row
        limit = replay_limit(row.returned)
        if item.row.source == FETCH:
            return self._fetch(item, limit)
        path = FIND_SOURCES[row.source]
        with PreparedQuery(self.setup, item.query) as prepared:
            today = prepared.find(limit, path)
            after_today = prepared.find(limit, path, self.today_leave_out) if self.today_leave_out else today
            after_intends = prepared.find(limit, path, self.intends_leave_out) if self.intends_leave_out else today
        return self._result(item, path, limit, today, after_today, after_intends)

    def _fetch(self, item: LoggedQuery, limit: int) -> QueryReplay:
        asked = [p.strip() for p in item.query.split(",") if p.strip()]
        today = fetch_order(asked, self.facts.added)
        intends = [i for i in today if i not in self.intends_leave_out]
        return self._result(item, FETCH, limit, today, today, intends)  # fetch by id ignores quality

    def _result(self, item: LoggedQuery, path: str, limit: int, today: list[str], after_today: list[str],
                after_intends: list[str]) -> QueryReplay:
        agreement = "unreadable" if item.row.malformed else compare(item.row.returned, today)
        reasons = reasons_for(item, today, agreement, self.facts, self.setup, path)
        evicted = self.facts.evicted
        return QueryReplay(item, path, limit, tuple(today), agreement, tuple(reasons),
                           mode_result(today, after_today, self.step, evicted),
                           mode_result(today, after_intends, self.step, evicted))


def replay(brain: Brain, step: Step = NO_STEP, bound: int = DEFAULT_QUERIES,
           progress: Progress | None = None, cancelled: Callable[[], bool] | None = None) -> ReplayReport:
    """Replay up to `bound` distinct logged queries, newest first, against the brain and the step."""
    queries, skipped, total = distinct_queries(brain, bound)
    report = ReplayReport(step, bound, skipped=skipped, logged_rows=total)
    if not queries:
        return report
    replayer = Replayer(brain, step)
    report.notes = list(replayer.setup.notes)
    for done, item in enumerate(queries, 1):
        if cancelled is not None and cancelled():
            report.notes.append(f"stopped after {done - 1:,} of {len(queries):,} queries")
            break
        report.queries.append(replayer.replay_one(item))
        if progress is not None:
            progress(done, len(queries))
    return report


def parse_ids(text: str) -> frozenset[str]:
    """A comma- or space-separated list of ids, as typed."""
    return frozenset(p for p in text.replace(",", " ").split() if p)


def step_of(ids: Iterable[str], hide: bool, label: str) -> Step:
    """A step evicting `ids`, hiding them from CLEO's search too when `hide`."""
    evict = frozenset(ids)
    return Step(evict, evict if hide else frozenset(), label)


def budget_step(brain: Brain, budget: int, tokenizer: str, hide: bool) -> Step:
    """The prune preview at `budget` as a step: the rows it would drop (the pruner's own plan)."""
    from cleo_tui.memory.pruner import prepare_pool  # only a budget step needs the pool

    preview = prepare_pool(brain, tokenizer).preview(budget)
    return step_of(preview.dropped_ids, hide,
                   f"prune at {budget:,} tokens ({tokenizer}): {preview.drop_count:,} dropped")


def _recall_text(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def summary_lines(report: ReplayReport) -> list[str]:
    """The report's totals as plain lines (the CLI and the TUI show the same words)."""
    n = len(report.queries)
    lines = [f"Replayed {n:,} distinct CLEO quer{'y' if n == 1 else 'ies'} of {report.logged_rows:,} logged rows, "
             f"newest first (bound {report.bound:,})."]
    if not report.logged_rows:  # no figure to give: every one would be 0 of 0
        return [*lines, "CLEO has logged no retrievals in this brain (brain_retrieval_log is missing or empty): "
                        "there is nothing to replay yet.", *(f"note: {note}" for note in report.notes)]
    step = report.step
    if not step.empty:
        hidden = "hidden from CLEO's search too" if step.hide else "not hidden from CLEO's search"
        lines.append(f"Step: {step.label}; {hidden}.")
    counts = report.agreement_counts()
    lines.append(f"Agreement with CLEO's log (current brain): {counts['exact']:,} exact, {counts['prefix']:,} "
                 f"prefix (smaller --limit), {counts['same-set']:,} same ids in another order, "
                 f"{counts['differs']:,} differ, {counts['unreadable']:,} unreadable.")
    for label, mode in (("As CLEO behaves today", "cleo_today"), ("As eviction intends", "intends")):
        s = report.summary(mode)  # type: ignore[arg-type]
        lines.append(f"{label}: {s.affected:,} of {plural(n, 'query', 'queries')} "
                     f"{'loses' if s.affected == 1 else 'lose'} a result ({plural(s.lost, 'result')} lost); "
                     f"mean recall@k {_recall_text(s.mean_recall)}.")
    lines += [f"note: {note}" for note in report.notes]
    lines += [f"skipped: {plural(count, 'log row')}, {reason}" for reason, count in report.skipped.items()]
    return lines


def shown_query(query: str, chars: int = 200) -> str:
    """CLEO's query text as data: quoted with escapes (control bytes visible), long ones cut with their length."""
    if len(query) <= chars:
        return repr(query)
    return f"{query[:chars]!r}… ({len(query):,} characters)"


def query_heading(q: QueryReplay) -> str:
    """One line for a replayed query: id, time, source, query, results, agreement, both recalls."""
    row = q.logged.row
    times = f" ×{q.logged.times}" if q.logged.times > 1 else ""
    return (f"#{row.id} {row.created_at[:19]} {row.source} {shown_query(q.logged.query)}{times}: "
            f"{plural(len(q.today), 'result')}, {q.agreement}; recall {_recall_text(q.cleo_today.recall)} today / "
            f"{_recall_text(q.intends.recall)} intended")


def query_details(q: QueryReplay, shown: int = 5) -> list[str]:
    """The reasons for a difference and each lost result with what takes its place."""
    lines = [f"why: {reason}" for reason in q.reasons]
    for mode, result in (("today", q.cleo_today), ("intends", q.intends)):
        for lost in result.lost[:shown]:
            place = lost.replaced_by or "nothing"
            lines.append(f"{mode}: loses {lost.id} (rank {lost.rank}, {lost.cause}) → {place}")
        if len(result.lost) > shown:
            lines.append(f"{mode}: … {len(result.lost) - shown} more lost")
    return lines
