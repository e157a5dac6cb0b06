"""Committing a prune preview: soft-evict exactly the rows the user saw, in short chunks.

A commit re-reads each previewed row inside its chunk's write transaction and
evicts it only while it is still as previewed (live, not pinned since, the same
text); rows that changed are left alone and named. Rows are written in the
order they sit in the file (rowid) so each chunk touches neighbouring pages; the
result is reported in the preview's drop order. Chunking, pacing and the run's
journal come from `brain.journal` (`write_in_chunks`, `start_run`, `finish_run`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain import journal
from cleo_tui.brain.clock import cleo_timestamp
from cleo_tui.brain.migrations import OVERRIDES
from cleo_tui.brain.store import Brain
from cleo_tui.memory import curation, mapping, tags
from cleo_tui.memory.pruner_columns import ScanPicks, take
from cleo_tui.memory.pruner_plan import PreparedPool, PrunePreview
from cleo_tui.memory.seed_types import render_line
from cleo_tui.memory.token_cache import count_line_units
from cleo_tui.memory.tokenizers import Tokenizer
from cleo_tui.safe_text import plural, titled_lines


@dataclass
class CommitResult:
    """What a prune commit did: the rows evicted, the previewed rows left alone, the pool now."""

    run_id: int
    budget: int
    target: int
    evicted: list[str]
    skipped: list[dict[str, str]]   # {id, why}: rows of the preview that changed meanwhile
    tokens_now: int                 # the live pool (scope) after the commit, new rows included
    new_rows: int                   # live rows in scope that arrived after the preview
    new_tokens: int
    hidden_from_cleo: bool = False
    stats: journal.RunStats | None = None  # what the chunks cost (time holding the write lock ...)

    @property
    def within_target(self) -> bool:
        return self.tokens_now <= self.target

    def lines(self) -> list[str]:
        """The result in words, for the CLI and the TUI."""
        out = [f"Committed as run {self.run_id}: {plural(len(self.evicted), 'observation')} evicted."]
        were = "was" if len(self.skipped) == 1 else "were"
        out += titled_lines(f"{plural(len(self.skipped), 'row')} of the preview changed since and {were} left alone:",
                            [f"{s['id']}: {s['why']}" for s in self.skipped])
        state = "within" if self.within_target else "over"
        if self.new_rows:
            out.append(f"{plural(self.new_rows, 'new row')} since the preview (+{self.new_tokens:,} tokens): "
                       f"the pool is now {self.tokens_now:,} tokens, {state} the target of {self.target:,}.")
        else:
            out.append(f"The pool is now {self.tokens_now:,} tokens, {state} the target of {self.target:,}.")
        if self.hidden_from_cleo and self.evicted:
            from cleo_tui.memory.cleo_effects import HIDDEN_FROM_CLEO
            out.append(HIDDEN_FROM_CLEO)
        return out

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "evicted": len(self.evicted), "skipped": self.skipped,
                "tokens_now": self.tokens_now, "target": self.target, "within_target": self.within_target,
                "new_rows": self.new_rows, "new_tokens": self.new_tokens,
                "hidden_from_cleo": self.hidden_from_cleo}


PARAMS_IDS_MAX = 10_000


def commit_prune(brain: Brain, preview: PrunePreview) -> int:
    """Commit a preview (see `commit_preview`); returns the run id."""
    return commit_preview(brain, preview).run_id


def commit_preview(brain: Brain, preview: PrunePreview, hide_from_cleo: bool = False,
                   budget: journal.ChunkBudget | None = None) -> CommitResult:
    """Soft-evict exactly the preview's dropped rows that are still as previewed, in short chunks.

    Each row is evicted only while, inside its chunk's write transaction, it is
    still there, live, not pinned since, and its pool line measures the same
    units as in the preview (same text); others are left alone and listed in
    `skipped`. Rows that arrived after the preview are not part of the commit
    and do not block it; the result says where the pool stands against the
    target with them. One journalled run, 'in_progress' until its last chunk
    (journal module docstring: an interrupted commit is rolled back on the next
    open). `hide_from_cleo` also sets quality_score to `cleo_effects.HIDDEN_QUALITY`
    (the prior value is journalled, so undo restores it).
    """
    from cleo_tui.memory import cleo_effects

    if not preview.drop_count:
        raise curation.CurationError("This preview drops nothing (the pool is within its target); nothing to commit.")
    curation.require_eviction_columns(brain)
    extra = cleo_effects.hide_values(brain) if hide_from_cleo else {}
    ids = preview.dropped_ids
    entries = _dropped_in_rowid_order(preview)
    params = _run_params(preview, ids, bool(extra))
    evicted: list[str] = []
    skipped: list[dict[str, str]] = []
    changed_units: dict[str, int] = {}
    now = cleo_timestamp()
    run: list[int] = []

    def start(conn: Any) -> None:
        run.append(journal.start_run(conn, "prune", f"pruning {plural(len(entries), 'observation')} to "
                                                    f"{preview.budget:,} tokens ({preview.tokenizer})", params,
                                     status=journal.IN_PROGRESS))

    also = [c for c in curation.eviction_values(brain, now, extra) if c not in tags.POOL_COLUMNS]

    def step(conn: Any, chunk: list[tuple[str, int]], part: journal.Slice) -> int | None:
        known = len(skipped)
        fresh = _still_as_previewed(brain, conn, chunk, preview.pool.tokenizer, skipped, changed_units, also)
        done = curation.evict_rows(brain, conn, run[0], list(fresh), now, extra, read=fresh, part=part)
        evicted.extend(done)
        if len(done) == len(fresh):
            return None
        return _cut_at(chunk, done[-1] if done else None, skipped, known)

    def finish(conn: Any) -> None:
        journal.finish_run(conn, run[0], f"pruned {plural(len(evicted), 'observation')} to {preview.budget:,} tokens "
                                         f"({preview.tokenizer})" + (f", {len(skipped):,} changed since left alone"
                                                                     if skipped else ""))

    stats = journal.write_in_chunks(brain, entries, step, start, finish, budget)
    evicted, skipped = _in_drop_order(ids, evicted, skipped)
    tokens_now, new_rows, new_tokens = _pool_now(brain, preview, changed_units)
    return CommitResult(run[0], preview.budget, preview.target, evicted, skipped, tokens_now, new_rows,
                        new_tokens, bool(extra), stats)


def _run_params(preview: PrunePreview, ids: list[str], hidden: bool) -> dict[str, Any]:
    """What the run's journal entry says about the prune (the ids only when few)."""
    return {"budget": preview.budget, "target": preview.target, "tokenizer": preview.tokenizer,
            "scope": preview.pool.session or "all", "count": len(ids),
            # a long list would make the first chunk long: the journal's change rows hold them all
            **({"ids": ids} if len(ids) <= PARAMS_IDS_MAX else {"ids_in_journal": True}),
            "tokens_before": preview.tokens_before, "tokens_after": preview.tokens_after,
            "fell_back": preview.fell_back, "hide_from_cleo": hidden}


def _cut_at(chunk: list[tuple[str, int]], last: str | None, skipped: list[dict[str, str]], known: int) -> int:
    """A batch its chunk's clock cut after evicting `last`: how many of its items are done.

    The rest go into the next chunk, which reads them again: the rows of the rest this
    batch put into `skipped` (after its first `known`) come out.
    """
    done = 0 if last is None else next(k for k, (obs_id, _units) in enumerate(chunk) if obs_id == last) + 1
    rest = {obs_id for obs_id, _units in chunk[done:]}
    skipped[known:] = [s for s in skipped[known:] if s["id"] not in rest]
    return done


def _dropped_in_rowid_order(preview: PrunePreview) -> list[tuple[str, int]]:
    """(id, units) of each dropped row, in the order of the rows in the file (rowid) when the pool knows it.

    Each chunk then updates neighbouring rows: the pages it writes (table, indexes,
    full-text segments) are mostly its own, not pages the next chunks write again;
    in drop order a whole-pool commit wrote five times the pages of one UPDATE.
    Which rows are evicted does not depend on the order. No PoolEntry is made per
    row (a million of them would take seconds).
    """
    pool = preview.pool
    positions = pool.droppable.positions[:preview.drop_count]
    entries = list(zip(preview.dropped_ids, pool.columns.units[positions].tolist(), strict=True))
    rowids = pool_rowids(pool, preview.drop_count)
    if rowids is None:
        return entries
    return [entries[k] for k in np.argsort(rowids, kind="stable").tolist()]


def pool_rowids(pool: PreparedPool, dropped: int | None = None) -> np.ndarray | None:
    """The rowids of the pool's rows (of its first `dropped` in drop order), or None without a scan."""
    positions = np.arange(len(pool)) if dropped is None else pool.droppable.positions[:dropped]
    rows = _scan_rows(pool, positions)
    return None if rows is None else pool.scan.rowids[rows]  # type: ignore[union-attr]  # a scan was found


def _scan_rows(pool: PreparedPool, positions: np.ndarray) -> np.ndarray | None:
    """The scan's rows of these pool positions, or None when the pool has no scan to map them to.

    A pool of some of the scan's rows picks them (`ScanPicks`); a pool of every row (a live
    scan of the whole pool, the usual case) holds the scan's own columns, position for row.
    """
    scan, column = pool.scan, pool.columns.ids
    if scan is None:
        return None
    if isinstance(column, ScanPicks) and len(column.values) == len(scan.rowids):
        rows: np.ndarray = np.asarray(column.picks, dtype=np.int64)[positions]
        return rows
    if not isinstance(column, ScanPicks) and len(column) == len(scan.rowids):
        return positions
    return None


def _in_drop_order(ids: list[str], evicted: list[str],
                   skipped: list[dict[str, str]]) -> tuple[list[str], list[dict[str, str]]]:
    """The evicted ids and the skipped rows in the preview's drop order (they were written in rowid order)."""
    rank = {obs_id: k for k, obs_id in enumerate(ids)}
    return sorted(evicted, key=rank.__getitem__), sorted(skipped, key=lambda s: rank[s["id"]])


def _current_rows(brain: Brain, conn: Any, ids: list[Any], also: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
    """POOL_COLUMNS (and `also`) of the rows with these stored ids, by id as text (the first row of a spelling)."""
    have = brain.features.columns(cs.OBSERVATIONS)
    columns = (*tags.POOL_COLUMNS, *also)
    select = ", ".join(f'"{c}"' if c in have else f'NULL AS "{c}"' for c in columns)
    found: dict[str, dict[str, Any]] = {}
    for start in range(0, len(ids), 400):
        part = ids[start:start + 400]
        for r in conn.execute(f"SELECT {select} FROM {cs.OBSERVATIONS} WHERE id IN ({','.join('?' * len(part))})",
                              part).fetchall():
            found.setdefault(mapping.as_text(r[0]), dict(zip(columns, r, strict=False)))
    return found


def _overrides(brain: Brain, conn: Any, ids: list[str]) -> dict[str, str]:
    """The relevance the user set (pins) of these rows, by id."""
    if not ids or not brain.features.has_table(OVERRIDES):
        return {}
    rows = conn.execute(f"SELECT observation_id, relevance FROM {OVERRIDES} "
                        f"WHERE observation_id IN ({','.join('?' * len(ids))})", ids).fetchall()
    return {r[0]: r[1] for r in rows}


def _line_units(brain: Brain, rows: list[tuple[str, dict[str, Any]]], overrides: dict[str, str],
                tokenizer: Tokenizer) -> list[int]:
    """Units of each row's pool line as read now (its relevance with the user's override)."""
    lines = [render_line(obs_id, mapping.minute_timestamp(row["created_at"]),
                         mapping.derive_relevance(row, overrides.get(obs_id))[0], mapping.content_of(row))
             for obs_id, row in rows]
    return count_line_units(lines, tokenizer)[0]


def _still_as_previewed(brain: Brain, conn: Any, chunk: list[tuple[str, int]], tokenizer: Tokenizer,
                        skipped: list[dict[str, str]], changed_units: dict[str, int],
                        also: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
    """The chunk's (id, units) rows still live, unpinned and as large as previewed, by id; others into `skipped`.

    Each row holds POOL_COLUMNS and `also` as read now, its "id" as stored.
    """
    ids = [i for i, _ in chunk]
    rows = _current_rows(brain, conn, curation.id_probe(ids), also)
    overrides = _overrides(brain, conn, ids)
    present = [(i, rows[i]) for i in ids if i in rows]
    units = dict(zip((i for i, _ in present), _line_units(brain, present, overrides, tokenizer), strict=False))
    fresh: dict[str, dict[str, Any]] = {}
    for obs_id, previewed in chunk:
        row = rows.get(obs_id)
        why = None
        if row is None:
            why = "deleted since the preview"
        elif row["invalid_at"] is not None:
            why = "evicted since the preview (by CLEO or another run)"
        elif overrides.get(obs_id) == curation.PIN_RELEVANCE:
            why = "pinned since the preview"
        elif units[obs_id] != previewed:
            why = "text changed since the preview"
            changed_units[obs_id] = units[obs_id]
        if row is None or why:
            skipped.append({"id": obs_id, "why": why or ""})
        else:
            fresh[obs_id] = row
    return fresh


def _pool_now(brain: Brain, preview: PrunePreview, changed_units: dict[str, int]) -> tuple[int, int, int]:
    """(tokens of the live pool in scope now, rows new since the preview, their tokens); a read only."""
    pool = preview.pool
    live = _live_ids(brain, pool.session)
    units = count = 0
    columns = pool.columns
    known = take(columns.ids, list(range(len(columns))))  # every row of the pool, droppable or protected
    for obs_id, previewed in zip(known, columns.units.tolist(), strict=True):
        if obs_id in live:
            units += changed_units.get(obs_id, previewed)
            count += 1
    seen = set(known)
    new_ids = [i for i in live if i not in seen]
    new_units = _units_of_rows(brain, new_ids, pool.tokenizer)
    tokenizer = pool.tokenizer
    return (tokenizer.pool_tokens(units + new_units, count + len(new_ids)), len(new_ids),
            tokenizer.pool_tokens(new_units, len(new_ids)) if new_ids else 0)


def _live_ids(brain: Brain, session: str | None) -> set[str]:
    """Ids (as text) of the live rows in scope now: the whole pool's, or one session's."""
    where, params = "invalid_at IS NULL", []
    if session is not None:
        where += " AND source_session_id = ?"
        params.append(session)
    return {mapping.as_text(r[0]) for r in brain.query(f"SELECT id FROM {cs.OBSERVATIONS} WHERE {where}", params)}


def _units_of_rows(brain: Brain, ids: list[str], tokenizer: Tokenizer) -> int:
    """The line units of these rows as they are now, added up (read a few hundred at a time)."""
    total = 0
    for start in range(0, len(ids), 400):
        part = ids[start:start + 400]
        with brain.lock:
            stored = curation.stored_ids(brain.conn, part)
            rows = _current_rows(brain, brain.conn, list(stored.values()))
            overrides = _overrides(brain, brain.conn, part)
        total += sum(_line_units(brain, list(rows.items()), overrides, tokenizer))
    return total
