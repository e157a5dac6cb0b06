"""One figure for the protected rows' tokens: the Prune text and the budget bar read the same number."""

from __future__ import annotations

import pytest

from cleo_tui.brain.store import open_brain
from cleo_tui.memory.pruner import prepare_pool
from tests.ui_helpers import copy_demo


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    folder = tmp_path_factory.mktemp("demo")
    copy_demo(folder, observations=300, seed=3)
    brain = open_brain(folder / ".cleo" / "cleo.db", read_only=True)
    yield brain
    brain.close()


@pytest.mark.parametrize("tokenizer", ["o200k_base", "chars4"])
def test_protected_tokens_is_one_figure_with_one_separator_per_line(demo, tokenizer):
    pool = prepare_pool(demo, tokenizer)
    assert pool.protected, "the demo brain has protected rows"
    preview = pool.preview(1)  # the smallest budget: everything droppable drops, it falls back
    assert preview.fell_back
    expected = pool.tokenizer.finish(sum(e.units for e in pool.protected) + len(pool.protected))
    assert pool.protected_tokens == preview.protected_tokens == expected
    assert preview.bar()[0] == preview.protected_tokens  # the bar's protected part is that figure
    assert preview.to_json()["protected_tokens"] == preview.protected_tokens
    # the pool's own total joins lines with one separator fewer: the figures differ by that separator
    assert preview.tokens_after == pool.tokenizer.pool_tokens(sum(e.units for e in pool.protected),
                                                              len(pool.protected))
