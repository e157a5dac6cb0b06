"""Candidate pairs for the duplicate finder: MinHash signatures, LSH banding, a signature cache.

Each text's word set (see `dedup_text`) gets a MinHash signature of `NUM_PERM`
32-bit values; two texts share a band (`r` consecutive values) with a
probability that rises steeply with the Jaccard similarity of their word sets.
The band layout (b, r) for `LSH_THRESHOLD` is the one datasketch's `MinHashLSH`
chooses (it optimises the false-positive and false-negative weights); a test
keeps `BAND_LAYOUT` equal to it.

datasketch's per-object MinHash and LSH insert/query cost about 0.6 ms per text
(measured: 60 s for 100,000 observations), so the signatures are computed with
numpy a whole batch at a time (the same universal-hash construction) and the
bands are grouped by sorting. A band bucket larger than `BUCKET_CAP` (a template
restated a thousand times with other numbers) would make the pairs quadratic: its
members are paired only with their neighbours in full-signature order, so exact
and near-exact copies still meet. Each text then keeps its `PER_ROW` most
similar candidates (by estimated Jaccard), which bounds the verification work.

Signatures are cached per text hash in cleo-tui's cache directory (outside the
brain), so a rescan computes them only for new texts. The cache is never a
reason to fail: when it cannot be used, signatures are simply computed.
"""

from __future__ import annotations

import hashlib
import sqlite3
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from cleo_tui.config import cache_dir
from cleo_tui.memory.dedup_text import TextKey

if TYPE_CHECKING:
    import numpy as np

NUM_PERM = 64
LSH_THRESHOLD = 0.5   # Jaccard of word sets where a pair becomes likely to be a candidate
EST_FLOOR = 0.45      # candidates whose estimated Jaccard is below this are dropped unverified
BUCKET_CAP = 8
PER_ROW = 4
SEED = 20260
_PRIME = (1 << 61) - 1
SIGNATURE_VERSION = f"v3:{NUM_PERM}:{SEED}"  # change when the words or the hashing change
_LOOKUP_CHUNK = 20_000
_BATCH = 4_000


def text_hash(text: str) -> bytes:
    """The cache key of one text (16-byte BLAKE2b of its UTF-8)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


# (bands, rows per band) that datasketch's MinHashLSH chooses for LSH_THRESHOLD at NUM_PERM
# (it minimises the weighted false-positive and false-negative areas). Importing datasketch
# pulls in scipy.integrate (about a second of start-up), so the layout is written down here
# and a test checks it against datasketch.
BAND_LAYOUT = (14, 4)


def band_layout() -> tuple[int, int]:
    """(bands, rows per band) for LSH_THRESHOLD at NUM_PERM."""
    return BAND_LAYOUT


def datasketch_layout() -> tuple[int, int]:
    """The layout datasketch computes for LSH_THRESHOLD at NUM_PERM (slow to import; for the test)."""
    from datasketch import MinHashLSH  # type: ignore[import-untyped]

    lsh = MinHashLSH(threshold=LSH_THRESHOLD, num_perm=NUM_PERM)
    return int(lsh.b), int(lsh.r)


@lru_cache(maxsize=1)
def _permutations() -> tuple[np.ndarray, np.ndarray]:
    import numpy as np

    rng = np.random.RandomState(SEED)
    a = rng.randint(1, 1 << 31, size=NUM_PERM, dtype=np.uint64)
    b = rng.randint(0, 1 << 31, size=NUM_PERM, dtype=np.uint64)
    return a, b


def signatures(word_sets: Sequence[Sequence[str]]) -> np.ndarray:
    """MinHash signatures (len × NUM_PERM, uint32) of word sets; an empty set gets all ones."""
    import numpy as np

    a, b = _permutations()
    out = np.full((len(word_sets), NUM_PERM), 0xFFFFFFFF, dtype=np.uint32)
    vocabulary: dict[str, int] = {}
    for start in range(0, len(word_sets), _BATCH):
        batch = word_sets[start:start + _BATCH]
        ids: list[int] = []
        lengths: list[int] = []
        for words in batch:
            unique = set(words)
            lengths.append(len(unique))
            for word in unique:
                index = vocabulary.get(word)
                if index is None:
                    index = vocabulary[word] = zlib.crc32(word.encode("utf-8", "surrogatepass"))
                ids.append(index)
        if not ids:
            continue
        hashed = np.asarray(ids, dtype=np.uint64)[:, None]
        permuted = (((hashed * a + b) % _PRIME) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        sizes = np.asarray(lengths)
        filled = np.nonzero(sizes)[0]
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))[filled]
        out[start + filled] = np.minimum.reduceat(permuted, starts, axis=0)
    return out


def _band_keys(sig: np.ndarray, start: int, stop: int) -> np.ndarray:
    """One uint64 key per row for the signature columns start..stop (a hash; collisions only add candidates)."""
    import numpy as np

    key = np.zeros(len(sig), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for column in range(start, stop):
            key = (key ^ sig[:, column].astype(np.uint64)) * np.uint64(0x9E3779B97F4A7C15)
    return key


def _run_bounds(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start, length) of each run of equal values in a sorted array."""
    import numpy as np

    if not len(sorted_keys):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    change = np.nonzero(sorted_keys[1:] != sorted_keys[:-1])[0] + 1
    starts = np.concatenate(([0], change))
    lengths = np.diff(np.concatenate((starts, [len(sorted_keys)])))
    return starts, lengths


def _band_pairs(order: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                full_rank: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Pairs from one band's buckets: all pairs in small buckets, neighbours in large ones."""
    import numpy as np

    pairs = []
    for size in np.unique(lengths[(lengths >= 2) & (lengths <= BUCKET_CAP)]):
        first = starts[lengths == size]
        members = order[first[:, None] + np.arange(size)]
        left, right = np.triu_indices(int(size), 1)
        pairs.append((members[:, left].ravel(), members[:, right].ravel()))
    hot = lengths > BUCKET_CAP
    if hot.any():
        # Members of large buckets, bucket by bucket, each bucket in full-signature order: pair neighbours.
        bucket = np.repeat(np.arange(int(hot.sum())), lengths[hot])
        spans = zip(starts[hot], lengths[hot], strict=False)
        members = order[np.concatenate([np.arange(st, st + ln) for st, ln in spans])]
        members = members[np.lexsort((full_rank[members], bucket))]
        same = bucket[1:] == bucket[:-1]
        pairs.append((members[:-1][same], members[1:][same]))
    return pairs


def candidate_pairs(sig: np.ndarray, eligible: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(left, right, estimated Jaccard) of candidate pairs, left < right, at most PER_ROW per row.

    `eligible` (bool per row) leaves out rows with no words.
    """
    import numpy as np

    n = len(sig)
    rows = np.arange(n) if eligible is None else np.nonzero(eligible)[0]
    if len(rows) < 2:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    bands, per_band = band_layout()
    local = sig[rows]
    full_rank = np.empty(len(rows), dtype=np.int64)
    full_rank[np.argsort(_band_keys(local, 0, NUM_PERM), kind="stable")] = np.arange(len(rows))
    found: list[tuple[np.ndarray, np.ndarray]] = []
    for band in range(bands):
        keys = _band_keys(local, band * per_band, (band + 1) * per_band)
        order = np.argsort(keys, kind="stable")
        starts, lengths = _run_bounds(keys[order])
        found += _band_pairs(order, starts, lengths, full_rank)
    if not found:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    left = rows[np.concatenate([p[0] for p in found])].astype(np.int64)
    right = rows[np.concatenate([p[1] for p in found])].astype(np.int64)
    low, high = np.minimum(left, right), np.maximum(left, right)
    codes = np.unique(low * n + high)
    low, high = codes // n, codes % n
    estimate = np.concatenate([(sig[low[i:i + 200_000]] == sig[high[i:i + 200_000]]).mean(axis=1)
                               for i in range(0, len(low), 200_000)])
    keep = estimate >= EST_FLOOR
    low, high, estimate = low[keep], high[keep], estimate[keep]
    keep = _top_per_row(low, high, estimate, PER_ROW)
    return low[keep], high[keep], estimate[keep]


def _top_per_row(low: np.ndarray, high: np.ndarray, estimate: np.ndarray, limit: int) -> np.ndarray:
    """Mask of pairs that are among the `limit` most similar of either of their rows."""
    import numpy as np

    by_similarity = np.argsort(-estimate, kind="stable")
    keep = np.zeros(len(low), dtype=bool)
    for ends in (low, high):
        ranked = ends[by_similarity]
        order = np.argsort(ranked, kind="stable")
        grouped = ranked[order]
        starts = np.searchsorted(grouped, grouped, side="left")
        rank = np.arange(len(grouped)) - starts
        keep[by_similarity[order[rank < limit]]] = True
    return keep


def cache_path() -> Path:
    return cache_dir() / "dedup_signatures.sqlite"


@dataclass
class SignatureCache:
    """Per text hash: its MinHash signature and its encoded words (`TextKey.encode`), in cleo-tui's
    cache directory; silently absent when unusable."""

    path: Path | None = None
    _conn: sqlite3.Connection | None = None
    _broken: bool = False

    def _connect(self) -> sqlite3.Connection | None:
        if self._conn is None and not self._broken:
            try:
                path = self.path or cache_path()
                path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(str(path), timeout=5, isolation_level=None, check_same_thread=False)
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("CREATE TABLE IF NOT EXISTS texts (version TEXT NOT NULL, text_hash BLOB NOT NULL, "
                             "signature BLOB NOT NULL, words TEXT NOT NULL, PRIMARY KEY (version, text_hash)) "
                             "WITHOUT ROWID")
                self._conn = conn
            except (OSError, sqlite3.Error):
                self._broken = True
        return self._conn

    def lookup(self, keys: Sequence[bytes]) -> dict[bytes, tuple[bytes, str]]:
        """(signature bytes, encoded words) for the keys the cache has."""
        conn = self._connect()
        found: dict[bytes, tuple[bytes, str]] = {}
        if conn is None:
            return found
        try:
            for start in range(0, len(keys), _LOOKUP_CHUNK):
                chunk = keys[start:start + _LOOKUP_CHUNK]
                for key, signature, words in conn.execute(
                        f"SELECT text_hash, signature, words FROM texts WHERE version = ? AND text_hash IN "
                        f"({','.join('?' * len(chunk))})", (SIGNATURE_VERSION, *chunk)):
                    found[key] = (signature, words)
        except sqlite3.Error:
            self._broken = True
        return found

    def store(self, items: Sequence[tuple[bytes, bytes, str]]) -> None:
        """Remember new texts in one transaction; a failure only costs speed next time."""
        conn = self._connect()
        if conn is None or not items:
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany("INSERT OR IGNORE INTO texts (version, text_hash, signature, words) VALUES (?, ?, ?, ?)",
                             [(SIGNATURE_VERSION, *item) for item in items])
            conn.execute("COMMIT")
        except sqlite3.Error:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            self._broken = True

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def cached_signatures(text_hashes: Sequence[bytes], encode: Callable[[int], str],
                      cache: SignatureCache | None = None) -> tuple[np.ndarray, list[str], int]:
    """Signatures and encoded words of every text, from the cache where it has them.

    `encode(index)` gives the encoded words of a text the cache lacks. Returns
    (signatures, encoded words, how many were computed).
    """
    import numpy as np

    own = cache is None
    cache = cache or SignatureCache()
    try:
        known = cache.lookup(list(dict.fromkeys(text_hashes)))
        sig = np.empty((len(text_hashes), NUM_PERM), dtype=np.uint32)
        encoded: list[str] = [""] * len(text_hashes)
        missing = []
        for index, key in enumerate(text_hashes):
            hit = known.get(key)
            if hit is not None and len(hit[0]) == 4 * NUM_PERM:
                sig[index] = np.frombuffer(hit[0], dtype=np.uint32)
                encoded[index] = hit[1]
            else:
                missing.append(index)
        if missing:
            for index in missing:
                encoded[index] = encode(index)
            computed = signatures([TextKey.decode(encoded[i]).words for i in missing])
            sig[missing] = computed
            fresh = {text_hashes[i]: (computed[k].tobytes(), encoded[i]) for k, i in enumerate(missing)}
            cache.store([(key, signature, words) for key, (signature, words) in fresh.items()])
        return sig, encoded, len(missing)
    finally:
        if own:
            cache.close()
