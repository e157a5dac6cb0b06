"""The help and the dialogs speak to users: no developer-internal names, and undo described as it is."""

from __future__ import annotations

from cleo_tui.memory.rules import RULES_MARKDOWN
from cleo_tui.ui.panes.review_decide import undo_proposal_question

INTERNAL = ("ObservationRecord", "derive_relevance", "REFLECTION_EDGE_TYPES", "the one place that decides",
            "seed concept", "How the seeds map")


def test_the_rules_in_the_help_name_no_code_and_say_what_an_undo_sets():
    for word in INTERNAL:
        assert word not in RULES_MARKDOWN
    assert "restores both" not in RULES_MARKDOWN and "exactly as before" not in RULES_MARKDOWN
    # An undo clears invalid_at and sets updated_at to its own time (CLEO must see the change).
    assert RULES_MARKDOWN.count("`updated_at` to the time of the undo") == 2
    for concept in ("narrative", "created_at", "pattern, learning or observer note", "supersedes"):
        assert concept in RULES_MARKDOWN


def test_the_proposal_undo_does_not_promise_an_exact_return():
    question = undo_proposal_question(7, "apply 2 patterns")
    assert "exactly as before" not in question
    assert "`updated_at`" not in question and "updated" in question and "7" in question


def test_the_help_describes_a_commit_as_it_runs_beside_cleo():
    """It said a preview of a changed pool "is refused", in one transaction: a commit goes in short
    chunks and evicts the previewed rows still as seen, leaving the rest alone (DESIGN, live commits)."""
    section = RULES_MARKDOWN.split("## Commit and undo", 1)[1]
    assert "is refused" not in section and "one transaction" not in section
    for said in ("short chunks", "still live and as previewed", "left alone and listed", "arrived since"):
        assert said in " ".join(section.split()), said
