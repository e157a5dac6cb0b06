"""Keyset paging returns every row exactly once, in order, in every direction and sort."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cleo_tui.brain import open_brain
from cleo_tui.brain.listing import ObservationListing
from cleo_tui.brain.observations import (
    ObservationQuery,
    count_observations,
    cursor_of,
    iter_observations,
    page_at_offset,
    page_observations,
    position_of,
)
from tests.brain_fixtures import insert_observations, make_cleo_consolidated, observation

ROWS = 157  # not a multiple of any page size used below

QUERIES = [
    ObservationQuery(sort="date", descending=True),
    ObservationQuery(sort="date", descending=False),
    ObservationQuery(sort="quality", descending=True),   # quality_score is NULL on every 6th row
    ObservationQuery(sort="quality", descending=False),
    ObservationQuery(state="live", sort="quality", descending=False),
    ObservationQuery(state="evicted", sort="date"),
    ObservationQuery(types=("bugfix", "change"), tier="long", sort="quality"),
    ObservationQuery(search="module_2", sort="date", descending=False),
]


@pytest.fixture(scope="module")
def brain(tmp_path_factory):
    path = make_cleo_consolidated(tmp_path_factory.mktemp("paging") / "cleo.db")
    # Many rows share a created_at or a quality score, so ties must be broken by rowid.
    insert_observations(path, [observation(i, created_at=f"2026-02-0{1 + i % 4} 09:00:00")
                               if i % 2 else observation(i) for i in range(ROWS)])
    opened = open_brain(path, read_only=True)
    yield opened
    opened.close()


def _expected(brain, q):
    """The query's rows in order, computed independently of the paging code."""
    column = {"date": "created_at", "quality": "quality_score"}[q.sort]
    rows = list(iter_observations(brain, q.with_(), page_size=10_000))
    everything = [(r[column], r["_rowid"], r["id"]) for r in rows]
    present = sorted([e for e in everything if e[0] is not None], reverse=q.descending)
    missing = sorted([e for e in everything if e[0] is None], key=lambda e: e[1], reverse=q.descending)
    ordered = present + missing if q.descending else missing + present
    return [e[2] for e in ordered]


def _walk_forward(brain, q, size):
    ids, cursor = [], None
    while True:
        page = page_observations(brain, q, cursor, size)
        ids += [r["id"] for r in page]
        if len(page) < size:
            return ids
        cursor = cursor_of(brain, q, page[-1])


def _walk_backward(brain, q, size):
    ids, cursor = [], None
    while True:
        page = page_observations(brain, q, cursor, size, backwards=True)
        ids = [r["id"] for r in page] + ids
        if len(page) < size:
            return ids
        cursor = cursor_of(brain, q, page[0])


@pytest.mark.parametrize("q", QUERIES, ids=lambda q: f"{q.sort}-{'desc' if q.descending else 'asc'}-{q.state}")
@pytest.mark.parametrize("size", [1, 7, 50])
def test_forward_and_backward_walks_see_every_row_once_in_order(brain, q, size):
    expected = _expected(brain, q)
    assert len(expected) == count_observations(brain, q) > 0
    # The reference order really is the SQL order: quality NULLs sit at the end of a descending walk.
    forward = _walk_forward(brain, q, size)
    assert forward == expected
    assert len(set(forward)) == len(forward)
    assert _walk_backward(brain, q, size) == expected


def test_null_sort_values_come_last_descending_and_first_ascending(brain):
    desc = page_observations(brain, ObservationQuery(sort="quality"), None, ROWS)
    asc = page_observations(brain, ObservationQuery(sort="quality", descending=False), None, ROWS)
    nulls = sum(1 for r in desc if r["quality_score"] is None)
    assert nulls == len(range(0, ROWS, 6))
    assert all(r["quality_score"] is None for r in desc[-nulls:])
    assert all(r["quality_score"] is None for r in asc[:nulls])
    assert asc[nulls]["quality_score"] == min(r["quality_score"] for r in desc[:-nulls])


@pytest.mark.parametrize("q", QUERIES[:4], ids=lambda q: f"{q.sort}-{q.descending}")
def test_page_at_offset_matches_the_walk(brain, q):
    expected = _expected(brain, q)
    for offset in (0, 1, 25, 130, 150, ROWS - 1, ROWS, ROWS + 5):
        assert [r["id"] for r in page_at_offset(brain, q, offset, 10)] == expected[offset:offset + 10]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(q=st.sampled_from(QUERIES), page_size=st.integers(1, 40),
       positions=st.lists(st.integers(0, ROWS + 3), min_size=1, max_size=12))
def test_listing_random_access_matches_the_order(brain, q, page_size, positions):
    """Jumps in any order (keyset next to cached pages, backwards from the end, OFFSET) agree."""
    expected = _expected(brain, q)
    listing = ObservationListing(brain, q, page_size=page_size)
    assert listing.count() == len(expected)
    for index in positions:
        row = listing.row(index)
        assert (row["id"] if row else None) == (expected[index] if index < len(expected) else None)
    assert [listing.row(i)["id"] for i in range(len(expected))] == expected


def test_listing_lead_ids_come_first_then_the_rest_once(brain):
    q = ObservationQuery(sort="date")
    expected = _expected(brain, q)
    lead = [expected[40], expected[3], expected[100]]
    listing = ObservationListing(brain, q, lead=lead, page_size=9)
    ids = [listing.row(i)["id"] for i in range(listing.count())]
    assert ids[:3] == lead
    assert ids[3:] == [i for i in expected if i not in lead]


@pytest.mark.parametrize("q", [*QUERIES, ObservationQuery(ids_in=("O-test00003-3", "O-test00010-a", "O-test00012-c"),
                                                           sort="quality")])
def test_position_of_finds_each_row_where_the_order_has_it(brain, q):
    """The cursor's anchor (a row found again by id after CLEO wrote): NULL segments and ties included."""
    expected = _expected(brain, q)
    assert [position_of(brain, q, i) for i in expected] == list(range(len(expected)))
    outside = {r["id"] for r in iter_observations(brain)} - set(expected)
    assert all(position_of(brain, q, i) is None for i in list(outside)[:10])
    assert position_of(brain, q, "O-no-such") is None
