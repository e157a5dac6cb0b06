"""Candidate pairs for the duplicate finder: MinHash signatures, LSH banding, the scan cache.

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

A scan's results are cached per brain in cleo-tui's cache directory (outside the
brain, `ScanCache`): each text's signature and words by a hash of the text, and
each verified pair's similarity by the pair of text hashes. A rescan computes
signatures only for new texts and verifies only new pairs. The file holds only
what the last scan saw (it is rewritten whole), so it stays the size of the live
pool. The cache is never a reason to fail: when it cannot be used, everything is
simply computed.
"""

from __future__ import annotations

import hashlib
import itertools
import zipfile
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from cleo_tui.memory.cache_files import brain_cache_file, read_arrays, write_arrays
from cleo_tui.memory.distinct import distinct_with_first
from cleo_tui.memory.pool_scan.containers import taken_in_order

NUM_PERM = 64
LSH_THRESHOLD = 0.5   # Jaccard of word sets where a pair becomes likely to be a candidate
EST_FLOOR = 0.45      # candidates whose estimated Jaccard is below this are dropped unverified
BUCKET_CAP = 8
PER_ROW = 4
SEED = 20260
_PRIME = (1 << 61) - 1
SIGNATURE_VERSION = f"v7-{NUM_PERM}-{SEED}"  # change when the words, hashing, verdicts or file layout change
_BATCH = 4_000
# Words whose hash columns `Signer` gathers at once, and pairs whose signatures `_agreement`
# gathers at once: each gathered block (64 values of 4 bytes a word or row) stays under 32 MB,
# the largest block glibc's malloc reuses rather than maps afresh and page-faults in each time
# (64 MB gathers cost the cold demo run 0.2-0.3 s of system CPU and 33 MB of peak memory).
_GATHER_WORDS = 100_000
_ESTIMATE_CHUNK = 60_000


def text_hashes(texts: Sequence[str]) -> np.ndarray:
    """The cache key of each text: uint64 from an 8-byte BLAKE2b of its UTF-8 (with its length,
    checked beside it, a collision among a million texts is below one in a billion)."""
    blake = hashlib.blake2b
    joined = b"".join(blake(t.encode("utf-8", "surrogatepass"), digest_size=8).digest() for t in texts)
    return np.frombuffer(joined, dtype=np.uint64).copy()


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


# The universal hash's coefficients a and b: the first NUM_PERM draws of each from numpy's
# `RandomState(SEED).randint` (1..2^31 and 0..2^31; `test_dedup_signatures` draws them again), written
# down because importing numpy.random costs every first scan about 15 ms.
_HASH_A = (
    1828144670, 508837426, 762119556, 2028049652, 139327948, 1377333838, 1709651562, 1101264210, 1231052889,
    2056917209, 1473275398, 1052755099, 239295455, 284892025, 1993437329, 1413125140, 1338056228, 1301279780,
    209264591, 1758620305, 1370596208, 713696821, 1124778041, 1952127872, 1892095482, 783769133, 2034589732,
    1509085256, 1595403126, 1660341840, 1955432926, 1671377296, 767361254, 1031489616, 1424289232, 1575756231,
    898334051, 249840515, 1807095917, 1526440902, 720563617, 812375023, 659834439, 1429967969, 685610972,
    1771958576, 746386938, 373051388, 1668552046, 52182798, 1951685331, 83028988, 303375940, 1705611221,
    1071083929, 577530633, 1221080817, 1711042381, 2140039013, 1684588316, 1281808044, 54917864, 308976755,
    323063892,
)
_HASH_B = (
    1356677513, 1687805182, 1152205418, 1086425106, 1753139345, 1313478205, 1917633039, 960551980, 584713511,
    773672883, 1422794184, 1240632865, 939830973, 1631157953, 2143694381, 1651859059, 1798498820, 1470502901,
    1668089908, 51821013, 254313354, 79435793, 1262696976, 147217396, 1965750038, 886746767, 1833588156,
    1818961924, 170896195, 904749869, 469145990, 1173674956, 2023941532, 1150306293, 1553207567, 2087107219,
    854299705, 327668710, 1057839928, 1955708528, 2031157115, 2060422110, 1415558180, 322946221, 1606365819,
    1357654246, 971323875, 467629197, 869888895, 1644239310, 1889856380, 1203084086, 786973334, 2143118421,
    578984193, 664192160, 392303323, 1274787092, 1754975231, 365974187, 1117867221, 764959486, 1485829948,
    1364722427,
)


@lru_cache(maxsize=1)
def _permutations() -> tuple[np.ndarray, np.ndarray]:
    return np.array(_HASH_A, dtype=np.uint64), np.array(_HASH_B, dtype=np.uint64)


def _permuted(word_hashes: list[int]) -> np.ndarray:
    """The NUM_PERM hash values (uint32) of each word hash: (a·h + b) mod p, low 32 bits."""
    a, b = _permutations()
    hashed = np.asarray(word_hashes, dtype=np.uint64)[:, None]
    return np.asarray((((hashed * a + b) % _PRIME) & np.uint64(0xFFFFFFFF)).astype(np.uint32))


def signatures(word_sets: Sequence[Iterable[str]]) -> np.ndarray:
    """MinHash signatures (len × NUM_PERM, uint32) of word sets; an empty set gets all ones."""
    signer = Signer()
    out = np.empty((len(word_sets), NUM_PERM), dtype=np.uint32)
    for start in range(0, len(word_sets), _BATCH):
        batch = word_sets[start:start + _BATCH]
        out[start:start + len(batch)] = signer([w if isinstance(w, (set, frozenset)) else set(w) for w in batch])
    return out


class Signer:
    """MinHash signatures of word sets, batch after batch, each distinct word hashed once for all.

    Texts share most of their words, so each distinct word is hashed once (a column of a
    table) and a text's signature is the minimum over its words' columns; words are looked
    up a batch at a time in C (`map`). The columns gathered at once are bounded
    (`_GATHER_WORDS`): gathering a batch of 4,000 long texts' words (64 values each)
    held hundreds of MB.
    """

    def __init__(self) -> None:
        self.vocabulary = _Vocabulary()
        # One column per word: gathering columns and reducing along rows works on contiguous memory,
        # several times quicker than the same with a row per word. The first `len(vocabulary)`
        # columns are filled; the table doubles when it is full (copying it whole for each batch's
        # new words was quadratic in a large vocabulary).
        self.table = np.zeros((NUM_PERM, 1024), dtype=np.uint32)

    def __call__(self, unique: Sequence[set[str] | frozenset[str]]) -> np.ndarray:
        """The signatures of these word sets."""
        out = np.full((len(unique), NUM_PERM), 0xFFFFFFFF, dtype=np.uint32)
        sizes = np.fromiter(map(len, unique), dtype=np.int64, count=len(unique))
        ends = np.cumsum(sizes)
        start = 0
        while start < len(unique):
            # The texts from `start` whose words fit the budget (always one at least).
            stop = max(start + 1, int(np.searchsorted(ends, ends[start] - sizes[start] + _GATHER_WORDS, "right")))
            out[start:stop] = self._signed(unique[start:stop], sizes[start:stop])
            start = stop
        return out

    def _signed(self, unique: Sequence[set[str] | frozenset[str]], sizes: np.ndarray) -> np.ndarray:
        out = np.full((len(unique), NUM_PERM), 0xFFFFFFFF, dtype=np.uint32)
        words = list(itertools.chain.from_iterable(unique))
        if not words:
            return out
        vocabulary = self.vocabulary
        ids = np.fromiter(map(vocabulary.__getitem__, words), dtype=np.intp, count=len(words))  # (new words too)
        if vocabulary.new:
            first, count = len(vocabulary) - len(vocabulary.new), len(vocabulary.new)
            if len(vocabulary) > self.table.shape[1]:
                grown = np.zeros((NUM_PERM, max(2 * self.table.shape[1], len(vocabulary))), dtype=np.uint32)
                grown[:, :first] = self.table[:, :first]
                self.table = grown
            self.table[:, first:first + count] = _permuted(
                [zlib.crc32(w.encode("utf-8", "surrogatepass")) for w in vocabulary.new]).T
            vocabulary.new.clear()
        filled = np.nonzero(sizes)[0]
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))[filled]
        gathered = self.table.take(ids, axis=1)
        out[filled] = np.minimum.reduceat(gathered, starts, axis=1).T
        return out


class _Vocabulary(dict[str, int]):
    """Word → its column in `Signer.table`; a word looked up for the first time gets the next
    column and waits in `new` for its hash values (so a batch's words are looked up once, in C,
    with no set of them made to find the new ones first)."""

    def __init__(self) -> None:
        super().__init__()
        self.new: list[str] = []

    def __missing__(self, word: str) -> int:
        column = self[word] = len(self)
        self.new.append(word)
        return column


def _band_keys(columns: np.ndarray, start: int, stop: int) -> np.ndarray:
    """One uint64 key per row for the signature columns start..stop (a hash; collisions only add candidates).

    `columns` is the signatures transposed (a row per permutation, contiguous): a column of
    the signatures themselves would be read across the whole matrix."""
    key = np.zeros(columns.shape[1], dtype=np.uint64)
    with np.errstate(over="ignore"):
        for column in range(start, stop):
            key = (key ^ columns[column].astype(np.uint64)) * np.uint64(0x9E3779B97F4A7C15)
    return key


def _run_bounds(sorted_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start, length) of each run of equal values in a sorted array."""
    if not len(sorted_keys):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    change = np.nonzero(sorted_keys[1:] != sorted_keys[:-1])[0] + 1
    starts = np.concatenate(([0], change))
    lengths = np.diff(np.concatenate((starts, [len(sorted_keys)])))
    return starts, lengths


def _band_pairs(order: np.ndarray, starts: np.ndarray, lengths: np.ndarray, full_rank: np.ndarray,
                by_rank: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Pairs from one band's buckets: all pairs in small buckets, neighbours in large ones
    (`full_rank`: each row's place in full-signature order; `by_rank`: the row at each place)."""
    pairs = []
    # (the sizes present counted, not np.unique, which imports numpy.ma: see `distinct`)
    for size in np.flatnonzero(np.bincount(lengths[(lengths >= 2) & (lengths <= BUCKET_CAP)])):
        first = starts[lengths == size]
        members = order[first[:, None] + np.arange(size)]
        left, right = np.triu_indices(int(size), 1)
        pairs.append((members[:, left].ravel(), members[:, right].ravel()))
    hot = lengths > BUCKET_CAP
    if hot.any():
        # Members of large buckets, bucket by bucket, each bucket in full-signature order: pair neighbours.
        bucket = np.repeat(np.arange(int(hot.sum())), lengths[hot])
        members = order[np.repeat(hot, lengths)]  # the buckets are runs of `order`, in order
        # (bucket, place) as one number, each distinct: a plain sort orders them, quicker than a lexsort.
        places = bucket * len(full_rank) + full_rank[members]
        places.sort()
        members = by_rank[places % len(full_rank)]
        same = bucket[1:] == bucket[:-1]
        pairs.append((members[:-1][same], members[1:][same]))
    return pairs


def candidate_pairs(sig: np.ndarray, eligible: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(left, right, estimated Jaccard) of candidate pairs, left < right, at most PER_ROW per row.

    `eligible` (bool per row) leaves out rows with no words.
    """

    n = len(sig)
    rows = np.arange(n) if eligible is None else np.nonzero(eligible)[0]
    if len(rows) < 2:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    bands, per_band = band_layout()
    # The signatures transposed (a row per permutation): in one copy, not a gathered copy and then
    # its transpose (25 MB less held at once at 100,000 rows).
    columns = np.ascontiguousarray(sig.T) if len(rows) == n else sig.T.take(rows, axis=1)
    full_rank = np.empty(len(rows), dtype=np.int64)
    by_rank = np.argsort(_band_keys(columns, 0, NUM_PERM), kind="stable")
    full_rank[by_rank] = np.arange(len(rows))
    found: list[tuple[np.ndarray, np.ndarray]] = []
    for band in range(bands):
        keys = _band_keys(columns, band * per_band, (band + 1) * per_band)
        # Any sort will do (the order within a bucket never shows: a small bucket gives all its
        # pairs, a large one is put in full-signature order), and an unstable one is quicker.
        order = np.argsort(keys)
        starts, lengths = _run_bounds(keys[order])
        found += _band_pairs(order, starts, lengths, full_rank, by_rank)
    del columns
    if not found:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    # Each pair as one code (low * n + high), the bands' arrays let go of as soon as they are
    # joined: at 100,000 rows these copies were the run's peak of memory.
    left, right = np.concatenate([p[0] for p in found]), np.concatenate([p[1] for p in found])
    del found
    if len(rows) < n:  # (positions among the rows with words)
        left, right = rows[left], rows[right]
    codes = np.minimum(left, right).astype(np.int64, copy=False) * n + np.maximum(left, right)
    del left, right
    codes.sort()  # sorting beats np.unique's hash table here (ten times faster)
    codes = codes[np.concatenate(([True], codes[1:] != codes[:-1]))]
    low, high = codes // n, codes % n
    agree = np.concatenate([_agreement(sig, low[i:i + _ESTIMATE_CHUNK], high[i:i + _ESTIMATE_CHUNK])
                            for i in range(0, len(low), _ESTIMATE_CHUNK)])
    estimate = agree / NUM_PERM
    keep = estimate >= EST_FLOOR
    low, high, estimate, agree = low[keep], high[keep], estimate[keep], agree[keep]
    keep = _top_per_row(low, high, agree, PER_ROW)
    return low[keep], high[keep], estimate[keep]


def _agreement(sig: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """How many signature values rows low[k] and high[k] share (`take` gathers rows several times
    quicker than indexing with an array; the equal values are summed as bytes, a fifth quicker
    than `count_nonzero` along rows)."""
    return np.asarray(np.add.reduce(sig.take(low, axis=0) == sig.take(high, axis=0), axis=1, dtype=np.uint8))


def _top_per_row(low: np.ndarray, high: np.ndarray, agree: np.ndarray, limit: int) -> np.ndarray:
    """Mask of pairs that are among the `limit` most similar of either of their rows (by `agree`,
    the signature values they share; ties in pair order)."""

    count = len(low)
    keep = np.zeros(count, dtype=bool)
    positions = np.arange(count, dtype=np.int64)
    weaker = (NUM_PERM - agree).astype(np.int64)  # 0 (all values shared) to NUM_PERM
    for ends in (low, high):
        # Each pair as one number: its row, then most similar first, then pair order. All are distinct,
        # so a plain sort puts them in that order (quicker than two stable argsorts: at 100,000 rows,
        # 0.08 s of CPU less). Rows × 65 × pairs stays far below 2**63 (1e6 rows, 1e8 pairs: 7e15).
        key = (ends.astype(np.int64) * (NUM_PERM + 1) + weaker) * count + positions
        key.sort()
        grouped = key // ((NUM_PERM + 1) * count)  # the row
        first = np.ones(count, dtype=bool)
        first[1:] = grouped[1:] != grouped[:-1]
        starts = np.maximum.accumulate(np.where(first, positions, 0))  # where each row's run starts
        rank = positions - starts
        keep[key[rank < limit] % count] = True
    return keep




# --- the per-brain scan cache ----------------------------------------------------------

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def cache_path(brain_path: Path | str) -> Path:
    """The scan cache file of one brain (named by its path, `brain_cache_name`, and the version)."""
    return brain_cache_file("dedup", brain_path, SIGNATURE_VERSION)


def pair_keys(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """One uint64 per pair of text hashes, in either order (a hit is checked against both hashes)."""
    low, high = np.minimum(a, b), np.maximum(a, b)
    with np.errstate(over="ignore"):
        return np.asarray(low ^ (high * _GOLDEN))


# The cache file's arrays, in the order they are written (`cache_files.write_arrays`).
_CACHE_ARRAYS = ("hashes", "lengths", "sig", "distinct", "words", "pair_key", "pair_a", "pair_b", "pair_score",
                 "pair_differs")


def _empty_u64() -> np.ndarray:
    return np.zeros(0, dtype=np.uint64)


@dataclass
class ScanCache:
    """One brain's last scan: per text (hash and length) its MinHash signature, encoded words
    (`TextKey.encode`) and distinct-word count; per verified pair of texts (by their hashes) its
    similarity and whether a detail differs. Empty when the file is absent or unreadable."""

    path: Path | None = None
    hashes: np.ndarray = field(default_factory=_empty_u64)      # sorted, unique
    lengths: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint32))
    sig: np.ndarray = field(default_factory=lambda: np.zeros((0, NUM_PERM), dtype=np.uint32))
    distinct: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    words: list[str] = field(default_factory=list)
    pair_key: np.ndarray = field(default_factory=_empty_u64)    # sorted, unique
    pair_a: np.ndarray = field(default_factory=_empty_u64)
    pair_b: np.ndarray = field(default_factory=_empty_u64)
    pair_score: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    pair_differs: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))

    @classmethod
    def load(cls, path: Path | None) -> ScanCache:
        """The cache in `path` (None: no file, an empty cache that is never saved)."""
        if path is None:
            return cls()
        try:
            arrays = dict(zip(_CACHE_ARRAYS, read_arrays(path, len(_CACHE_ARRAYS)), strict=True))
            blob = arrays.pop("words").tobytes().decode("utf-8", "surrogatepass")
            words = blob.split("\n") if len(arrays["hashes"]) else []
            cache = cls(path, words=words, **arrays)
            if not cache._consistent():
                raise ValueError("damaged")
            return cache
        except (OSError, KeyError, TypeError, ValueError, UnicodeDecodeError, EOFError, zipfile.BadZipFile):
            return cls(path)

    def _consistent(self) -> bool:
        n, pairs = len(self.hashes), len(self.pair_key)
        return (self.sig.shape == (n, NUM_PERM) and len(self.lengths) == n == len(self.distinct) == len(self.words)
                and len(self.pair_a) == pairs == len(self.pair_b) == len(self.pair_score) == len(self.pair_differs)
                and _ascending(self.hashes) and _ascending(self.pair_key))

    def find_texts(self, hashes: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Index into the cache of each text (by hash and length), or -1."""
        return _find(self.hashes, hashes, lambda at: self.lengths[at] == lengths)

    def find_pairs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Index into the cache's pairs of each pair of text hashes, or -1."""
        low, high = np.minimum(a, b), np.maximum(a, b)
        return _find(self.pair_key, pair_keys(a, b), lambda at: (self.pair_a[at] == low) & (self.pair_b[at] == high))

    def save(self, texts: TextTable, pairs: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> None:
        """Replace the file with this scan's texts and verified pairs (a, b, score, differs);
        atomically, and a failure only costs time next time."""
        if self.path is None:
            return
        hashes, first = distinct_with_first(texts.hashes)
        a, b, score, differs = pairs
        low, high = np.minimum(a, b), np.maximum(a, b)
        keys, chosen = distinct_with_first(pair_keys(low, high))
        # (the words in hash order picked in C: 0.04 s of CPU less than a generator at 100,000 rows)
        blob = "\n".join(taken_in_order(texts.encoded, first)).encode("utf-8", "surrogatepass")
        arrays = {"hashes": hashes, "lengths": texts.lengths[first], "sig": texts.sig[first],
                  "distinct": texts.distinct[first], "words": np.frombuffer(blob, dtype=np.uint8),
                  "pair_key": keys, "pair_a": low[chosen], "pair_b": high[chosen],
                  "pair_score": score[chosen], "pair_differs": differs[chosen]}
        write_arrays(self.path, [arrays[name] for name in _CACHE_ARRAYS])


def _ascending(values: np.ndarray) -> bool:
    return bool(np.all(values[1:] > values[:-1]))


def _find(stored: np.ndarray, wanted: np.ndarray, check: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Index of each wanted key in the sorted `stored` keys where `check(index)` also holds, else -1."""
    found = np.full(len(wanted), -1, dtype=np.int64)
    if not len(stored) or not len(wanted):
        return found
    at = np.searchsorted(stored, wanted).clip(0, len(stored) - 1)
    hit = (stored[at] == wanted) & check(at)
    found[hit] = at[hit]
    return found


@dataclass
class TextTable:
    """Every scanned text's hash, length, signature, encoded words and distinct-word count."""

    hashes: np.ndarray
    lengths: np.ndarray
    sig: np.ndarray
    encoded: list[str]
    distinct: np.ndarray
    computed: int           # how many were not in the cache
    # Of each text computed here (None for one from the cache), what verifying reads of it: its
    # words sorted and joined, and its detail words as `encoded` ends with them (`forget_sorted`
    # drops both once the pairs are verified).
    sorted_words: list[str | None] = field(default_factory=list)
    details: list[str | None] = field(default_factory=list)

    def forget_sorted(self) -> None:
        """Drop `sorted_words` and `details` (verifying is done: no need to hold them)."""
        self.sorted_words, self.details = [], []

    @property
    def has_words(self) -> np.ndarray:
        """bool per text: it has a word (texts without words are never candidates)."""
        return np.asarray(self.distinct > 0)


def text_table(texts: Sequence[str], cache: ScanCache) -> TextTable:
    """Signatures and words of every text, from the cache where it has them."""
    from cleo_tui.memory.dedup_text import text_words

    n = len(texts)
    hashes = text_hashes(texts)
    lengths = np.fromiter(map(len, texts), dtype=np.uint32, count=n)
    found = cache.find_texts(hashes, lengths)
    hit = np.flatnonzero(found >= 0)
    sig = np.empty((n, NUM_PERM), dtype=np.uint32)
    distinct = np.zeros(n, dtype=np.int32)
    sig[hit] = cache.sig.take(found[hit], axis=0)
    distinct[hit] = cache.distinct[found[hit]]
    encoded = [""] * n
    words = cache.words
    for i, at in zip(hit.tolist(), found[hit].tolist(), strict=True):
        encoded[i] = words[at]
    missing = np.flatnonzero(found < 0).tolist()
    # The sorted words and details verifying needs, made here from the words at hand (splitting
    # `encoded` again for them cost the cold demo run about 0.2 s of CPU).
    ordered: list[str | None] = [None] * n
    detail_words: list[str | None] = [None] * n
    signer = Signer()
    for first in range(0, len(missing), _BATCH):  # a batch at a time: 100,000 long texts' word sets take GBs
        batch = missing[first:first + _BATCH]
        computed = [text_words(texts[i]) for i in batch]
        unique = [set(words) for words, _ in computed]
        for i, (words, details) in zip(batch, computed, strict=True):
            joined_details = " ".join(sorted(details))
            encoded[i] = " ".join(words) + "\x00" + joined_details
            ordered[i] = " ".join(sorted(words))
            detail_words[i] = joined_details
        distinct[batch] = np.fromiter(map(len, unique), dtype=np.int32, count=len(unique))
        sig[batch] = signer(unique)
    return TextTable(hashes, lengths, sig, encoded, distinct, len(missing), ordered, detail_words)
