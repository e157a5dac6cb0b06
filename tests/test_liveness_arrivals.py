"""The observations that arrived after a moment (`liveness._arrivals_since`): the header's liveness
mark reads them on every open. Read through CLEO's indexes, they must be what the plain query over
the table says (observer notes left out, odd dates compared as stored)."""

from __future__ import annotations

import pytest

from cleo_tui.brain import cleo_schema as cs
from cleo_tui.memory import liveness, mapping
from tests.pruner_fixtures import add_observation, small_tagged_brain


def plain(brain, at):
    """The question asked of every row of the table."""
    where, params = "source_type IS NOT ?", [mapping.OBSERVER_SOURCE_TYPE]
    if at is not None:
        where += " AND created_at > ?"
        params.append(at)
    count, newest = brain.query_one(f"SELECT count(*), max(created_at) FROM {cs.OBSERVATIONS} WHERE {where}", params)
    return count, None if newest is None else liveness.as_text(newest)


@pytest.mark.parametrize("at", [None, "2025-01-01", "2026-01-01 10:00:00", "2026-02-01", "9999"])
def test_arrivals_are_those_the_plain_query_counts(tmp_path, at):
    brain = small_tagged_brain(tmp_path)
    observer = mapping.OBSERVER_SOURCE_TYPE
    add_observation(brain, "O-note-new", "the newest row is an observer note", source_type=observer,
                    created_at="2026-03-01 00:00:00")
    add_observation(brain, "O-other", "another source type", source_type="manual", created_at="2026-01-20 00:00:00")
    add_observation(brain, "O-blob", "a date stored as a blob", created_at=b"2026-01-25")
    add_observation(brain, "O-late", "the newest row that is no note", created_at="2026-02-15 00:00:00")
    arrivals = liveness._arrivals_since(brain, at)
    assert (arrivals.count, arrivals.newest) == plain(brain, at)
