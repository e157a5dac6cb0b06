"""Verifying the duplicate finder's candidate pairs: the length guard, the scan cache, rapidfuzz.

`verify` keeps the candidate pairs (from `dedup_lsh.candidate_pairs`) whose
similarity reaches `MIN_THRESHOLD`, each with whether a detail differs; every pair
it judged goes back to the scan cache, so a rescan judges only new pairs.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from cleo_tui.memory import dedup_lsh
from cleo_tui.memory.dedup_model import MIN_THRESHOLD, ScanProgress
from cleo_tui.memory.dedup_text import LENGTH_GUARD, similarity_array, words_swapped

_VERIFY_BATCH = 5_000


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
    judge = _Judge(texts.encoded, np.flatnonzero(needed))
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

    def __init__(self, encoded: list[str], needed: Any) -> None:
        """`needed`: a numpy array of the rows that pairs will name (each once)."""
        rows = needed.tolist()
        parts = [encoded[i].partition("\x00") for i in rows]
        self.words = [p[0] for p in parts]  # joined, by slot
        self.sorted_words = [" ".join(sorted(p[0].split(" "))) for p in parts]
        details = [p[2] for p in parts]
        numbers = dict(zip(dict.fromkeys(details), itertools.count()))
        self.slot = np.full(len(encoded), -1, dtype=np.int64)   # each row's place in the lists above
        self.slot[needed] = np.arange(len(rows))
        self.detail_id = np.fromiter(map(numbers.__getitem__, details), dtype=np.int64, count=len(details))

    def __call__(self, left: Any, right: Any) -> tuple[Any, Any]:
        slot_a, slot_b = self.slot[left], self.slot[right]
        scored = similarity_array(_picked(self.sorted_words, slot_a), _picked(self.sorted_words, slot_b),
                                  presorted=True)
        differs = self.detail_id[slot_a] != self.detail_id[slot_b]
        # Below MIN_THRESHOLD a pair is dropped, detail or not: only the others are looked at. Their
        # details are the same and they pass the length guard (`_verify`), so `verdict` would only
        # look for swapped words.
        words = self.words
        for n in np.flatnonzero(~differs & (scored >= MIN_THRESHOLD)).tolist():
            differs[n] = words_swapped(words[slot_a[n]].split(" "), words[slot_b[n]].split(" "), float(scored[n]))
        return scored, differs


def _picked(values: list[str], at: Any) -> list[str]:
    """values[i] for each i of the numpy array `at` (in C: itemgetter)."""
    if len(at) < 2:
        return [values[i] for i in at.tolist()]
    return list(operator.itemgetter(*at.tolist())(values))
