"""The duplicate finder's verification of long pairs gives the same scores as the plain one."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
from rapidfuzz.distance import LCSseq

from cleo_tui.memory import dedup_lsh, dedup_verify
from cleo_tui.memory.dedup_model import MIN_THRESHOLD
from cleo_tui.memory.dedup_text import similarity_array, text_key, verdict


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


def test_verdicts_are_the_same_for_texts_from_the_cache() -> None:
    """Texts computed in the scan come with their sorted words and details; texts from the cache
    have them worked out of their encoded words: every pair is judged the same either way."""
    rng = random.Random(21)
    facts = ["the deploy script must run from the repo root", "retries against the payments API are capped",
             "tests need pytest -p no:randomly", "cache entries expire after 30 s", "use uv, not pip, here"]
    odd = ["", "   ", "---", "não é isso", "tab\there", "x" * 300, "T1234 src/a.py v2.1 isn't ready",
           "\x1b[31mred\x1b[0m [bold]markup[/bold]", "emoji 🎉 party 🎉"]
    texts = [rng.choice(facts) + " " + " ".join(rng.sample(odd, 2)) + f" {rng.randint(1, 9)}" for _ in range(150)]
    texts += odd
    fresh = dedup_lsh.text_table(texts, dedup_lsh.ScanCache())
    cached = dataclasses.replace(fresh, sorted_words=[], details=[])
    left, right = np.triu_indices(len(texts), 1)
    keep = fresh.has_words[left] & fresh.has_words[right]
    left, right = left[keep].astype(np.int64), right[keep].astype(np.int64)
    found = [dedup_verify.verify(table, left, right, dedup_lsh.ScanCache(), lambda: None, lambda *_: None)
             for table in (fresh, cached)]
    assert len(found[0].kept[0]) > 1_000
    for a, b in zip(found[0].judged + found[0].kept, found[1].judged + found[1].kept, strict=True):
        assert np.array_equal(a, b)


def test_swapped_words_are_judged_as_the_verdict_judges_them_however_often_a_row_recurs() -> None:
    """A row in many pairs has its words split once (`_Judge._words`): each pair that reaches
    MIN_THRESHOLD still differs in a detail exactly when `verdict` says it does."""
    names = ["ruff", "vite", "billing", "search", "deploy", "docs", "invoices"]
    templates = ["use {} for {} rather than rolling our own", "the {} report grouped by {} date instead of UTC",
                 "run the {} script from the {} folder of the repository"]
    texts = [t.format(a, b) for t in templates for a in names for b in names[:3] if a != b]
    table = dedup_lsh.text_table(texts, dedup_lsh.ScanCache())
    left, right = (ends.astype(np.int64) for ends in np.triu_indices(len(texts), 1))
    kept_left, kept_right, score, differs = dedup_verify.verify(
        table, left, right, dedup_lsh.ScanCache(), lambda: None, lambda *_: None).kept
    expected = [verdict(text_key(texts[a]), text_key(texts[b]), s).differs_in_detail
                for a, b, s in zip(kept_left.tolist(), kept_right.tolist(), score.tolist(), strict=True)]
    assert differs.tolist() == expected and len(expected) > 100 and {True, False} <= set(expected)
    assert np.bincount(np.concatenate([kept_left, kept_right])).min() > 5  # (every row in several pairs)
