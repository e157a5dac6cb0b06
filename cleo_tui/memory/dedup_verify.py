"""Verifying the duplicate finder's candidate pairs: the length guard, the scan cache, rapidfuzz.

`verify` keeps the candidate pairs (from `dedup_lsh.candidate_pairs`) whose
similarity reaches `MIN_THRESHOLD`, each with whether a detail differs; every pair
it judged goes back to the scan cache, so a rescan judges only new pairs. Pairs of
long texts (`LONG_PAIR`) get a proven cut-off for rapidfuzz (`_long_sort_ratio`): the
same scores, with less CPU.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from cleo_tui.memory import dedup_lsh
from cleo_tui.memory.dedup_model import MIN_THRESHOLD, ScanProgress
from cleo_tui.memory.dedup_text import LENGTH_GUARD, words_swapped
from cleo_tui.memory.pool_scan.containers import taken_in_order

_VERIFY_BATCH = 5_000
LONG_PAIR = 20_000   # characters of a pair's two sorted word strings from which `_long_sort_ratio` is used
_MARGIN = 1e-3       # below a cut-off worked out in floating point, so rounding never makes it too high


@dataclass
class Verified:
    kept: tuple[Any, Any, Any, Any]    # (left, right, similarity, differs) at or above MIN_THRESHOLD
    judged: tuple[Any, Any, Any, Any]  # (text hash a, text hash b, similarity, differs) of every pair judged
    computed: int                      # pairs the cache did not have


def verify(texts: dedup_lsh.TextTable, left: Any, right: Any, cache: dedup_lsh.ScanCache,
            check: Callable[[], None], report: ScanProgress) -> Verified:
    """Verify candidate pairs: the length guard at once, then the cache's verdict or rapidfuzz's.

    Only pairs at or above MIN_THRESHOLD are kept; every pair judged goes back to the cache.
    """
    distinct = texts.distinct
    small, large = np.minimum(distinct[left], distinct[right]), np.maximum(distinct[left], distinct[right])
    guard = (large == 0) | (small >= LENGTH_GUARD * large)   # the length guard of `comparable`, at once
    left, right = left[guard], right[guard]
    hash_a, hash_b = texts.hashes[left], texts.hashes[right]
    found = cache.find_pairs(hash_a, hash_b)
    hit = found >= 0
    score = np.zeros(len(left), dtype=np.float64)
    differs = np.zeros(len(left), dtype=bool)
    score[hit] = cache.pair_score[found[hit]]
    differs[hit] = cache.pair_differs[found[hit]]
    todo = np.flatnonzero(~hit)
    needed = np.zeros(len(texts.encoded), dtype=bool)
    needed[left[todo]] = needed[right[todo]] = True
    judge = _Judge(texts, np.flatnonzero(needed))
    report(0, len(todo), "verifying")
    for start in range(0, len(todo), _VERIFY_BATCH):
        check()
        report(start, len(todo), "verifying")
        batch = todo[start:start + _VERIFY_BATCH]
        score[batch], differs[batch] = judge(left[batch], right[batch])
    keep = score >= MIN_THRESHOLD
    return Verified((left[keep], right[keep], score[keep], differs[keep]),
                     (hash_a, hash_b, score, differs), len(todo))


class _Judge:
    """Similarity and "differs in a detail" of pairs of rows, from their encoded words.

    rapidfuzz's token-sort ratio is its plain ratio of the words sorted, so each row's
    words are sorted once here rather than once per pair inside rapidfuzz (the set ratio
    of sorted words is the same number too, and quicker). Each row's detail set gets a
    number, so pairs whose details differ are found at once; only pairs with the same
    details are looked at word by word (for swapped words, as `verdict` does).
    """

    def __init__(self, texts: dedup_lsh.TextTable, needed: Any) -> None:
        """`needed`: a numpy array of the rows that pairs will name (each once). A text computed in
        this scan comes with its sorted words and details (`TextTable.sorted_words`); one from the
        cache has them worked out of its encoded words here."""
        self.encoded = encoded = texts.encoded
        rows = needed.tolist()
        nothing: list[str | None] = [None] * len(rows)
        sorted_words = taken_in_order(texts.sorted_words, needed) if texts.sorted_words else nothing
        details = taken_in_order(texts.details, needed) if texts.details else list(nothing)
        if None in sorted_words:
            for k, row in enumerate(rows):
                if sorted_words[k] is None:
                    joined, _, details[k] = encoded[row].partition("\x00")
                    sorted_words[k] = " ".join(sorted(joined.split(" ")))
        filled = cast(list[str], sorted_words)  # (no None left)
        self.lengths = np.fromiter(map(len, filled), dtype=np.int64, count=len(rows))
        self.sorted_words = _objects(filled)
        numbers = dict(zip(dict.fromkeys(details), itertools.count()))
        self.slot = np.full(len(encoded), -1, dtype=np.int64)   # each row's place in the lists above
        self.slot[needed] = np.arange(len(rows))
        self.detail_id = np.fromiter(map(numbers.__getitem__, details), dtype=np.int64, count=len(details))
        self._split: dict[int, list[str]] = {}

    def __call__(self, left: Any, right: Any) -> tuple[Any, Any]:
        slot_a, slot_b = self.slot[left], self.slot[right]
        scored = _similarities(self.sorted_words[slot_a], self.sorted_words[slot_b],
                               self.lengths[slot_a] + self.lengths[slot_b])
        differs = self.detail_id[slot_a] != self.detail_id[slot_b]
        # Below MIN_THRESHOLD a pair is dropped, detail or not: only the others are looked at. Their
        # details are the same and they pass the length guard (`_verify`), so `verdict` would only
        # look for swapped words.
        looked = np.flatnonzero(~differs & (scored >= MIN_THRESHOLD))
        words = self._words
        for n, a, b, score in zip(looked.tolist(), left[looked].tolist(), right[looked].tolist(),
                                  scored[looked].tolist(), strict=True):
            differs[n] = words_swapped(words(a), words(b), score)
        return scored, differs

    def _words(self, row: int) -> list[str]:
        """Row `row`'s words in text order, split once (a row is in several pairs looked at word by word:
        at 100,000 demo rows 18,900 pairs of 96,000 rows). Do not change the list."""
        found = self._split.get(row)
        if found is None:
            found = self._split[row] = self.encoded[row].partition("\x00")[0].split(" ")
        return found


def _similarities(sorted_a: Sequence[str], sorted_b: Sequence[str], lengths: Any) -> Any:
    """`dedup_text.similarity_array` of pairs of sorted word strings (`lengths`: each pair's two lengths
    summed), the same numbers for every pair that reaches MIN_THRESHOLD; long pairs' sort ratios
    come from `_long_sort_ratio`, and a pair shown to stay below MIN_THRESHOLD gets a lower score
    (still below it: such a pair is dropped either way)."""
    from rapidfuzz import fuzz, process

    if not len(sorted_a):
        return np.zeros(0, dtype=np.float64)
    words_a, words_b = _objects(sorted_a), _objects(sorted_b)
    # float64, as `compare` computes one pair: cpdist's default float32 would round differently.
    set_ratio = process.cpdist(words_a, words_b, scorer=fuzz.token_set_ratio, workers=1, dtype=np.float64)
    long = lengths >= LONG_PAIR
    sort_ratio = np.zeros(len(words_a), dtype=np.float64)
    short = np.flatnonzero(~long)
    if len(short) == len(words_a):  # (the usual batch: no long pair, nothing to pick out)
        sort_ratio = process.cpdist(words_a, words_b, scorer=fuzz.ratio, workers=1, dtype=np.float64)
    elif len(short):
        sort_ratio[short] = process.cpdist(words_a[short], words_b[short], scorer=fuzz.ratio, workers=1,
                                           dtype=np.float64)
    needed = 200 * MIN_THRESHOLD - set_ratio   # the sort ratio a pair needs to reach MIN_THRESHOLD
    for k in np.flatnonzero(long).tolist():
        sort_ratio[k] = _long_sort_ratio(words_a[k], words_b[k], float(needed[k]))
    return np.asarray((set_ratio + sort_ratio) / 200.0)


def _long_sort_ratio(a: str, b: str, needed: float) -> float:
    """rapidfuzz's ratio of two long sorted word strings when it is at least `needed`, else 0 or it.

    The ratio is 200·LCS / (len a + len b), and rapidfuzz works out an LCS quicker the higher the
    score_cutoff it is given (it only searches a band around the diagonal): a common subsequence
    found cheaply (`_common_length`) proves the ratio reaches its own, so that is a safe cut-off,
    and the ratio it returns is exact. On the real-layout brain (pairs of 130,000-character texts)
    it takes those pairs from 27.6 s of CPU to 18.4 s (a bound 2 points low on average)."""
    from rapidfuzz import fuzz

    floor = 200 * _common_length(a.split(" "), b.split(" ")) / (len(a) + len(b))
    return float(fuzz.ratio(a, b, score_cutoff=max(0.0, max(floor, needed) - _MARGIN)))


def _common_length(a: list[str], b: list[str]) -> int:
    """The length of a common subsequence of " ".join(a) and " ".join(b), both sorted word lists
    (a lower bound of their LCS): the words both hold, met in one merge of the two lists, plus the
    LCS of the stretches between them (short, so rapidfuzz is quick there)."""
    i = j = length = 0
    gap_a: list[str] = []
    gap_b: list[str] = []
    while i < len(a) and j < len(b):
        if a[i] == b[j]:
            length += _gap_common(gap_a, gap_b)
            gap_a, gap_b = [], []
            length += len(a[i]) + 1   # the word and a space beside it (one space too many in all, below)
            i, j = i + 1, j + 1
        elif a[i] < b[j]:
            gap_a.append(a[i])
            i += 1
        else:
            gap_b.append(b[j])
            j += 1
    gap_a += a[i:]
    gap_b += b[j:]
    return max(0, length - 1 + _gap_common(gap_a, gap_b))


_GAP_WORDS = 200  # longer stretches between shared words count as nothing (an LCS there costs too much)


def _gap_common(a: list[str], b: list[str]) -> int:
    """The LCS of two short stretches of words, joined (0 when either is empty or long)."""
    from rapidfuzz.distance import LCSseq

    if not a or not b or len(a) > _GAP_WORDS or len(b) > _GAP_WORDS:
        return 0
    return int(LCSseq.similarity(" ".join(a), " ".join(b)))


def _objects(values: Sequence[str]) -> Any:
    """The strings as a numpy object array (picking pairs' strings by an index array is then one
    numpy call: at 100,000 demo rows, 0.1-0.2 s of CPU less than a list picked with itemgetter)."""
    if isinstance(values, np.ndarray):
        return values
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array
