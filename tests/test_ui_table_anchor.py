"""Finding the cursor's row again in a new listing (LineTable's anchor), without an app."""

from __future__ import annotations

from cleo_tui.brain.listing import PagedListing
from cleo_tui.ui.widgets.list_listing import ListListing
from cleo_tui.ui.widgets.table import Anchor, locate


class Ids(list):
    """A sequence that lists its ids cheaply, as the prune pool's EntryView does."""

    def ids(self, count=None):
        return [f"id{n}" for n in self[:count]]


class Pages(PagedListing):
    """Rows id0..id(n-1) in pages of 10, reading from a list."""

    def __init__(self, ids):
        super().__init__(page_size=10)
        self.ids = ids

    def count(self):
        return len(self.ids)

    def _read_page(self, page_no):
        return [{"id": i} for i in self.ids[page_no * 10:(page_no + 1) * 10]]


def test_a_row_is_found_where_it_went_and_a_gone_row_is_none():
    anchor = Anchor("id50", 50, 7)
    moved = ListListing(list(range(-5, 100)), lambda i, n: {"id": f"id{n}"})  # five rows arrived above
    assert locate(moved, anchor, read=False).index == 55
    window = ListListing(Ids(range(100)), lambda i, n: {"id": f"id{n}"}, 40, 60)  # a window (prune lists)
    assert locate(window, anchor).index == 10
    gone = ListListing(Ids(n for n in range(100) if n != 50), lambda i, n: {"id": f"id{n}"})
    assert locate(gone, anchor).index is None


def test_a_paged_listing_is_searched_near_first_and_only_in_memory_on_the_ui_thread():
    ids = [f"id{n}" for n in range(-3, 200)]  # three arrived above
    listing = Pages(ids)
    assert locate(listing, Anchor("id50", 50, 0), read=False).index is None  # nothing read yet
    assert listing.pages_read == 0
    assert locate(listing, Anchor("id50", 50, 0)).index == 53
    assert listing.pages_read <= 2  # the pages around the old place, not the whole list (21 pages)
    assert locate(listing, Anchor("id51", 51, 0), read=False).index == 54
