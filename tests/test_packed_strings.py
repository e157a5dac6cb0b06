"""Packed string columns answer as the lists they replace; a fold grows a scan without copying
its Python objects (ids, dates, findings table) and leaves the old scan as it was."""

from __future__ import annotations

import numpy as np

from cleo_tui.memory import packed_strings as packed
from cleo_tui.memory.packed_strings import PackedStrings
from cleo_tui.memory.pool_scan import scan_brain, scan_rows_since
from cleo_tui.memory.tags import TagTable
from tests.pruner_fixtures import add_observation, new_brain


def test_a_packed_column_reads_as_its_list():
    values = ["O-a", "", "O-bb", "2026-01-01 10:00:00", "O-a"]
    column = packed.pack(values)
    assert isinstance(column, PackedStrings) and column.width == 19
    assert list(column) == values and column == values and len(column) == 5
    assert [column[i] for i in range(5)] == values and column[1:3] == values[1:3] and column[-1] == "O-a"
    assert column.take([4, 0, 2]) == ["O-a", "O-a", "O-bb"] and packed.take(values, [2]) == ["O-bb"]
    assert "O-bb" in column and "O-b" not in column and "O-é" not in column and None not in column
    assert packed.reordered(column, np.array([2, 0])) == ["O-bb", "O-a"]


def test_columns_that_do_not_fit_stay_lists():
    for values in (["O-é", "O-a"], ["O-a\x00", "O-b"], ["x" * (packed.PACK_WIDTH_MAX + 1)]):
        assert packed.pack(values) is values


def test_a_long_column_packs_in_parts_as_in_one():
    """Packed a part at a time (no C call holds the GIL long): the widest part's width, and a
    value that does not fit in a later part leaves the whole column a list."""
    values = [f"O-{n}" for n in range(packed._C_PART)] + ["O-" + "w" * 30, "O-x"]
    column = packed.pack(values)
    assert isinstance(column, PackedStrings) and column.width == 32 and column == values
    assert column.hashes().tolist() == [hash(v) for v in values]
    late = [*values, "O-é"]
    assert packed.pack(late) is late
    assert isinstance(packed.pack([]), PackedStrings) and len(packed.pack([])) == 0


def test_appending_and_replacing_make_new_columns_and_leave_the_old_one():
    column = packed.pack(["O-a", "O-b"])
    longer = packed.appended(column, ["O-ccccc"])
    assert longer == ["O-a", "O-b", "O-ccccc"] and isinstance(longer, PackedStrings)
    assert packed.appended(column, ["O-é"]) == ["O-a", "O-b", "O-é"]  # (no longer packed: a list)
    changed = packed.replaced(column, {0: "O-zzzzzz"})
    assert changed == ["O-zzzzzz", "O-b"] and packed.replaced(column, {1: "O-ü"}) == ["O-a", "O-ü"]
    assert column == ["O-a", "O-b"]


def test_dates_order_packed_as_unpacked():
    created = ["2026-01-02", "2026-01-01", "2026-01-02", "2026-01-01"]
    rowids = np.array([4, 3, 1, 2], dtype=np.int64)
    assert packed.date_order(packed.pack(created), rowids).tolist() == \
        packed.date_order(list(created), rowids).tolist() == [3, 1, 2, 0]


def test_a_fold_grows_the_scan_without_copying_its_objects(tmp_path):
    """A new row is appended to the packed ids and dates and to a grown findings table (the old
    entries are not copied, nor indexed: a new row with an old row's findings gets its own
    entry); its tags are those of a fresh scan, and the old scan is unchanged."""
    brain = new_brain(tmp_path)
    for n in range(4):
        add_observation(brain, f"O-{n}", f"row {n} about src/app_{n}.py", created_at=f"2026-01-0{n + 1} 10:00:00")
    scan = scan_brain(brain)
    assert isinstance(scan.ids, PackedStrings) and isinstance(scan.created, PackedStrings)
    add_observation(brain, "O-new", "again about src/app_1.py", created_at="2026-02-01 10:00:00")
    add_observation(brain, "O-newer", "about src/app_2.py", created_at="2026-02-02 10:00:00")
    grown = scan.updated(scan_rows_since(brain, scan.high_water, base=scan))
    assert grown.table.base is scan.table.base and len(scan.table) == 5 and len(grown.table) == 7
    assert list(scan.ids) == ["O-0", "O-1", "O-2", "O-3"]
    assert list(grown.ids) == ["O-0", "O-1", "O-2", "O-3", "O-new", "O-newer"]
    fresh, folded = TagTable(scan_brain(brain)), TagTable(grown)
    assert {k: folded[k] for k in folded} == {k: fresh[k] for k in fresh}
    assert folded["O-1"].protected is False and folded["O-0"].protected is True


def test_folds_find_the_rows_whose_identifier_stopped_being_unique(tmp_path):
    """A new row naming an old row's unique file unprotects it: the entries holding it are
    found in the table's arrays, which both folds share with the first scan (not copied)."""
    brain = new_brain(tmp_path)
    for n in range(4):
        add_observation(brain, f"O-{n}", f"row {n} about src/app_{n}.py", created_at=f"2026-01-0{n + 1} 10:00:00")
    scan = scan_brain(brain)
    add_observation(brain, "O-new", "again about src/app_1.py", created_at="2026-02-01 10:00:00")
    once = scan.updated(scan_rows_since(brain, scan.high_water, base=scan))
    add_observation(brain, "O-newer", "now src/app_2.py and src/app_new.py", created_at="2026-02-02 10:00:00")
    twice = once.updated(scan_rows_since(brain, once.high_water, base=once))
    assert twice.table.base is once.table.base is scan.table.base
    fresh, folded = TagTable(scan_brain(brain)), TagTable(twice)
    assert {k: folded[k] for k in folded} == {k: fresh[k] for k in fresh}
    assert [k for k in folded if folded[k].protected] == ["O-0", "O-3", "O-newer"]


def test_a_packed_column_hashes_as_its_strings():
    values = [f"O-{n}" for n in range(70_000)]
    assert packed.pack(values).hashes().tolist() == [hash(v) for v in values]  # type: ignore[attr-defined]
