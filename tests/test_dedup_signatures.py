"""MinHash signatures do not depend on how the texts are batched."""

from __future__ import annotations

import random

import numpy as np
import pytest

from cleo_tui.memory import dedup_lsh


def test_signatures_are_the_same_in_small_gathers(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(5)
    vocabulary = [f"word{n}" for n in range(400)]
    word_sets = [set(rng.sample(vocabulary, rng.randint(0, 60))) for _ in range(300)]
    whole = dedup_lsh.signatures(word_sets)
    monkeypatch.setattr(dedup_lsh, "_GATHER_WORDS", 7)    # several texts, one text, or a text over the budget
    monkeypatch.setattr(dedup_lsh, "_BATCH", 50)
    assert np.array_equal(dedup_lsh.signatures(word_sets), whole)
    signer = dedup_lsh.Signer()
    halves = np.concatenate([signer(word_sets[:130]), signer(word_sets[130:])])
    assert np.array_equal(halves, whole)
    assert (whole[[i for i, s in enumerate(word_sets) if not s]] == 0xFFFFFFFF).all()


def test_candidates_count_shared_values_in_any_chunking(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each candidate's estimate is the share of signature values its rows hold in common, however
    many pairs are compared at once."""
    rng = random.Random(9)
    vocabulary = [f"word{n}" for n in range(120)]
    base = [set(rng.sample(vocabulary, 30)) for _ in range(20)]
    word_sets = [{w for w in rng.choice(base) if rng.random() < 0.9} for _ in range(200)]
    sig = dedup_lsh.signatures(word_sets)
    left, right, estimate = dedup_lsh.candidate_pairs(sig)
    assert len(left) > 100
    shared = np.count_nonzero(sig[left] == sig[right], axis=1)
    assert (estimate == shared / dedup_lsh.NUM_PERM).all()
    monkeypatch.setattr(dedup_lsh, "_ESTIMATE_CHUNK", 7)
    again = dedup_lsh.candidate_pairs(sig)
    assert all(np.array_equal(a, b) for a, b in zip(again, (left, right, estimate), strict=True))


def test_candidates_among_rows_with_words_are_those_of_those_rows_alone() -> None:
    """Rows left out (no words) change no other pair: the candidates are those of the other rows'
    signatures on their own, at the rows' places."""
    rng = random.Random(11)
    vocabulary = [f"word{n}" for n in range(120)]
    base = [set(rng.sample(vocabulary, 30)) for _ in range(20)]
    word_sets = [set() if rng.random() < 0.2 else {w for w in rng.choice(base) if rng.random() < 0.9}
                 for _ in range(300)]
    sig = dedup_lsh.signatures(word_sets)
    eligible = np.array([bool(s) for s in word_sets])
    rows = np.flatnonzero(eligible)
    left, right, estimate = dedup_lsh.candidate_pairs(sig, eligible)
    alone = dedup_lsh.candidate_pairs(sig[rows])
    assert len(left) > 100 and not (~eligible[left]).any() and not (~eligible[right]).any()
    assert np.array_equal(left, rows[alone[0]]) and np.array_equal(right, rows[alone[1]])
    assert np.array_equal(estimate, alone[2])
    assert all(np.array_equal(a, b) for a, b in zip(dedup_lsh.candidate_pairs(sig, np.ones(len(sig), dtype=bool)),
                                                    dedup_lsh.candidate_pairs(sig), strict=True))


def test_hash_coefficients_are_the_seeded_draws() -> None:
    rng = np.random.RandomState(dedup_lsh.SEED)
    a, b = dedup_lsh._permutations()
    assert np.array_equal(a, rng.randint(1, 1 << 31, size=dedup_lsh.NUM_PERM, dtype=np.uint64))
    assert np.array_equal(b, rng.randint(0, 1 << 31, size=dedup_lsh.NUM_PERM, dtype=np.uint64))
