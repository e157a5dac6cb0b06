"""The last tag scan of a brain, kept on disk, so that reopening the brain shows tags at once.

A scan of a million observations reads every title and narrative again, which is
most of its 15 s even when the findings cache knows every text. The snapshot
holds the scan's columns in the platform cache directory. Reopening takes them
from it and folds in the rows added since (as the live brain's fold does); then
every row is checked in the background, by one hash per row of everything the
scan read of it: rows that differ are folded in again, rows that were deleted
are dropped. Only when most rows changed is the brain scanned afresh. The check
runs no detector and builds no columns: at a million rows it costs about 60% of
a scan, after the tags are on screen; a large brain's runs in another process
(`pool_scan.check_in_subprocess`), which needs only the rowids and row hashes.

A damaged or unreadable snapshot file is ignored; a failure to write one only
costs speed next time.
"""
from __future__ import annotations

import hashlib
import itertools
import zipfile
from collections import Counter
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.brain.store import Brain
from cleo_tui.memory import detectors, pool_scan
from cleo_tui.memory import packed_strings as packed
from cleo_tui.memory.cache_files import brain_cache_file, write_npz
from cleo_tui.memory.distinct import distinct_values
from cleo_tui.memory.pool_scan import BrainScan, EdgeSet
from cleo_tui.memory.pool_scan.citations import cited_by
from cleo_tui.memory.pool_scan.findings_table import FindingsTable
from cleo_tui.memory.pool_scan.model import notes_of

FORMAT = "5"  # 2: ids, dates and cited ids stored packed (`packed_strings`) where they fit; 3: manual/owner apart;
# 4: quality in parts (one JSON list of a million values held the GIL for 0.3 s while decoded);
# 5: the findings table as a `FindingsTable`'s arrays (decoding it as JSON took 5.5 s at a million rows)
_PART = 20_000  # items per JSON part: decoding one holds the GIL (about 15 ms)
_MOST_CHANGED = 0.25  # more rows than this changed: a fresh scan costs less than folding them


def snapshot_path(brain: Brain) -> Path:
    """Where the brain's snapshot lives (by its path, the detectors' rules and this format)."""
    return brain_cache_file("scan_snapshots", brain.path, f"{detectors.RULES_KEY}-{FORMAT}")


def first_look_path(brain: Brain) -> Path:
    """Where a first scan's process leaves its first look (`pool_scan.first_look`: no findings) for
    the app to show while the detectors run; saving the snapshot sweeps it away (`cache_files.sweep`)."""
    return brain_cache_file("scan_snapshots", brain.path, f"{detectors.RULES_KEY}-{FORMAT}-first-look")


def _strings(name: str, values: Any) -> dict[str, np.ndarray]:
    """A column of strings: its packed bytes as they are (`name_packed`), else as JSON (`name`)."""
    if isinstance(values, packed.PackedStrings):
        return {f"{name}_packed": values.data}
    return {name: _json(list(values))}


def _strings_of(data: Any, name: str) -> Any:
    """The column `_strings` wrote (packed if it fits, whichever way it was stored)."""
    key = f"{name}_packed"
    if key in data.files:
        column = data[key]
        if column.dtype.kind != "S":
            raise ValueError("damaged")
        return packed.PackedStrings(column)
    values = _from_json(data, name)
    return packed.pack(values) if isinstance(values, list) else values


def _json(value: Any) -> np.ndarray:
    return np.frombuffer(orjson.dumps(value), dtype=np.uint8)


def _from_json(data: Any, name: str) -> Any:
    return orjson.loads(bytes(data[name]))


def _in_parts(name: str, values: Any) -> dict[str, np.ndarray]:
    """`values` (a list, or anything sliced into lists) as JSON in parts of _PART items (`name_0`,
    `name_1`…): reading one back makes its lists, not a million at once."""
    return {f"{name}_{k}": _json(values[start:start + _PART]) for k, start in enumerate(range(0, len(values), _PART))}


class _Pairs:
    """An EdgeSet's edges as (observation, source) pairs, sliced as `_in_parts` takes them (a
    part's pairs are made when it is written, not all at once)."""

    def __init__(self, edges: EdgeSet) -> None:
        self.edges = edges

    def __len__(self) -> int:
        return len(self.edges)

    def __getitem__(self, part: slice) -> list[tuple[str, str]]:
        return list(zip(self.edges.observations[part], self.edges.sources[part], strict=True))


def _parts(data: Any, name: str) -> Iterator[list[Any]]:
    """The parts `_in_parts` wrote, in order, each decoded when reached."""
    for k in itertools.count():
        if f"{name}_{k}" not in data.files:
            return
        yield _from_json(data, f"{name}_{k}")


def save_snapshot(brain: Brain, scan: BrainScan, path: Path | None = None) -> bool:
    """Write the scan (a whole brain's, with its keys) as the brain's snapshot (or to `path`);
    False if it cannot be kept."""
    if scan.row_keys is None or (scan.edges is None and scan.citations):
        return False  # (citations read without their edges' rowids could not be brought up to date)
    sessions = list(dict.fromkeys(scan.sessions))
    where = {s: k for k, s in enumerate(sessions)}
    edges = scan.edges
    try:
        columns = {
            **_strings("ids", scan.ids), **_strings("created", scan.created), **_in_parts("quality", scan.quality),
            "session_names": _json(sessions),
            "sessions": np.fromiter(map(where.__getitem__, scan.sessions), dtype=np.int32, count=len(scan)),
            **scan.table.arrays("table_"),
            **_in_parts("pairs", [] if edges is None else _Pairs(edges)),
            "reflection_counts": _json(dict(scan.reflection_counts)),
            "reflection_identifiers": _json({t: sorted(ids) for t, ids in scan.reflection_identifiers.items()}),
            "edges": _json(None if edges is None else
                           {"high_water": edges.high_water, "count": edges.count, "live": sorted(edges.live)}),
        }
    except (TypeError, orjson.JSONEncodeError):  # e.g. a lone surrogate from undecodable bytes
        return False
    columns.update(rowids=scan.rowids, live=scan.live, rules=scan.rules, findings=scan.findings,
                   notes=notes_of(scan), row_keys=scan.row_keys)
    columns["digests"] = _json(_digests_of(columns))
    return write_npz(path or snapshot_path(brain), columns)


def load_snapshot(brain: Brain, path: Path | None = None, like: BrainScan | None = None,
                  digests: bool = False) -> BrainScan | None:
    """The brain's last saved scan (or the one saved at `path`), or None (none yet, or not readable).

    Columns stored exactly as they were in the file `like` was loaded from (with `digests`) are
    `like`'s own objects, not decoded again: a first scan's snapshot after its first look
    (`first_look_path`) then costs its findings, not a second copy of every id, date and citation
    (200 MB at a million real-layout rows)."""
    try:
        with np.load(path or snapshot_path(brain), allow_pickle=False) as data:
            return _scan_of(data, like, digests)
    except (OSError, KeyError, ValueError, TypeError, IndexError, EOFError, zipfile.BadZipFile,
            orjson.JSONDecodeError):
        return None


_GROUPS = {"ids": ("ids",), "created": ("created",), "quality": ("quality",),
           "sessions": ("session_names", "sessions"), "citations": ("pairs", "edges", "ids")}


def _digests(data: Any) -> dict[str, bytes]:
    """The digest of each group of columns (`_GROUPS`: a name, its packed form, its parts) the file's
    writer stored (`_digests_of`); none in a file written before they were (nothing is shared then).
    A first look and the snapshot after it come from one scan process, so both have them."""
    stored = _from_json(data, "digests") if "digests" in data.files else {}
    return {group: bytes.fromhex(digest) for group, digest in stored.items()}


def _digests_of(columns: dict[str, np.ndarray]) -> dict[str, str]:
    """The digest of each group of columns (`_GROUPS`) a snapshot is written with, stored in it: the
    app loading a first look then hashes none of it (0.16 s of CPU at a million rows). Two groups
    of equal digests hold equal columns whichever wrote them, as their type and shape count."""
    digests = {}
    for group, names in _GROUPS.items():
        h = hashlib.blake2b(digest_size=16, person=b"columns")
        for file in (f for name in names for f in _stored_names(columns, name)):
            column = np.ascontiguousarray(columns[file])
            h.update(f"{file}\0{column.dtype.str}\0{column.shape}\0".encode())
            h.update(column.view(np.uint8).data if column.size else b"")
        digests[group] = h.hexdigest()
    return digests


def _stored_names(files: Collection[str], name: str) -> list[str]:
    """The stored columns of `name`: itself, its packed form or its parts (`_in_parts`)."""
    return sorted(f for f in files if f == name or f == f"{name}_packed" or
                  (f.startswith(f"{name}_") and f[len(name) + 1:].isdigit()))


def _scan_of(data: Any, like: BrainScan | None = None, keep_digests: bool = False) -> BrainScan | None:
    """The BrainScan an open snapshot file holds (None, or an error, if it does not add up); the
    columns stored as in the file `like` came from are taken from `like` (see `load_snapshot`)."""
    digests = _digests(data) if like is not None or keep_digests else {}
    was = like.stored_digests if like is not None else {}

    def same(group: str) -> bool:
        return group in was and was[group] == digests.get(group)

    ids = like.ids if like is not None and same("ids") else _strings_of(data, "ids")
    created = like.created if like is not None and same("created") else _strings_of(data, "created")
    quality: list[Any] = []
    if like is not None and same("quality"):
        quality = like.quality if isinstance(like.quality, list) else list(like.quality)
    else:
        for part in _parts(data, "quality"):  # (one part at a time: the UI thread gets its turns between them)
            quality += part
    names = _from_json(data, "session_names")
    rowids, live, rules, findings, notes, keys = (data[n] for n in
                                                 ("rowids", "live", "rules", "findings", "notes", "row_keys"))
    table = FindingsTable.from_arrays(data, "table_")
    sessions = like.sessions if like is not None and same("sessions") else _named(names, data["sessions"])
    sessions = sessions if isinstance(sessions, list) else list(sessions)
    n = len(ids)
    lists_fit = all(isinstance(v, (list, packed.PackedStrings)) for v in (ids, created)) and \
        all(isinstance(v, list) for v in (quality, names)) and \
        len(created) == len(quality) == len(sessions) == n
    arrays_fit = all(len(a) == n for a in (rowids, live, rules, findings, notes, keys)) and \
        (not n or 0 <= int(findings.min()) <= int(findings.max()) < len(table))
    if not (lists_fit and arrays_fit):
        return None
    stored_edges = _from_json(data, "edges")
    edges = None
    citations: dict[str, Collection[str]] = {}
    reused = like.index if like is not None and ids is like.ids else None
    index = reused if isinstance(reused, pool_scan.HashIndex) else pool_scan.HashIndex(ids)
    if like is not None and same("citations"):
        citations, edges = like.citations, like.edges
    elif stored_edges is not None:
        sources: dict[str, str] = {}  # a few thousand reflections cite a million rows: one string each
        share = sources.setdefault
        observations: list[str] = []
        cites: list[str] = []
        for part in _parts(data, "pairs"):
            observations += _shared_ids([obs for obs, _ in part], ids, index)
            cites += [share(source, source) for _, source in part]
        live_reflections = frozenset(stored_edges["live"])
        citations = cited_by(zip(observations, cites, strict=True), live_reflections)  # (before packing)
        edges = EdgeSet(packed.pack(observations), cites, int(stored_edges["high_water"]),
                        int(stored_edges["count"]), live_reflections)
    def column(stored: np.ndarray, dtype: Any, alike: np.ndarray | None) -> np.ndarray:
        """The stored column as `dtype` (not copied when it is), or `alike` when equal to it."""
        as_read = stored.astype(dtype, copy=False)
        return alike if alike is not None and np.array_equal(alike, as_read) else as_read

    rowids, live, rules, notes = (column(stored, dtype, None if like is None else getattr(like, name))
                                  for stored, dtype, name in ((rowids, np.int64, "rowids"), (live, bool, "live"),
                                                              (rules, np.uint8, "rules"), (notes, bool, "notes")))
    scan = BrainScan(ids=ids, created=created, sessions=sessions, rowids=rowids,
                     live=live, rules=rules, quality=quality,
                     findings=findings.astype(np.int32, copy=False), table=table, citations=citations,
                     reflection_counts=Counter(_from_json(data, "reflection_counts")), edges=edges,
                     notes=notes, row_keys=keys.astype(np.uint64, copy=False),
                     reflection_identifiers={t: frozenset(v) for t, v in
                                             _from_json(data, "reflection_identifiers").items()})
    scan.__dict__["index"] = index  # built above anyway
    scan.stored_digests = digests
    return scan


def _named(names: list[Any], codes: np.ndarray) -> list[Any]:
    """`names[k]` for each code, `_PART` codes at a time: one `tolist` of a million codes held the
    GIL 30-40 ms (a C call lets no other thread in) while a first open's tags loaded."""
    named: list[Any] = []
    for start in range(0, len(codes), _PART):
        named += [names[k] for k in codes[start:start + _PART].tolist()]
    return named


def _shared_ids(observations: list[str], ids: Any, index: pool_scan.HashIndex) -> list[str]:
    """The cited ids, each the scan's own string where the scan holds that id (one string per id,
    not one more per edge: 18 MB at 300,000 edges); as they are when the scan's ids are packed
    (they are packed too, then)."""
    if isinstance(ids, packed.PackedStrings):
        return observations
    at = index.positions(observations).tolist()
    return [ids[i] if i >= 0 else obs for obs, i in zip(observations, at, strict=True)]


def same_brain(brain: Brain, scan: BrainScan, sample: int = 64) -> bool:
    """Whether rows spread over the snapshot still hold the ids it has for them (most of them):
    a brain file replaced by another must not show the old one's tags, even for a moment."""
    if not len(scan):
        return True
    at = distinct_values(np.linspace(0, len(scan) - 1, num=min(sample, len(scan))).astype(np.int64)).tolist()
    expected = {int(scan.rowids[i]): scan.ids[i] for i in at}
    found = _ids_at(brain, list(expected))
    kept = sum(found.get(rowid) == oid for rowid, oid in expected.items())
    return bool(kept * 2 > len(expected))


@dataclass
class RowChanges:
    """How the brain's rows up to a snapshot's high-water mark differ from it."""

    changed: list[str]  # ids of rows whose text or scanned columns differ (or that are new below the mark)
    gone: list[int]     # rowids of the snapshot's rows no longer there (deleted, or now holding another id)

    def __bool__(self) -> bool:
        return bool(self.changed or self.gone)


@dataclass
class RowDiff:
    """What `compare_rows` found, by rowid (small: what a check in another process hands back)."""

    changed: list[int]  # rowids of rows whose hash differs, or that the snapshot did not have
    was: list[int]      # for each, its position in the snapshot's columns (-1: the snapshot did not have it)
    gone: list[int]     # rowids of the snapshot's rows no longer there


def changed_rows(brain: Brain, scan: BrainScan) -> RowChanges | None:
    """What differs in the brain now from the scan's rows up to `scan.high_water`; None when a
    fresh scan costs less (most rows changed) or is needed (a changed row has no id to fold by).

    Each row is read as one blob joined in SQL and compared by its hash (`pool_scan.row_key_sql`)."""
    assert scan.row_keys is not None
    return changes_of(brain, scan, compare_rows(brain, scan.rowids, scan.row_keys, scan.high_water))


def changes_of(brain: Brain, scan: BrainScan, diff: RowDiff | None) -> RowChanges | None:
    """The changes `compare_rows` found (`diff`, on the scan's columns), with the changed rows' ids
    as they are now (None as `changed_rows` says)."""
    if diff is None:
        return None
    was = [scan.ids[i] if i >= 0 else None for i in diff.was]
    return _with_ids(brain, list(diff.changed), was, list(diff.gone))


def compare_rows(brain: Brain, rowids: np.ndarray, row_keys: np.ndarray, high_water: int) -> RowDiff | None:
    """Which of the brain's rows up to `high_water` differ from a snapshot's (its `rowids` and
    `row_keys`, position by position), and which of its rows are gone; None when too many
    changed (`_too_many`). Reads only the brain and those two columns, so
    that another process can run it (`pool_scan.check_in_subprocess`)."""
    order = np.argsort(rowids, kind="stable")
    by_rowid, keys = rowids[order], row_keys[order]
    seen = np.zeros(len(by_rowid), dtype=bool)
    sql = pool_scan.row_key_sql(brain, " WHERE o.rowid <= ?")
    changed: list[int] = []
    was: list[int] = []  # the snapshot's position of each changed row (-1: a row it did not have)
    with brain.lock:
        cursor = brain.conn.execute(sql, [high_water])
        try:
            while rows := cursor.fetchmany(pool_scan.SCAN_CHUNK):
                found_rowids, blobs = zip(*rows, strict=True)
                found = np.array(found_rowids, dtype=np.int64)
                hashes = np.frombuffer(b"".join(map(_hash, blobs)), dtype=np.uint64)
                at = np.searchsorted(by_rowid, found).clip(0, max(len(by_rowid) - 1, 0))
                known = (by_rowid[at] == found) if len(by_rowid) else np.zeros(len(found), dtype=bool)
                seen[at[known]] = True
                differs = np.flatnonzero(~known | (keys[at] != hashes))
                changed += found[differs].tolist()
                was += np.where(known[differs], order[at[differs]], -1).tolist()
                if _too_many(len(changed), len(rowids)):
                    return None
        finally:
            cursor.close()
    gone = by_rowid[~seen].tolist()
    if _too_many(len(changed) + len(gone), len(rowids)):
        return None
    return RowDiff(changed, was, gone)


def _too_many(changes: int, rows: int) -> bool:
    return changes > 1000 and changes > _MOST_CHANGED * rows


def _hash(blob: bytes) -> bytes:
    return hashlib.blake2b(blob, digest_size=8).digest()


def _with_ids(brain: Brain, rowids: list[int], was: list[str | None], gone: list[int]) -> RowChanges | None:
    """The changes with the changed rows' ids as they are now. A row now holding another id than
    the snapshot's is also gone (its old id must not linger); None if a changed row has no id."""
    if not rowids:
        return RowChanges([], gone)
    now = _ids_at(brain, rowids)
    ids = [now.get(r) for r in rowids]
    if not all(ids):
        return None
    gone += [r for r, old, new in zip(rowids, was, ids, strict=True) if old is not None and old != new]
    return RowChanges([i for i in ids if i], gone)


def _ids_at(brain: Brain, rowids: list[int]) -> dict[int, str | None]:
    """The id each of those rowids holds now (a rowid no longer there is left out)."""
    sql = (f"SELECT rowid, CAST(id AS TEXT) FROM {cs.OBSERVATIONS} "
           "WHERE rowid IN (SELECT value FROM json_each(?))")
    return {r[0]: r[1] for r in brain.query(sql, [orjson.dumps(rowids).decode()])}


__all__ = ["RowChanges", "RowDiff", "changed_rows", "changes_of", "compare_rows", "first_look_path", "load_snapshot",
           "same_brain", "save_snapshot", "snapshot_path"]
