"""Detector findings by row: the per-brain cache file keyed by rowid and a hash of the row's
title and narrative (`FindingsCacheFile`), its table stored as the arrays of a `FindingsTable`.
"""

from __future__ import annotations

import zipfile
import zlib
from typing import Any

import numpy as np

from cleo_tui.brain.store import Brain
from cleo_tui.memory import detectors, mapping
from cleo_tui.memory.cache_files import brain_cache_file, write_npz
from cleo_tui.memory.pool_scan.findings_table import FindingsTable


def content_keys(titles: list[bytes], narratives: list[bytes]) -> np.ndarray:
    """uint64 key of each row's title and narrative: the CRC-32 of the narrative beside the title's.

    The findings cache is looked up by rowid and this key, so it only has to tell an edited
    row from its cached self: two CRCs in C cost a third of a blake2b object per row."""
    count = len(titles)
    high = np.fromiter(map(zlib.crc32, narratives), dtype=np.uint64, count=count)
    low = np.fromiter(map(zlib.crc32, titles), dtype=np.uint64, count=count)
    return (high << np.uint64(32)) | low


def decode_lenient(raw: bytes) -> str:
    """The text of stored bytes, invalid UTF-8 shown as replacement characters."""
    return raw.decode("utf-8", "replace")


def judged_text_of(title: str, narrative: str) -> str:
    """The text the detectors read: the content (narrative, or title when it is blank), titled when that adds."""
    content = narrative if narrative.strip() else title
    return content if not title or content.startswith(title) else f"{title}\n{content}"


def judged_text(row: dict[str, Any]) -> str:
    """The text the detectors read for a row read with POOL_COLUMNS: the content, titled when that adds."""
    return judged_text_of(mapping.as_text(row.get("title")), mapping.as_text(row.get("narrative")))



KEYS_FORMAT = "crc2"  # how `content_keys` hashes (a file of another kind is not read)
TABLE_FORMAT = "t2"  # t2: the table as a `FindingsTable`'s arrays (before: one string per entry)


class FindingsCacheFile:
    """The per-brain cache of findings by (rowid, content key), next to the token cache."""

    def __init__(self, brain: Brain) -> None:
        self.path = brain_cache_file("row_findings", brain.path, f"{detectors.RULES_KEY}-{KEYS_FORMAT}-{TABLE_FORMAT}")
        self.rowids = np.zeros(0, dtype=np.int64)
        self.keys = np.zeros(0, dtype=np.uint64)
        self.entries = np.zeros(0, dtype=np.int32)
        self.table = FindingsTable.empty()
        try:
            with np.load(self.path, allow_pickle=False) as data:
                rowids, keys, entries = data["rowids"], data["keys"], data["entries"]
                table = FindingsTable.from_arrays(data, "table_")
            if not len(rowids) == len(keys) == len(entries) or \
                    (len(entries) and not 0 <= int(entries.min()) <= int(entries.max()) < len(table)):
                raise ValueError("damaged")
            order = np.argsort(rowids, kind="stable")
            self.rowids, self.keys, self.entries = rowids[order], keys[order], entries[order].astype(np.int32)
            self.table = table
        except (OSError, KeyError, ValueError, UnicodeDecodeError, EOFError, zipfile.BadZipFile):
            self.rowids = np.zeros(0, dtype=np.int64)
            self.keys = np.zeros(0, dtype=np.uint64)
            self.entries = np.zeros(0, dtype=np.int32)
            self.table = FindingsTable.empty()

    def lookup(self, rowids: np.ndarray, keys: np.ndarray) -> np.ndarray:
        """int32 table index of each row whose cached hash matches, else -1."""
        found = np.full(len(rowids), -1, dtype=np.int32)
        if not len(self.rowids) or not len(rowids):
            return found
        at = np.searchsorted(self.rowids, rowids).clip(0, len(self.rowids) - 1)
        hit = (self.rowids[at] == rowids) & (self.keys[at] == keys)
        found[hit] = self.entries[at[hit]]
        return found

    def save(self, rowids: np.ndarray, keys: np.ndarray, entries: np.ndarray, table: FindingsTable) -> None:
        """Replace the file (atomically); a failure only costs speed next time."""
        # Rows this scan did not read (evicted ones, when only live rows were read) keep theirs.
        keep = ~np.isin(self.rowids, rowids)
        if keep.any():
            rowids = np.concatenate([rowids, self.rowids[keep]])
            keys = np.concatenate([keys, self.keys[keep]])
            entries = np.concatenate([entries, self.entries[keep]])
        write_npz(self.path, {"rowids": rowids, "keys": keys, "entries": entries,
                              **table.arrays("table_")})

