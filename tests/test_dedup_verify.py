"""The duplicate finder's verification of long pairs gives the same scores as the plain one."""

from __future__ import annotations

import random

import numpy as np
from rapidfuzz.distance import LCSseq

from cleo_tui.memory import dedup_verify
from cleo_tui.memory.dedup_model import MIN_THRESHOLD
from cleo_tui.memory.dedup_text import similarity_array


def _sorted_words(rng: random.Random, vocabulary: list[str], count: int) -> str:
    return " ".join(sorted(rng.choice(vocabulary) for _ in range(count)))


def _long_pairs() -> tuple[list[str], list[str]]:
    """Pairs of long sorted word strings: near copies, loose rewordings and unrelated texts."""
    rng = random.Random(33)
    vocabulary = [f"w{n}x{'y' * (n % 7)}" for n in range(900)]
    others = [f"q{n}" for n in range(500)]
    base = [_sorted_words(rng, vocabulary, 4_000) for _ in range(3)]
    left, right = [], []
    for text in base:
        words = text.split(" ")
        for keep in (0.98, 0.9, 0.7, 0.5, 0.4, 0.3):
            changed = [w if rng.random() < keep else rng.choice(others) for w in words]
            left.append(text)
            right.append(" ".join(sorted(changed)))
    left.append(base[0])
    right.append(_sorted_words(rng, [f"z{n}" for n in range(300)], 5_000))  # nothing in common
    return left, right


def test_long_pairs_score_as_the_plain_similarity() -> None:
    left, right = _long_pairs()
    lengths = np.array([len(a) + len(b) for a, b in zip(left, right, strict=True)])
    assert (lengths >= dedup_verify.LONG_PAIR).all()
    plain = similarity_array(left, right, presorted=True)
    fast = dedup_verify._similarities(left, right, lengths)
    kept = plain >= MIN_THRESHOLD
    assert kept.any() and not kept.all()
    assert ((fast >= MIN_THRESHOLD) == kept).all()
    assert (fast[kept] == plain[kept]).all()   # the same numbers, bit for bit


def test_the_common_length_is_a_common_subsequence() -> None:
    rng = random.Random(7)
    vocabulary = ["cap", "capped", "retry", "api", "payment", "s", "30", "60", "loop", "at"]
    for _ in range(200):
        a = sorted(rng.choice(vocabulary) for _ in range(rng.randint(1, 30)))
        b = sorted(rng.choice(vocabulary) for _ in range(rng.randint(1, 30)))
        assert dedup_verify._common_length(a, b) <= LCSseq.similarity(" ".join(a), " ".join(b))


def test_short_and_long_pairs_mixed_keep_their_order() -> None:
    left, right = _long_pairs()
    left, right = ["cap retry", *left, "api loop"], ["cap retry", *right, "api at loop"]
    lengths = np.array([len(a) + len(b) for a, b in zip(left, right, strict=True)])
    plain = similarity_array(left, right, presorted=True)
    fast = dedup_verify._similarities(left, right, lengths)
    kept = plain >= MIN_THRESHOLD
    assert fast[0] == plain[0] == 1.0 and fast[-1] == plain[-1]
    assert (fast[kept] == plain[kept]).all() and ((fast >= MIN_THRESHOLD) == kept).all()
