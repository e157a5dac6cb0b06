"""Line units of a brain's pool for a tokenizer worth caching (tiktoken), remembered per brain.

Counting a line with tiktoken costs about 100 µs per kilobyte. The token cache
(`token_cache`) remembers counts by a hash of the rendered line, but finding them
there still means rendering every line, hashing it and looking it up in SQLite:
at 100,000 rows of long narratives that was 1.5 s of a warm `prune --json`, as
much as the whole chars4 prepare. So this module keeps each row's count in a
per-brain file (`cache_files`), by rowid, the scan's key of its title and
narrative (`BrainScan.keys`, CRC-32s of both) and a hash of what its line's head
(`[id] YYYY-MM-DD HH:MM [relevance] `) is made of: a warm prepare finds a whole
pool's counts with a sorted-array search, and renders no line (0.05 s at 100,000
rows, against 0.4 s to render and hash every head). Only rows whose text, head or rowid
is not in the file are read again, rendered and counted (through the token cache,
which still shares counts across brains). The file is a cache: losing it costs
time, never a wrong count (a row is counted afresh unless all three keys match).

The lines are the scan's (`pool_scan`: `render_line` of the id, the minute, the
relevance of the row's rule and its content: the narrative, or the title when the
narrative is blank, decoded leniently), so a count here equals the scan's own.
"""

from __future__ import annotations

import json
import time
import zipfile
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.memory import mapping
from cleo_tui.memory import packed_strings as packed
from cleo_tui.memory.cache_files import brain_cache_file, write_npz
from cleo_tui.memory.seed_types import render_line
from cleo_tui.memory.token_cache import CountStats, Progress, count_line_units

if TYPE_CHECKING:
    from cleo_tui.brain.store import Brain
    from cleo_tui.memory.pool_scan import BrainScan
    from cleo_tui.memory.tokenizers import Tokenizer

UNITS_KIND = "line_units"
_FORMAT = "v2"  # what the keys are (rowid, crc2 of title and narrative, `_head_keys`)
_READ_CHUNK = 10_000


def scan_line_units(brain: Brain, scan: BrainScan, tokenizer: Tokenizer, session: str | None = None,
                    progress: Progress | None = None) -> tuple[np.ndarray, CountStats]:
    """int64 line units of each of the scan's rows in scope (its live rows, one session's when given),
    0 elsewhere, and how they were found; only rows the brain's units file lacks are counted."""
    started = time.perf_counter()
    scope = _scope(scan, session)
    head_keys = _head_keys(scan, scope)
    rowids = scan.rowids[scope]
    keys = scan.keys[scope] if scan.keys is not None else np.zeros(len(scope), dtype=np.uint64)
    stored = UnitsFile(brain, tokenizer.name)
    found = stored.lookup(rowids, keys, head_keys)
    missing = np.flatnonzero(found < 0)
    stats = CountStats(lines=len(scope), from_cache=len(scope) - len(missing), cache_used=True)
    if len(missing):
        counted, read_keys, counting = _count_rows(brain, rowids[missing], _heads(scan, scope[missing]),
                                                   tokenizer, progress)
        found[missing] = counted
        stats.from_cache += counting.from_cache
        stats.counted = counting.counted
        keep = keys.copy()
        keep[missing] = read_keys
        agreed = keep == keys  # a row read with other text than the scan saw is counted, not remembered
        stored.save(rowids[agreed], keep[agreed], head_keys[agreed], found[agreed])
    elif progress:
        progress(len(scope), len(scope))
    units = np.zeros(len(scan), dtype=np.int64)
    units[scope] = found
    stats.seconds = time.perf_counter() - started
    return units, stats


def _scope(scan: BrainScan, session: str | None) -> np.ndarray:
    """Positions of the scan's live rows (of one session's, when given)."""
    in_scope = scan.live.copy()
    if session is not None:
        in_scope &= np.array([s == session for s in scan.sessions], dtype=bool)
    return np.flatnonzero(in_scope)


_FNV_OFFSET, _FNV_PRIME = np.uint64(0xCBF29CE484222325), np.uint64(0x100000001B3)
_MIX = np.uint64(0xFF51AFD7ED558CCD)  # MurmurHash3's 64-bit finaliser constant


def _head_keys(scan: BrainScan, scope: np.ndarray) -> np.ndarray:
    """uint64 key of what each row's line head is made of: its id, its created_at, its relevance."""
    relevance = scan.relevance[scope].astype(np.uint64)
    with np.errstate(over="ignore"):  # the hash wraps around, as meant
        keys: np.ndarray = (_string_hashes(scan.ids, scope) * _FNV_PRIME ^ _string_hashes(scan.created, scope)) \
            * _FNV_PRIME ^ relevance
    return keys


def _string_hashes(column: Sequence[str], scope: np.ndarray) -> np.ndarray:
    """uint64 hash of each string's UTF-8 at these positions: FNV-1a's step taken on 8 bytes at a time
    (an all-NUL word skipped, so the padding of a packed column, whatever its width, changes nothing),
    then mixed (MurmurHash3's finaliser). Eight bytes a step, not one: at 100,000 rows the ids and
    dates took 46 ms of a warm tiktoken `prune --json` bytewise, 6% of it."""
    if isinstance(column, packed.PackedStrings):
        raw = column.data[scope]
    else:
        values = packed.take(column, scope)
        try:
            raw = np.array(values, dtype=bytes)  # ASCII (ids, dates: nearly always), encoded by numpy in C
        except UnicodeEncodeError:
            raw = np.array([s.encode("utf-8", "surrogatepass") for s in values], dtype=bytes)
    width = -(-max(raw.dtype.itemsize, 1) // 8) * 8
    words = raw.astype(f"S{width}").view(np.uint64).reshape(len(raw), width // 8)
    hashes = np.full(len(raw), _FNV_OFFSET, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(words.shape[1]):
            word = words[:, j]
            hashes = np.where(word != 0, (hashes ^ word) * _FNV_PRIME, hashes)
        hashes ^= hashes >> np.uint64(33)
        hashes *= _MIX
        hashes ^= hashes >> np.uint64(33)
    return hashes


def _heads(scan: BrainScan, scope: np.ndarray) -> list[str]:
    """Each row's line up to its content: `[id] YYYY-MM-DD HH:MM [relevance] `."""
    at = scope.tolist()
    ids, created = packed.take(scan.ids, at), packed.take(scan.created, at)
    names = mapping.RELEVANCES
    relevance = [names[code] for code in scan.relevance[scope].tolist()]
    minute = mapping.minute_timestamp
    return [render_line(obs_id, minute(made), rel, "") for obs_id, made, rel in zip(ids, created, relevance,
                                                                                     strict=True)]


def content_key(title: bytes, narrative: bytes) -> int:
    """The scan's key of a row's title and narrative: the narrative's CRC-32 above the title's."""
    return (zlib.crc32(narrative) << 32) | zlib.crc32(title)


def _content(title: bytes, narrative: bytes) -> str:
    """The content a pool line shows: the narrative, or the title when the narrative is blank."""
    text = narrative.decode("utf-8", "replace")
    return text if text.strip() else title.decode("utf-8", "replace")


def _count_rows(brain: Brain, rowids: np.ndarray, heads: list[str], tokenizer: Tokenizer,
                progress: Progress | None) -> tuple[np.ndarray, np.ndarray, CountStats]:
    """(units, content keys as read, stats) of these rows' lines, read again from the brain."""
    texts = _read_texts(brain, rowids.tolist())
    empty = (b"", b"")
    pairs = [texts.get(rowid, empty) for rowid in rowids.tolist()]
    lines = [head + _content(title, narrative) for head, (title, narrative) in zip(heads, pairs, strict=True)]
    units, stats = count_line_units(lines, tokenizer, progress)
    keys = np.fromiter((content_key(title, narrative) for title, narrative in pairs), dtype=np.uint64,
                       count=len(pairs))
    return np.asarray(units, dtype=np.int64), keys, stats


def _read_texts(brain: Brain, rowids: list[int]) -> dict[int, tuple[bytes, bytes]]:
    """(title, narrative) as bytes of each of these rows still there, by rowid (absent columns: empty)."""
    have = brain.features.columns(cs.OBSERVATIONS)
    title, narrative = (f"CAST(coalesce(\"{c}\", '') AS BLOB)" if c in have else "X''" for c in ("title", "narrative"))
    sql = (f"SELECT rowid, {title}, {narrative} FROM {cs.OBSERVATIONS} "
           "WHERE rowid IN (SELECT value FROM json_each(?))")
    found: dict[int, tuple[bytes, bytes]] = {}
    for start in range(0, len(rowids), _READ_CHUNK):
        part = json.dumps(rowids[start:start + _READ_CHUNK])
        with brain.lock:
            rows = brain.conn.execute(sql, (part,)).fetchall()
        found.update((rowid, (bytes(t), bytes(n))) for rowid, t, n in rows)
    return found


class UnitsFile:
    """One brain's line units for one tokenizer, by (rowid, content key, head key), sorted by rowid."""

    def __init__(self, brain: Brain, tokenizer: str) -> None:
        self.path = brain_cache_file(UNITS_KIND, brain.path, _FORMAT, variant=tokenizer)
        self.rowids = np.zeros(0, dtype=np.int64)
        self.keys = np.zeros(0, dtype=np.uint64)
        self.heads = np.zeros(0, dtype=np.uint64)
        self.units = np.zeros(0, dtype=np.int64)
        try:
            with np.load(self.path, allow_pickle=False) as data:
                rowids, keys, heads, units = data["rowids"], data["keys"], data["heads"], data["units"]
            if not len(rowids) == len(keys) == len(heads) == len(units) or (len(units) and units.min() < 0):
                raise ValueError("damaged")
            self.rowids, self.keys, self.heads, self.units = rowids, keys, heads, units
        except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile):
            pass  # no file yet, or a damaged one: every row is counted again

    def lookup(self, rowids: np.ndarray, keys: np.ndarray, heads: np.ndarray) -> np.ndarray:
        """int64 units of each row whose three keys match the file's, else -1."""
        found = np.full(len(rowids), -1, dtype=np.int64)
        if not len(self.rowids) or not len(rowids):
            return found
        at = np.searchsorted(self.rowids, rowids).clip(0, len(self.rowids) - 1)
        hit = (self.rowids[at] == rowids) & (self.keys[at] == keys) & (self.heads[at] == heads)
        found[hit] = self.units[at[hit]]
        return found

    def save(self, rowids: np.ndarray, keys: np.ndarray, heads: np.ndarray, units: np.ndarray) -> None:
        """Replace the file (atomically) with these rows and the file's others; a failure only costs speed."""
        keep = ~np.isin(self.rowids, rowids)  # rows not in this pool (evicted, another session's) stay
        rowids = np.concatenate([rowids, self.rowids[keep]])
        order = np.argsort(rowids, kind="stable")
        write_npz(self.path, {"rowids": rowids[order],
                              "keys": np.concatenate([keys, self.keys[keep]])[order],
                              "heads": np.concatenate([heads, self.heads[keep]])[order],
                              "units": np.concatenate([units, self.units[keep]])[order]})
