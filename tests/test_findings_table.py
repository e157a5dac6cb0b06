"""The findings table in flat arrays (`FindingsTable`): the same entries, counts, protection and
holders as the tuples it replaces, stored and read back exactly, grown without being copied."""

from collections import Counter

import numpy as np
import pytest

from cleo_tui.memory.pool_scan import findings_table
from cleo_tui.memory.pool_scan.findings_table import NO_FINDINGS, FindingsTable, TableBuilder

ENTRIES = [NO_FINDINGS, (("src/a.py", "#12"), ()), (("#12",), ("a user correction",)), ((), ("a user correction",)),
           (("src/b.py", "src/a.py", "src/b.py"), ()), (("lone\udcff surrogate",), ())]


def counted(entries, per_entry):
    """What the tuples gave: each identifier once per occurrence per live row of its entry."""
    counts: Counter[str] = Counter()
    for (ids, _), rows in zip(entries, per_entry, strict=True):
        for identifier in ids:
            counts[identifier] += rows
    return counts


def test_entries_read_back_as_the_tuples_they_were():
    table = FindingsTable.of(ENTRIES)
    assert list(table) == ENTRIES and table == ENTRIES and len(table) == 6
    assert table[-1] == ENTRIES[-1] and table[1:3] == ENTRIES[1:3]
    with pytest.raises(IndexError):
        table[6]


def test_counts_protection_and_holders_match_the_tuples():
    table = FindingsTable.of(ENTRIES)
    per_entry = np.array([7, 1, 3, 0, 2, 1])
    totals = table.identifier_counts(per_entry)
    assert {s: n for s, n in zip(table.strings, totals.tolist(), strict=True) if n} == counted(ENTRIES, per_entry)
    weak = np.array([totals[table.where[s]] <= 1 for s in table.strings])
    expected = [bool(reasons) or any(weak[table.where[i]] for i in ids) for ids, reasons in ENTRIES]
    assert table.protecting(weak).tolist() == expected == [False, False, True, True, False, True]
    assert table.holding({"src/a.py", "not there"}) == {1, 4} and table.holding({"a user correction"}) == set()
    flagged = np.array([s in ("src/b.py", "#12") for s in table.strings])
    assert [table.identifiers_where(k, flagged) for k in range(6)] == [[], ["#12"], ["#12"], [], ["src/b.py"] * 2, []]
    assert [table.text_reasons(k) for k in range(6)] == [reasons for _, reasons in ENTRIES]


def test_counts_weigh_entries_held_by_many_rows_over_several_steps(monkeypatch):
    monkeypatch.setattr(findings_table, "_OCCURRENCE_STEP", 3)
    monkeypatch.setattr(findings_table, "_WEIGHTED_STEP", 2)
    monkeypatch.setattr(findings_table, "_ENTRY_STEP", 4)  # (the entries' flags made in two steps)
    table = FindingsTable.of(ENTRIES)
    per_entry = np.array([0, 5, 1, 9, 4, 1])
    totals = table.identifier_counts(per_entry)
    assert dict(zip(table.strings, totals.tolist(), strict=True)) == \
        {"src/a.py": 9, "#12": 6, "a user correction": 0, "src/b.py": 8, "lone\udcff surrogate": 1}


def test_stored_arrays_read_back_the_same_table_and_damage_is_refused():
    table = FindingsTable.of(ENTRIES).appended([(("new.py",), ())])
    arrays = table.arrays("t_")
    back = FindingsTable.from_arrays(arrays, "t_")
    assert list(back) == list(table) and back.strings == table.strings
    assert list(FindingsTable.from_arrays(FindingsTable.empty().arrays())) == [NO_FINDINGS]
    damaged = [{"t_id_positions": arrays["t_id_positions"] + 50}, {"t_id_starts": arrays["t_id_starts"][::-1]},
               {"t_string_ends": arrays["t_string_ends"] + 1}, {"t_reason_starts": arrays["t_reason_starts"][:-1]},
               {"t_strings": np.frombuffer(b"src/a.pysrc/a.py", dtype=np.uint8), "t_string_ends": np.array([8, 16])}]
    for change in damaged:
        with pytest.raises(ValueError):
            FindingsTable.from_arrays({**arrays, **change}, "t_")
    with pytest.raises(KeyError):
        FindingsTable.from_arrays({}, "t_")


def test_a_grown_table_shares_its_first_part_until_the_added_entries_are_many(monkeypatch):
    monkeypatch.setattr(findings_table, "OVERLAY_MAX", 3)
    table = FindingsTable.of(ENTRIES)
    once = table.appended([(("x.py",), ()), (("src/a.py",), ())])
    twice = once.appended([(("y.py",), ("a user correction",))])
    assert once.base is table.base is twice.base  # (not copied)
    assert len(table) == 6 and table.strings == FindingsTable.of(ENTRIES).strings  # (left as it was)
    assert list(twice) == [*ENTRIES, (("x.py",), ()), (("src/a.py",), ()), (("y.py",), ("a user correction",))]
    joined = twice.appended([NO_FINDINGS])
    assert joined.grown is None and list(joined) == [*twice, NO_FINDINGS]
    assert joined.holding({"src/a.py"}) == {1, 4, 7} and twice.holding({"src/a.py"}) == {1, 4, 7}


def test_a_builder_shares_one_entry_among_equal_findings_it_adds():
    builder = TableBuilder(FindingsTable.of(ENTRIES))
    assert builder.add(NO_FINDINGS) == 0
    assert builder.add((("z.py",), ())) == builder.add((("z.py",), ())) == 6
    assert builder.add(ENTRIES[1]) == 7  # (the given table is not indexed: an entry of its own)
    assert list(builder.built()) == [*ENTRIES, (("z.py",), ()), ENTRIES[1]]
    assert TableBuilder(FindingsTable.empty()).built() == [NO_FINDINGS]


def test_a_builder_shares_entries_after_it_forgets_the_findings_it_held(monkeypatch):
    # Issue 33: the last findings added are held by value (no entry decoded to compare), a bounded
    # number of them; past the bound they are looked up by hash again, with the same entries.
    from cleo_tui.memory.pool_scan import findings_table
    monkeypatch.setattr(findings_table, "RECENT", 2)
    builder = TableBuilder(FindingsTable.empty())
    added = [((f"f{n}.py",), ()) for n in range(5)]
    first = [builder.add(f) for f in added]
    assert first == [1, 2, 3, 4, 5] and len(builder.recent) <= 2
    assert [builder.add(f) for f in added] == first and builder.add(NO_FINDINGS) == 0
    assert list(builder.built()) == [NO_FINDINGS, *added]


def _brain_with_findings(tmp_path):
    from tests.pruner_fixtures import add_observation, new_brain
    brain = new_brain(tmp_path)
    for n, text in enumerate(["about src/a.py and src/c.py", "about src/a.py", "nothing to find", "about src/b.py"]):
        add_observation(brain, f"O-{n}", text, created_at=f"2026-01-0{n + 1} 10:00:00")
    return brain


def _rewritten(path, **changes):
    with np.load(path) as data:
        arrays = {name: data[name] for name in data.files}
    np.savez(path, **{**arrays, **changes})


def test_a_findings_file_whose_table_does_not_add_up_is_read_as_empty(tmp_path):
    from cleo_tui.memory.pool_scan import scan_brain
    from cleo_tui.memory.pool_scan.findings_cache import FindingsCacheFile
    from cleo_tui.memory.tags import TagTable

    brain = _brain_with_findings(tmp_path)
    truth = TagTable(scan_brain(brain))
    stored = FindingsCacheFile(brain)
    assert len(stored.table) == 4 and stored.table[int(stored.lookup(stored.rowids[:1], stored.keys[:1])[0])] == \
        (("src/a.py", "src/c.py"), ())
    _rewritten(stored.path, table_id_positions=np.array([7, 7, 7], dtype=np.uint16))
    assert list(FindingsCacheFile(brain).table) == [NO_FINDINGS] and not len(FindingsCacheFile(brain).rowids)
    again = TagTable(scan_brain(brain))
    assert {k: again[k] for k in again} == {k: truth[k] for k in truth}


def test_a_snapshot_keeps_the_table_and_one_that_does_not_add_up_is_not_read(tmp_path):
    from cleo_tui.memory import scan_snapshot
    from cleo_tui.memory.pool_scan import scan_brain

    brain = _brain_with_findings(tmp_path)
    scan = scan_brain(brain, row_keys=True)
    assert scan_snapshot.save_snapshot(brain, scan)
    loaded = scan_snapshot.load_snapshot(brain)
    assert loaded is not None and list(loaded.table) == list(scan.table) and loaded.table.strings == scan.table.strings
    assert loaded.counts == scan.counts and loaded.protected.tolist() == scan.protected.tolist() == \
        [True, False, False, True]
    _rewritten(scan_snapshot.snapshot_path(brain), table_string_ends=np.array([1, 2], dtype=np.int64))
    assert scan_snapshot.load_snapshot(brain) is None
