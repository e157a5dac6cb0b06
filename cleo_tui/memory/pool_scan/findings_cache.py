"""Detector findings by row: the per-brain cache file keyed by rowid and a hash of the row's
title and narrative (`FindingsCacheFile`), and the one string per identifier the findings share.
"""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from cleo_tui.brain.store import Brain
from cleo_tui.memory import detectors, mapping
from cleo_tui.memory.cache_files import brain_cache_file, write_npz
from cleo_tui.memory.detectors import Findings

NO_FINDINGS: Findings = ((), ())  # table[0] of every findings table


def content_keys(titles: list[bytes], narratives: list[bytes]) -> np.ndarray:
    """uint64 key of each row's title and narrative: the CRC-32 of the narrative beside the title's.

    The findings cache is looked up by rowid and this key, so it only has to tell an edited
    row from its cached self: two CRCs in C cost a third of a blake2b object per row."""
    count = len(titles)
    high = np.fromiter(map(zlib.crc32, narratives), dtype=np.uint64, count=count)
    low = np.fromiter(map(zlib.crc32, titles), dtype=np.uint64, count=count)
    return (high << np.uint64(32)) | low


def shared_findings(findings: Findings, strings: dict[str, str]) -> Findings:
    """The same findings holding the one copy of each string in `strings` (added there if new).

    A million rows' findings name a few ten thousand identifiers: one string each, not one
    per row that holds it, saves about 50 MB."""
    ids, reasons = findings
    return (tuple(map(strings.setdefault, ids, ids)) if ids else (),
            tuple(map(strings.setdefault, reasons, reasons)) if reasons else ())


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


class FindingsCacheFile:
    """The per-brain cache of findings by (rowid, content key), next to the token cache."""

    def __init__(self, brain: Brain) -> None:
        self.path = brain_cache_file("row_findings", brain.path, f"{detectors.RULES_KEY}-{KEYS_FORMAT}")
        self.rowids = np.zeros(0, dtype=np.int64)
        self.keys = np.zeros(0, dtype=np.uint64)
        self.entries = np.zeros(0, dtype=np.int32)
        self.table: list[Findings] = [NO_FINDINGS]
        try:
            with np.load(self.path, allow_pickle=False) as data:
                rowids, keys, entries = data["rowids"], data["keys"], data["entries"]
                table = bytes(data["table"]).decode("utf-8", "surrogatepass").split("\x1d")
            order = np.argsort(rowids, kind="stable")
            self.rowids, self.keys, self.entries = rowids[order], keys[order], entries[order]
            strings: dict[str, str] = {}
            self.table = [shared_findings(detectors._decode(t), strings) for t in table]
            if not self.table or self.table[0] != NO_FINDINGS or (len(entries) and entries.max() >= len(self.table)):
                raise ValueError("damaged")
        except (OSError, KeyError, ValueError, UnicodeDecodeError, EOFError, zipfile.BadZipFile):
            self.rowids = np.zeros(0, dtype=np.int64)
            self.keys = np.zeros(0, dtype=np.uint64)
            self.entries = np.zeros(0, dtype=np.int32)
            self.table = [NO_FINDINGS]

    def lookup(self, rowids: np.ndarray, keys: np.ndarray) -> np.ndarray:
        """int32 table index of each row whose cached hash matches, else -1."""
        found = np.full(len(rowids), -1, dtype=np.int32)
        if not len(self.rowids) or not len(rowids):
            return found
        at = np.searchsorted(self.rowids, rowids).clip(0, len(self.rowids) - 1)
        hit = (self.rowids[at] == rowids) & (self.keys[at] == keys)
        found[hit] = self.entries[at[hit]]
        return found

    def save(self, rowids: np.ndarray, keys: np.ndarray, entries: np.ndarray, table: Sequence[Findings]) -> None:
        """Replace the file (atomically); a failure only costs speed next time."""
        # Rows this scan did not read (evicted ones, when only live rows were read) keep theirs.
        keep = ~np.isin(self.rowids, rowids)
        if keep.any():
            rowids = np.concatenate([rowids, self.rowids[keep]])
            keys = np.concatenate([keys, self.keys[keep]])
            entries = np.concatenate([entries, self.entries[keep]])
        blob = "\x1d".join(detectors._encode(t) for t in table).encode("utf-8", "surrogatepass")
        write_npz(self.path, {"rowids": rowids, "keys": keys, "entries": entries,
                              "table": np.frombuffer(blob, dtype=np.uint8)})


