"""MinHash signatures do not depend on how the texts are batched."""

from __future__ import annotations

import itertools
import random
from collections import defaultdict

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


def _candidates_by_definition(sig: np.ndarray) -> list[tuple[int, int, float]]:
    """The candidates as the module docstring defines them, plainly: every pair sharing a band in a
    bucket of at most BUCKET_CAP rows; neighbours in full-signature order (ties by row) in a larger
    bucket; the pairs whose estimate reaches EST_FLOOR; each row's PER_ROW most similar (ties in
    pair order), kept when among those of either of its rows."""
    bands, per_band = dedup_lsh.band_layout()
    columns = np.ascontiguousarray(sig.T)
    full = dedup_lsh._band_keys(columns, 0, dedup_lsh.NUM_PERM).tolist()
    found: set[tuple[int, int]] = set()
    for band in range(bands):
        buckets: dict[int, list[int]] = defaultdict(list)
        for row, key in enumerate(dedup_lsh._band_keys(columns, band * per_band, (band + 1) * per_band).tolist()):
            buckets[key].append(row)
        for members in buckets.values():
            if len(members) <= dedup_lsh.BUCKET_CAP:
                found.update(itertools.combinations(sorted(members), 2))
            else:
                ordered = sorted(members, key=lambda row: (full[row], row))
                found.update((min(a, b), max(a, b)) for a, b in itertools.pairwise(ordered))
    agree = {pair: int(np.count_nonzero(sig[pair[0]] == sig[pair[1]])) for pair in sorted(found)}
    kept = [pair for pair, count in agree.items() if count / dedup_lsh.NUM_PERM >= dedup_lsh.EST_FLOOR]
    best: set[tuple[int, int]] = set()
    for end in (0, 1):
        by_row: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for pair in kept:  # (in pair order)
            by_row[pair[end]].append(pair)
        for pairs in by_row.values():
            best.update(sorted(pairs, key=lambda pair: -agree[pair])[:dedup_lsh.PER_ROW])  # (a stable sort)
    return [(a, b, agree[(a, b)] / dedup_lsh.NUM_PERM) for a, b in kept if (a, b) in best]


def test_candidates_are_those_the_definition_gives() -> None:
    """The sorts that make candidates quick (unstable band sorts, one number per pair for the
    large buckets and each row's best) choose the pairs the plain definition chooses."""
    rng = np.random.default_rng(17)
    for trial in range(12):
        rows = int(rng.integers(2, 600))
        templates = rng.integers(0, 40, size=(int(rng.integers(1, 12)), dedup_lsh.NUM_PERM)).astype(np.uint32)
        sig = templates[rng.integers(0, len(templates), rows)]
        noisy = rng.random(sig.shape) < rng.uniform(0, 0.6)  # some exact copies (large buckets), some near ones
        sig[noisy] = rng.integers(0, 40, int(noisy.sum()))
        left, right, estimate = dedup_lsh.candidate_pairs(sig)
        expected = _candidates_by_definition(sig)
        assert list(zip(left.tolist(), right.tolist(), estimate.tolist(), strict=True)) == expected, trial
        assert trial or len(expected) > 50
