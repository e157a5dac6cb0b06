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
