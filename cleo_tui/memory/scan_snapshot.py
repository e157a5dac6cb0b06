"""The last tag scan of a brain, kept on disk, so that reopening the brain shows tags at once.

A scan of a million observations reads every title and narrative again, which is
most of its 15 s even when the findings cache knows every text. The snapshot
holds the scan's columns in the platform cache directory. Reopening takes them
from it and folds in the rows added since (as the live brain's fold does), and
only then checks every row in the background: a row whose text or columns differ
from the snapshot is folded in again, and a brain that lost rows (or gave a rowid
another id) is scanned afresh. The check reads the rows but runs no detector and
builds no columns, so it costs about half a scan.

A damaged or unreadable snapshot file is ignored; a failure to write one only
costs speed next time.
"""

from __future__ import annotations

import hashlib
import operator
import os
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from cleo_tui.brain.store import Brain
from cleo_tui.config import cache_dir
from cleo_tui.memory import detectors, pool_scan
from cleo_tui.memory.pool_scan import BrainScan, EdgeSet

FORMAT = "1"
_MOST_CHANGED = 0.25  # more rows than this changed: a fresh scan costs less than folding them


def snapshot_path(brain: Brain) -> Path:
    """Where the brain's snapshot lives (by its absolute path, the detectors' rules and this format)."""
    name = hashlib.sha256(os.path.abspath(str(brain.path)).encode("utf-8", "surrogatepass")).hexdigest()[:20]
    return cache_dir() / "scan_snapshots" / f"{name}-{detectors.RULES_KEY}-{FORMAT}.npz"


def _json(value: Any) -> np.ndarray:
    return np.frombuffer(orjson.dumps(value), dtype=np.uint8)


def _from_json(data: Any, name: str) -> Any:
    return orjson.loads(bytes(data[name]))


def save_snapshot(brain: Brain, scan: BrainScan) -> bool:
    """Write the scan (a whole brain's, with its keys) as the brain's snapshot; False if it cannot be kept."""
    if scan.keys is None or (scan.edges is None and scan.citations):
        return False  # (citations read without their edges' rowids could not be brought up to date)
    sessions = list(dict.fromkeys(scan.sessions))
    where = {s: k for k, s in enumerate(sessions)}
    edges = scan.edges
    try:
        columns = {
            "ids": _json(scan.ids), "created": _json(scan.created), "quality": _json(scan.quality),
            "session_names": _json(sessions),
            "sessions": np.fromiter(map(where.__getitem__, scan.sessions), dtype=np.int32, count=len(scan)),
            "table": _json([[list(ids), list(reasons)] for ids, reasons in scan.table]),
            "reflection_counts": _json(dict(scan.reflection_counts)),
            "reflection_identifiers": _json({t: sorted(ids) for t, ids in scan.reflection_identifiers.items()}),
            "edges": _json(None if edges is None else
                           {"pairs": edges.pairs, "high_water": edges.high_water, "count": edges.count,
                            "live": sorted(edges.live)}),
        }
    except (TypeError, orjson.JSONEncodeError):  # e.g. a lone surrogate from undecodable bytes
        return False
    path = snapshot_path(brain)
    tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npz")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        columns.update(rowids=scan.rowids, live=scan.live, rules=scan.rules, findings=scan.findings,
                       notes=pool_scan._notes_of(scan), keys=scan.keys)
        np.savez(tmp, allow_pickle=False, **columns)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        return False
    return True


def load_snapshot(brain: Brain) -> BrainScan | None:
    """The brain's last saved scan, or None (none yet, or not readable)."""
    try:
        with np.load(snapshot_path(brain), allow_pickle=False) as data:
            ids, created, quality = (_from_json(data, n) for n in ("ids", "created", "quality"))
            names = _from_json(data, "session_names")
            rowids, live, rules, findings, notes, keys = (data[n] for n in
                                                         ("rowids", "live", "rules", "findings", "notes", "keys"))
            table = [(tuple(i), tuple(r)) for i, r in _from_json(data, "table")]
            sessions = [names[k] for k in data["sessions"].tolist()]
            reflection_counts = Counter(_from_json(data, "reflection_counts"))
            identifiers = {t: frozenset(v) for t, v in _from_json(data, "reflection_identifiers").items()}
            stored_edges = _from_json(data, "edges")
    except (OSError, KeyError, ValueError, TypeError, IndexError, EOFError, zipfile.BadZipFile,
            orjson.JSONDecodeError):
        return None
    n = len(ids)
    if not (len(created) == len(quality) == len(sessions) == len(rowids) == len(live) == len(rules)
            == len(findings) == len(notes) == len(keys) == n) or (n and int(findings.max()) >= len(table)):
        return None
    edges = None
    citations: dict[str, set[str]] = {}
    if stored_edges is not None:
        pairs = list(map(tuple, stored_edges["pairs"]))
        edges = EdgeSet(pairs, int(stored_edges["high_water"]), int(stored_edges["count"]),
                        frozenset(stored_edges["live"]))
        citations = pool_scan._cited_by(pairs, edges.live)
    return BrainScan(ids=ids, created=created, sessions=sessions, rowids=rowids.astype(np.int64),
                     live=live.astype(bool), rules=rules.astype(np.uint8), quality=quality,
                     findings=findings.astype(np.int32), table=table, citations=citations,
                     reflection_counts=reflection_counts, edges=edges, notes=notes.astype(bool),
                     reflection_identifiers=identifiers, keys=keys.astype(np.uint64))


def changed_rows(brain: Brain, scan: BrainScan) -> list[str] | None:
    """Ids of the rows up to `scan.high_water` whose text or scanned columns differ in the brain now;
    None when a fresh scan is needed (a row vanished or changed its id, or most rows changed)."""
    try:
        return _changed_rows(brain, scan, strict=True)
    except pool_scan._Undecodable:
        return _changed_rows(brain, scan, strict=False)


def _changed_rows(brain: Brain, scan: BrainScan, strict: bool) -> list[str] | None:
    assert scan.keys is not None
    order = np.argsort(scan.rowids, kind="stable")
    by_rowid = scan.rowids[order]
    sql = pool_scan._scan_sql(brain, " WHERE o.rowid <= ?")
    changed: list[str] = []
    seen = 0
    for rows in pool_scan._fetch_chunks(brain, sql, [scan.high_water], strict):
        c = pool_scan._columns_of(rows)
        rowids = np.array(c.rowids, dtype=np.int64)
        at = np.searchsorted(by_rowid, rowids).clip(0, max(len(by_rowid) - 1, 0))
        known = by_rowid[at] == rowids if len(by_rowid) else np.zeros(len(rowids), dtype=bool)
        here = np.flatnonzero(known)
        index = order[at[here]]
        seen += len(here)
        keys = np.frombuffer(b"".join(map(pool_scan._content_hash, c.titles, c.narratives)), dtype=np.uint64)
        differs = ((scan.keys[index] != keys[here]) | (scan.live[index] != np.array(c.live, dtype=bool)[here])
                   | (scan.rules[index] != np.array(c.rules, dtype=np.uint8)[here])
                   | (pool_scan._notes_of(scan)[index] != np.array(c.notes, dtype=bool)[here]))
        positions = index.tolist()
        for name in ("ids", "created", "sessions", "quality"):
            mine, theirs = _gathered(getattr(scan, name), positions), _gathered(getattr(c, name), here.tolist())
            if mine != theirs:
                differs |= np.array([a != b for a, b in zip(mine, theirs, strict=True)], dtype=bool)
        for j in np.flatnonzero(differs).tolist():
            if scan.ids[positions[j]] != c.ids[here[j]]:
                return None  # the rowid now holds another row: its old id would linger
            changed.append(c.ids[here[j]])
        changed += [c.ids[j] for j in np.flatnonzero(~known).tolist()]  # written below the mark later
        if len(changed) > _MOST_CHANGED * max(len(scan), 1):
            return None
    return changed if seen == len(scan) else None


def _gathered(values: list[Any], positions: list[int]) -> tuple[Any, ...]:
    if not positions:
        return ()
    got = operator.itemgetter(*positions)(values)
    return got if len(positions) > 1 else (got,)


__all__ = ["changed_rows", "load_snapshot", "save_snapshot", "snapshot_path"]
