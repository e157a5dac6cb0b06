"""Token counts of rendered pool lines (and detector findings), cached outside the brain.

The cache is a small SQLite file in cleo-tui's platform cache directory, keyed
by (tokenizer, BLAKE2b hash of the line), so a second preview of a large brain
does not tokenize again, previews work on read-only brains, and a preview never
writes to the brain. When the cache cannot be opened or written (a read-only
home, a damaged file) counting still works, only slower: a cache is never a
reason to fail.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cleo_tui.config import cache_dir
from cleo_tui.memory.tokenizers import Tokenizer

Progress = Callable[[int, int], None]
_LOOKUP_CHUNK = 20_000
_PROGRESS_EVERY = 2_000


def cache_path() -> Path:
    return cache_dir() / "token_counts.sqlite"


def line_key(line: str) -> bytes:
    """The cache key of one rendered line or text (16-byte BLAKE2b of its UTF-8)."""
    return hashlib.blake2b(line.encode("utf-8", "surrogatepass"), digest_size=16).digest()


@dataclass
class CountStats:
    """How a batch of lines was counted."""

    lines: int = 0
    from_cache: int = 0
    counted: int = 0
    cache_used: bool = False
    seconds: float = 0.0


# The cache's tables: (name, kind column, key column, value column and type).
CacheTable = tuple[str, str, str, str, str]
_LINE_TOKENS: CacheTable = ("line_tokens", "tokenizer", "line_hash", "tokens", "INTEGER")
_TEXT_FINDINGS: CacheTable = ("text_findings", "rules", "text_hash", "findings", "TEXT")


class TokenCache:
    """cleo-tui's cache database: token counts of pool lines, and what the protection
    detectors found in a text (keyed by a hash of the rules). Opened lazily; silently
    absent when unusable."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or cache_path()
        self._conn: sqlite3.Connection | None = None
        self._broken = False

    def _connect(self) -> sqlite3.Connection | None:
        if self._conn is None and not self._broken:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(str(self.path), timeout=5, isolation_level=None, check_same_thread=False)
                conn.execute("PRAGMA journal_mode = WAL")
                for table, kind, key, value, kind_of_value in (_LINE_TOKENS, _TEXT_FINDINGS):
                    conn.execute(f"CREATE TABLE IF NOT EXISTS {table} ({kind} TEXT NOT NULL, {key} BLOB NOT NULL, "
                                 f"{value} {kind_of_value} NOT NULL, PRIMARY KEY ({kind}, {key})) WITHOUT ROWID")
                self._conn = conn
            except (OSError, sqlite3.Error):
                self._broken = True
        return self._conn

    def _lookup(self, table: CacheTable, kind: str, keys: Sequence[bytes]) -> dict[bytes, Any]:
        name, kind_column, key_column, value_column, _ = table
        conn = self._connect()
        found: dict[bytes, Any] = {}
        if conn is None:
            return found
        try:
            for start in range(0, len(keys), _LOOKUP_CHUNK):
                chunk = keys[start:start + _LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                found.update(conn.execute(
                    f"SELECT {key_column}, {value_column} FROM {name} "
                    f"WHERE {kind_column} = ? AND {key_column} IN ({marks})", (kind, *chunk)).fetchall())
        except sqlite3.Error:
            self._broken = True
        return found

    def _store(self, table: CacheTable, kind: str, items: Sequence[tuple[bytes, Any]]) -> None:
        """One transaction; a failure only costs speed next time."""
        name, kind_column, key_column, value_column, _ = table
        conn = self._connect()
        if conn is None or not items:
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(f"INSERT OR IGNORE INTO {name} ({kind_column}, {key_column}, {value_column}) "
                             "VALUES (?, ?, ?)", [(kind, key, value) for key, value in items])
            conn.execute("COMMIT")
        except sqlite3.Error:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            self._broken = True

    def lookup(self, tokenizer: str, keys: Sequence[bytes]) -> dict[bytes, int]:
        """Cached token counts for those line keys that have one."""
        return self._lookup(_LINE_TOKENS, tokenizer, keys)

    def store(self, tokenizer: str, items: Sequence[tuple[bytes, int]]) -> None:
        """Remember new token counts."""
        self._store(_LINE_TOKENS, tokenizer, items)

    def lookup_findings(self, rules: str, keys: Sequence[bytes]) -> dict[bytes, str]:
        """Cached detector findings (encoded text) for those text keys that have them."""
        return self._lookup(_TEXT_FINDINGS, rules, keys)

    def holds_findings(self, rules: str) -> bool:
        """Whether any findings under the rules' hash are cached (none: looking texts up is wasted)."""
        conn = self._connect()
        if conn is None:
            return False
        try:
            return conn.execute(f"SELECT 1 FROM {_TEXT_FINDINGS[0]} WHERE {_TEXT_FINDINGS[1]} = ? LIMIT 1",
                                (rules,)).fetchone() is not None
        except sqlite3.Error:
            self._broken = True
            return False

    def store_findings(self, rules: str, items: Sequence[tuple[bytes, str]]) -> None:
        """Remember detector findings under the rules' hash."""
        self._store(_TEXT_FINDINGS, rules, items)

    @property
    def usable(self) -> bool:
        return self._connect() is not None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def count_line_units(lines: Sequence[str], tokenizer: Tokenizer, progress: Progress | None = None,
                     cache: TokenCache | None = None) -> tuple[list[int], CountStats]:
    """Units (see tokenizers) of each line; tiktoken counts come from the cache where it has them.

    `progress(done, total)` is called now and then while lines are counted.
    """
    started = time.perf_counter()
    total = len(lines)
    stats = CountStats(lines=total)
    if not tokenizer.cached:
        units = [tokenizer.line_units(line) for line in lines]
        stats.counted = total
        stats.seconds = time.perf_counter() - started
        if progress:
            progress(total, total)
        return units, stats
    own_cache = cache is None
    cache = cache or TokenCache()
    try:
        keys = [line_key(line) for line in lines]
        known = cache.lookup(tokenizer.name, keys)
        stats.cache_used = cache.usable
        units = []
        new: list[tuple[bytes, int]] = []
        for index, (line, key) in enumerate(zip(lines, keys, strict=True)):
            count = known.get(key)
            if count is None:
                count = tokenizer.line_units(line)
                known[key] = count
                new.append((key, count))
            units.append(count)
            if progress and index % _PROGRESS_EVERY == 0:
                progress(index, total)
        if progress:
            progress(total, total)
        stats.counted = len(new)
        stats.from_cache = total - len(new)
        cache.store(tokenizer.name, new)
        stats.seconds = time.perf_counter() - started
        return units, stats
    finally:
        if own_cache:
            cache.close()
