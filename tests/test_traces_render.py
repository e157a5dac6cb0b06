"""How a trace's steps read: multipliers shown with enough digits to add up; what an unchanged row says."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cleo_tui.recall.reader import TraceResult
from cleo_tui.recall.rerank import RerankStep, format_chain, format_factor
from cleo_tui.recall.resolve import ResolvedMemory
from cleo_tui.ui.widgets.trace_render import chain_text, steps_text


def _shown(value: float) -> float:
    return float(f"{value:.3f}")


def test_a_step_that_moves_the_score_shows_the_digits_it_needs():
    assert format_factor(0.995, 1.0, 0.995) == "×0.995"
    assert format_factor(0.95, 0.42, 0.399) == "×0.95"
    assert format_factor(1.0, 0.5, 0.5) == "×1.00"
    step = RerankStep("recency", 0.995, 1.0, 0.995, "")
    assert "recency ×0.995 → 0.995" in format_chain([step])


@given(before=st.floats(0.0005, 3.0), multiplier=st.floats(0.3, 2.0))
def test_each_shown_step_multiplies_out_to_the_shown_result(before, multiplier):
    after = before * multiplier
    shown = format_factor(multiplier, before, after)
    assert shown.startswith("×")
    factor = float(shown[1:])
    assert _shown(_shown(before) * factor) == _shown(after) or _shown(before) == 0.0
    assert len(shown) <= 1 + 2 + 6  # never more than six decimals


def _result(steps, explain: bool) -> TraceResult:
    memory = ResolvedMemory("O-1", "observation", "live", "a title", "a summary", None)
    return TraceResult(1, "O-1", 0.5, steps, None, memory, explain_mode=explain)


def test_an_unchanged_row_of_an_explain_trace_says_no_stage_changed_it():
    assert "no rerank stage changed this score" in chain_text(_result(None, explain=True)).plain
    assert "recalled without explain" not in steps_text(_result(None, True), 1.0, (0, 0)).plain
    assert "recalled without explain" in chain_text(_result(None, explain=False)).plain
