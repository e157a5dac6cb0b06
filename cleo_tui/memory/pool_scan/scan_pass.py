"""One reading of a brain's observations into a `BrainScan` (`scan_brain`), or of the rows that
changed since one (`scan_rows_since`): findings from the cache or the detectors, line units,
citations and reflections.
"""

from __future__ import annotations

import functools
import itertools
import json
import operator
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.observation_reads import largest_rowid
from cleo_tui.brain.store import Brain
from cleo_tui.memory import detectors, recall_protection
from cleo_tui.memory import packed_strings as packed
from cleo_tui.memory.detectors import Findings
from cleo_tui.memory.pool_scan.citations import read_citations, reflection_counts_of
from cleo_tui.memory.pool_scan.containers import taken_in_order
from cleo_tui.memory.pool_scan.findings_cache import FindingsCacheFile, content_keys, decode_lenient, judged_text_of
from cleo_tui.memory.pool_scan.findings_table import FindingsTable, TableBuilder
from cleo_tui.memory.pool_scan.line_units import chunk_units
from cleo_tui.memory.pool_scan.model import BrainScan, live_notes, live_notes_since
from cleo_tui.memory.pool_scan.reading import (
    ChunkColumns,
    Undecodable,
    chunk_columns,
    fetch_chunks,
    row_hash,
    scan_sql,
)
from cleo_tui.memory.token_cache import CountStats, Progress, TokenCache
from cleo_tui.memory.tokenizers import Tokenizer

# Called as each reading of the rows starts (a second one follows when a short text is not UTF-8);
# what it returns takes each chunk's columns in turn.
RowsRead = Callable[[], Callable[[ChunkColumns], None]]


def scan_where(brain: Brain, where: str, params: Sequence[Any], tokenizer: Tokenizer | None, session: str | None,
          progress: Progress | None, cache_file: bool, base: BrainScan | None = None,
          row_keys: bool = False, sessions: bool = True, rows_read: RowsRead | None = None) -> BrainScan:
    """Scan the rows `where` selects (read again leniently if some short text is not UTF-8), with
    citations and recall reasons; the findings cache is used and saved when `cache_file`. With
    `rows_read`, each reading of the rows starts by calling it, and hands each chunk's columns
    (with `scores`) to what it returns."""
    stored = FindingsCacheFile(brain) if cache_file else None
    try:
        scan, fresh = read_pass(brain, where, params, tokenizer, session, progress, stored, True, base, row_keys,
                                sessions, rows_read)
    except Undecodable:
        scan, fresh = read_pass(brain, where, params, tokenizer, session, progress, stored, False, base, row_keys,
                                sessions, rows_read)
    if base is None:
        scan.citations, scan.edges, _ = read_citations(brain, live_notes(scan), None)
    else:
        scan.citations, scan.edges, scan.cited_touched = read_citations(brain, live_notes_since(base, scan),
                                                                    base.edges, base.citations)
    if stored is not None and fresh and scan.keys is not None:
        stored.save(scan.rowids, scan.keys, scan.findings, scan.table)
    scan.recall_reasons = recall_protection.protection_reasons(brain)  # {} unless the config opts in
    return scan


def read_pass(brain: Brain, where: str, params: Sequence[Any], tokenizer: Tokenizer | None, session: str | None,
               progress: Progress | None, stored: FindingsCacheFile | None, strict: bool,
               base: BrainScan | None = None, row_keys: bool = False, sessions: bool = True,
               rows_read: RowsRead | None = None) -> tuple[BrainScan, int]:
    """One reading of the rows, a chunk at a time (only a chunk's texts are held at once); without
    `sessions`, no row's session is read unless one session's units are measured. With `rows_read`
    (see `scan_where`), each chunk's columns are handed on too, with the rows' quality scores and
    texts decoded."""
    table = TableBuilder(stored.table if stored else FindingsTable.empty())
    parts = new_parts()
    fresh = 0
    stats = CountStats()
    cache = TokenCache() if tokenizer is not None and tokenizer.cached else None
    done = 0
    total = count_rows(brain, where, params) if progress else 0
    read_sessions = session is not None or (tokenizer is None and sessions)  # (a whole pool's prune: not needed)

    def enter(missing: list[int], entries: np.ndarray, found: list[Findings]) -> None:
        """Each missing row's findings into the table (once each), their places into `entries`."""
        for i, findings in zip(missing, found, strict=False):
            entries[i] = table.add(findings)

    from cleo_tui.memory.pool_scan import detector_workers  # (multiprocessing: imported when a scan runs)

    analyser = detector_workers.chunk_analyser(_analysed)  # (workers only within `helping`: the first-scan child)
    try:
        sql = scan_sql(brain, where, sessions=read_sessions, row_keys=row_keys, scores=rows_read is not None)
        take = rows_read() if rows_read is not None else None
        for rows in fetch_chunks(brain, sql, params, strict):
            c = chunk_columns(rows, scores=take is not None)
            if take is not None:  # (every row's texts decoded once, for the caller and the detectors)
                c.title_texts = list(map(decode_lenient, c.titles))
                c.narrative_texts = list(map(decode_lenient, c.narratives))
                take(c)
            rowids = np.array(c.rowids, dtype=np.int64)
            keys = content_keys(c.titles, c.narratives)
            entries = stored.lookup(rowids, keys) if stored else np.full(len(rowids), -1, dtype=np.int32)
            missing = np.flatnonzero(entries < 0).tolist()
            if missing:
                fresh += len(missing)
                if c.title_texts is not None and c.narrative_texts is not None:
                    texts = [judged_text_of(c.title_texts[i], c.narrative_texts[i]) for i in missing]
                else:
                    texts = [judged_text_of(decode_lenient(c.titles[i]), decode_lenient(c.narratives[i]))
                             for i in missing]
                analyser.submit(texts, functools.partial(enter, missing, entries))  # (entries filled in later)
            if tokenizer is not None:
                parts["units"].append(chunk_units(c, tokenizer, session, cache, stats))
            done += len(rows)
            if progress:
                progress(done, max(total, done))
            gather(parts, c, rowids)
            parts["keys"].append(keys)
            if c.tails is not None:
                parts["row_keys"].append(np.frombuffer(b"".join(map(row_hash, c.titles, c.narratives, c.tails)),
                                                       dtype=np.uint64))
            parts["entries"].append(entries)
        analyser.finish()
    finally:
        analyser.close()
        if cache is not None:
            cache.close()
    scan = scan_of_parts(parts, table.built(), read_sessions, units=tokenizer is not None, unit_scope=session,
                         count_stats=stats)
    scan.reflection_counts, scan.reflection_identifiers = reflection_counts_of(
        brain, base.reflection_identifiers if base is not None else {})
    if not row_keys:
        scan.row_keys = None
    return scan, fresh


def scan_of_parts(parts: dict[str, list[Any]], table: FindingsTable, read_sessions: bool, units: bool = False,
                  unit_scope: str | None = None, count_stats: CountStats | None = None) -> BrainScan:
    """The scan of the chunks' columns gathered in `parts` (see `read_pass`), oldest row first;
    its citations and reflections are left empty for the caller to read."""
    order = date_order(parts["created"], parts["rowids"])
    lists = {name: taken_in_order(parts[name], order) for name in ("ids", "created", "sessions", "quality")}
    arrays = {name: joined(parts[name], dtype) for name, dtype in
              (("rowids", np.int64), ("entries", np.int32), ("keys", np.uint64), ("row_keys", np.uint64),
               ("units", np.int64))}
    arrays.update((name, joined(parts[name], dtype)) for name, dtype in
                  (("live", bool), ("notes", bool), ("rules", np.uint8)))
    if order is not None:
        arrays = {name: column[order] if len(column) else column for name, column in arrays.items()}
    scan = BrainScan(
        ids=packed.pack(lists["ids"]), created=packed.pack(lists["created"]),
        sessions=shared_strings(lists["sessions"]) if read_sessions else lists["sessions"],
        rowids=arrays["rowids"], live=arrays["live"], notes=arrays["notes"], rules=arrays["rules"],
        quality=lists["quality"], findings=arrays["entries"], table=table, citations={},
        reflection_counts=Counter(), units=arrays["units"] if units else None, unit_scope=unit_scope,
        count_stats=count_stats or CountStats())
    scan.keys = arrays["keys"]
    scan.row_keys = arrays["row_keys"]
    return scan


def gather(parts: dict[str, list[Any]], c: ChunkColumns, rowids: np.ndarray) -> None:
    """A chunk's columns onto the scan's `parts` (the texts, keys and findings are the caller's)."""
    for name in ("ids", "created", "sessions", "quality"):
        parts[name] += getattr(c, name)
    for name in ("live", "rules", "notes"):  # (arrays when read compact)
        parts[name].append(np.asarray(getattr(c, name)))
    parts["rowids"].append(rowids)


def new_parts() -> dict[str, list[Any]]:
    """Empty lists for the columns `read_pass` gathers chunk by chunk (`scan_of_parts` joins them)."""
    return {name: [] for name in ("rowids", "ids", "created", "sessions", "live", "rules", "quality", "keys",
                                  "row_keys", "entries", "units", "notes")}


def _analysed(texts: list[str]) -> list[Findings]:
    """The detectors' findings of each text, looked up in the shared cache database but not added
    to it: the scan keeps them in the brain's own findings file, which the next scan reads.
    Storing them twice cost a first scan a quarter of its CPU (1.3 s of 5.5 s at 100,000 rows)."""
    with detectors.findings_not_stored():
        return detectors.analyse_texts(texts)


def date_order(created: list[str], rowid_chunks: list[np.ndarray]) -> np.ndarray | None:
    """The permutation putting rows (read in rowid order) oldest first, ties by rowid; None when
    they already are (CLEO writes in date order, so this is usually a check, not a sort)."""
    if all(map(operator.le, created, itertools.islice(created, 1, None))):
        return None
    return np.array(sorted(range(len(created)), key=created.__getitem__), dtype=np.int64)  # stable: rowid ties


def joined(arrays: list[np.ndarray], dtype: Any) -> np.ndarray:
    """The chunks' arrays as one array of `dtype` (empty when there are none)."""
    return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype=dtype)


def count_rows(brain: Brain, where: str, params: Sequence[Any]) -> int:
    """How many observations `where` selects."""
    return int(brain.scalar(f"SELECT count(*) FROM {cs.OBSERVATIONS} o{where}", params))




def shared_strings(values: list[str | None]) -> list[str | None]:
    """The same list with equal strings made one object (sessions repeat a lot)."""
    seen: dict[str | None, str | None] = {}
    return [seen.setdefault(v, v) for v in values]


def scan_brain(brain: Brain, live_only: bool = False, tokenizer: Tokenizer | None = None,
               session: str | None = None, progress: Progress | None = None, row_keys: bool = False,
               sessions: bool = True, rows_read: RowsRead | None = None) -> BrainScan:
    """Read and analyse every observation (or every live one) once, oldest first.

    With a tokenizer, each row in scope (one session's, or all when `session` is
    None) also gets the size of its pool line. `progress(done, total)` follows the rows read.
    With `row_keys`, each row gets a hash of everything read of it (see `row_key_sql`). Without
    `sessions`, the rows' sessions are not read (None each). With `rows_read`, each chunk's
    columns are handed on as they are read (see `scan_where`): a caller that needs the rows
    too reads them once.
    """
    have = brain.features.columns(cs.OBSERVATIONS)
    where = live_rows_where(brain) if live_only and "invalid_at" in have else ""
    return scan_where(brain, where, (), tokenizer, session, progress, cache_file=True, row_keys=row_keys,
                      sessions=sessions, rows_read=rows_read)


def live_rows_where(brain: Brain) -> str:
    """The WHERE of the live rows: read through the table when at most half the rows are evicted
    (the usual pool), through the index on invalid_at otherwise.

    SQLite's planner takes the index either way, and then finds each row by a search of the
    table instead of reading its pages in order: at 100,000 rows (4% evicted) the scan's read
    took 0.24 → 0.21 s of CPU on the demo brain and 0.50 → 0.42 s on the real-layout one. The
    evicted rows are counted in the index (a few ms), the rows bounded by the largest rowid."""
    evicted = brain.scalar(f"SELECT count(*) FROM {cs.OBSERVATIONS} WHERE invalid_at IS NOT NULL")
    return " WHERE +o.invalid_at IS NULL" if 2 * int(evicted or 0) <= largest_rowid(brain) \
        else " WHERE o.invalid_at IS NULL"


def scan_rows_since(brain: Brain, high_water: int, changed_ids: Iterable[str] = (),
                    tokenizer: Tokenizer | None = None, session: str | None = None,
                    base: BrainScan | None = None) -> BrainScan:
    """The rows above rowid `high_water` and the rows `changed_ids` (live or not), with the
    brain's current citations and reflections: what `BrainScan.updated` folds in.

    With `base` (the scan it will be folded into), only the edges added since it are read,
    and the rows get `row_keys` when the base has them.
    """
    changed = list(dict.fromkeys(changed_ids))
    where = " WHERE o.rowid > ?"
    params: list[Any] = [int(high_water)]
    if changed:
        where += " OR o.id IN (SELECT value FROM json_each(?))"
        params.append(json.dumps(changed))
    return scan_where(brain, where, params, tokenizer, session, None, cache_file=False, base=base,
                 row_keys=base is not None and base.row_keys is not None)


